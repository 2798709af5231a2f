#include "controller/cli/serving_common.h"

#include <pthread.h>

#include <cstdio>
#include <fstream>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "controller/admin/admin_server.h"
#include "spdlog/spdlog.h"

namespace facet::controller {

sigset_t ShutdownSignals() {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  return signals;
}

void BlockShutdownSignals() {
  const sigset_t signals = ShutdownSignals();
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
}

absl::StatusOr<std::shared_ptr<const xds::ParameterMapping>> ApplyCommonFlags(const Flags& flags) {
  const std::string& level_name = flags.Get("log-level");
  const spdlog::level::level_enum level = spdlog::level::from_str(level_name);
  if (level == spdlog::level::off && level_name != "off") {
    return absl::InvalidArgumentError(
        absl::StrCat("--log-level: unknown level \"", level_name, "\""));
  }
  spdlog::set_level(level);
  absl::StatusOr<xds::ParameterMapping> mapping =
      xds::ParameterMapping::Parse(flags.Get("node-metadata-params"));
  if (!mapping.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--node-metadata-params: ", mapping.status().message()));
  }
  return std::make_shared<const xds::ParameterMapping>(*std::move(mapping));
}

absl::StatusOr<XdsListener> StartXdsListener(const std::string& address, xds::AdsService& ads,
                                             int max_request_bytes) {
  auto host_port = SplitHostPort(address);
  if (!host_port.ok()) return host_port.status();
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(address, grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(&ads);
  builder.SetMaxReceiveMessageSize(max_request_bytes);
  // gRPC sets SO_REUSEPORT by default: a second process could then share the
  // port silently. Fail instead.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  XdsListener listener;
  listener.server = builder.BuildAndStart();
  if (listener.server == nullptr || port == 0) {
    return absl::UnavailableError(absl::StrCat("cannot listen on ", address));
  }
  std::string host = host_port->first;
  if (host == "0.0.0.0" || host == "::") host = "127.0.0.1";
  listener.address = host.find(':') != std::string::npos ? absl::StrCat("[", host, "]:", port)
                                                         : absl::StrCat(host, ":", port);
  return listener;
}

bool WriteReadyFile(const std::string& path, const std::string& xds_address,
                    const std::string& admin_address) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << "{\"xds_address\":\"" << xds_address << "\",\"admin_address\":\"" << admin_address
        << "\"}\n";
    if (!out) return false;
  }
  return std::rename(tmp.c_str(), path.c_str()) == 0;
}

}  // namespace facet::controller
