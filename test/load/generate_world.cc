// generate_world: writes the load benchmark's synthetic world (test/load/world.h)
// into a directory: one manifest file per service, six XdsResource objects each.
//
//   generate_world --services 2000 DIR    # 12,000 objects
#include <iostream>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "test/load/world.h"

ABSL_FLAG(int, services, 2000, "number of services (six objects each)");

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage("generate_world [--services N] DIR");
  std::vector<char*> args = absl::ParseCommandLine(argc, argv);
  const int services = absl::GetFlag(FLAGS_services);
  if (args.size() != 2 || services < 1) {
    std::cerr << "usage: generate_world [--services N] DIR\n";
    return 2;
  }
  if (absl::Status status = facet::load::WriteWorld(args[1], services); !status.ok()) {
    std::cerr << "generate_world: " << status.message() << "\n";
    return 1;
  }
  std::cout << "wrote " << services << " services (" << services * 6 << " objects) to " << args[1]
            << "\n";
  return 0;
}
