// `facet explain`: what a client with given dynamic parameters would see for
// one xDS target, from manifests or from a running server's admin port.
#ifndef FACET_CONTROLLER_CLI_EXPLAIN_COMMAND_H_
#define FACET_CONTROLLER_CLI_EXPLAIN_COMMAND_H_

#include <ostream>
#include <string>
#include <vector>

namespace facet::controller {

// Exit codes of `facet explain`.
inline constexpr int kExplainComplete = 0;  // The graph resolves down to endpoints.
inline constexpr int kExplainBroken = 1;    // It breaks somewhere (the output says where).
// Bad usage, manifests that cannot be read, or a server that cannot answer.
inline constexpr int kExplainUsage = 2;

// Runs `facet explain` with `args` (after the subcommand). The explanation
// goes to `out`; usage errors and problems reading the input to `err`.
int RunExplain(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace facet::controller

#endif  // FACET_CONTROLLER_CLI_EXPLAIN_COMMAND_H_
