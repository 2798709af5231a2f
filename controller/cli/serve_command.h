// `facet serve`: serves a directory of manifests over ADS.
#ifndef FACET_CONTROLLER_CLI_SERVE_COMMAND_H_
#define FACET_CONTROLLER_CLI_SERVE_COMMAND_H_

#include <ostream>
#include <string>
#include <vector>

namespace facet::controller {

// Runs until SIGTERM or SIGINT, then drains streams and returns 0. Returns 2
// on bad flags and 1 when it cannot start (address in use, unreadable DIR).
int RunServe(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace facet::controller

#endif  // FACET_CONTROLLER_CLI_SERVE_COMMAND_H_
