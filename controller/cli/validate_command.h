// `facet validate PATH...`: lints manifests offline with every check the
// server applies.
#ifndef FACET_CONTROLLER_CLI_VALIDATE_COMMAND_H_
#define FACET_CONTROLLER_CLI_VALIDATE_COMMAND_H_

#include <ostream>
#include <string>
#include <vector>

namespace facet::controller {

// Exit codes of `facet validate`.
inline constexpr int kValidateOk = 0;        // Everything valid (warnings allowed).
inline constexpr int kValidateRejected = 1;  // Something would be rejected.
inline constexpr int kValidateUnreadable = 2;  // Bad usage, or input that cannot be read.

// Runs `facet validate` with `args` (after the subcommand). Problems go to
// `out`, one per line; the summary and usage errors to `err`.
int RunValidate(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace facet::controller

#endif  // FACET_CONTROLLER_CLI_VALIDATE_COMMAND_H_
