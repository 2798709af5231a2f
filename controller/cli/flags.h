// A small parser for subcommand flags: --name=value, --name value, and
// --name for booleans. Unknown flags are errors.
#ifndef FACET_CONTROLLER_CLI_FLAGS_H_
#define FACET_CONTROLLER_CLI_FLAGS_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace facet::controller {

// --gateway-client-namespace-param (gateway::TranslateOptions::
// client_namespace_param), shared by facet serve, validate and explain.
inline constexpr char kGatewayClientNamespaceParamFlag[] = "gateway-client-namespace-param";
inline constexpr char kGatewayClientNamespaceParamHelp[] =
    "client parameter (node metadata) holding a client's namespace: a GRPCRoute in another "
    "namespace than its parent Service applies to the clients of its own namespace (empty: "
    "such routes are ConsumerRoutesDisabled)";

class Flags {
 public:
  // Declares a flag with its default and help text.
  void Define(const std::string& name, const std::string& default_value, const std::string& help,
              bool is_bool = false);
  // Parses `args`; positional arguments are collected in order.
  absl::Status Parse(const std::vector<std::string>& args);

  const std::string& Get(const std::string& name) const;
  bool GetBool(const std::string& name) const;
  const std::vector<std::string>& positional() const { return positional_; }
  std::string Help() const;

 private:
  struct Flag {
    std::string value;
    std::string default_value;
    std::string help;
    bool is_bool = false;
  };
  std::map<std::string, Flag> flags_;
  std::vector<std::string> positional_;
};

}  // namespace facet::controller

#endif  // FACET_CONTROLLER_CLI_FLAGS_H_
