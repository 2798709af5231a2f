// `facet controller`: serves XdsResource/XdsAuthority objects from the
// Kubernetes API over ADS, writing status while it leads.
#ifndef FACET_CONTROLLER_CLI_CONTROLLER_COMMAND_H_
#define FACET_CONTROLLER_CLI_CONTROLLER_COMMAND_H_

#include <ostream>
#include <string>
#include <vector>

namespace facet::controller {

// Runs until SIGTERM or SIGINT, then releases the lease, drains streams and
// returns 0. Returns 2 on bad flags and 1 when it cannot start.
int RunController(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace facet::controller

#endif  // FACET_CONTROLLER_CLI_CONTROLLER_COMMAND_H_
