// Lets the e2e binaries take --dashed-flag spellings (--port-file) for absl
// flags, whose names cannot contain '-' (port_file).
#ifndef FACET_TEST_E2E_DASHED_FLAGS_H_
#define FACET_TEST_E2E_DASHED_FLAGS_H_

#include <string>
#include <vector>

#include "absl/flags/parse.h"

namespace facet::e2e {

// Rewrites '-' to '_' in the name part of every "--name[=value]" argument,
// then parses the command line with absl::ParseCommandLine (which exits on
// unknown flags).
inline void ParseDashedCommandLine(int argc, char** argv) {
  std::vector<std::string> args(argv, argv + argc);
  std::vector<char*> pointers;
  for (std::string& arg : args) {
    if (arg.size() > 2 && arg.compare(0, 2, "--") == 0) {
      for (size_t i = 2; i < arg.size() && arg[i] != '='; ++i) {
        if (arg[i] == '-') arg[i] = '_';
      }
    }
    pointers.push_back(arg.data());
  }
  pointers.push_back(nullptr);
  absl::ParseCommandLine(argc, pointers.data());
}

}  // namespace facet::e2e

#endif  // FACET_TEST_E2E_DASHED_FLAGS_H_
