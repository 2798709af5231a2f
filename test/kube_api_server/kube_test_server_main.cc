// Runs KubeTestServer until SIGINT or SIGTERM, for kubectl-driven tests:
//   kube_test_server [--port N] [--port-file FILE] [--token T] [--kubeconfig FILE] [--tls]
//                    [--service-map FILE] [--omit-resources NAME,...]
// Prints nothing; --port-file receives the bound port once the server listens
// (written atomically), --kubeconfig a kubeconfig for it. --service-map maps
// the Services of webhook clientConfigs to addresses (lines
// "NAMESPACE/NAME:PORT HOST:PORT", read at every webhook call).
// --omit-resources leaves custom resources out, as on a cluster without their
// CRDs: "<plural>.<group>" or a whole group (gateway.networking.k8s.io).
#include <csignal>
#include <cstdio>
#include <fstream>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "test/kube_api_server/kube_test_server.h"

namespace {

bool WriteFileAtomically(const std::string& path, const std::string& contents) {
  const std::string temporary = path + ".tmp";
  {
    std::ofstream out(temporary, std::ios::trunc);
    out << contents;
    if (!out.good()) return false;
  }
  return std::rename(temporary.c_str(), path.c_str()) == 0;
}

}  // namespace

int main(int argc, char** argv) {
  facet::testing::KubeTestServer::Options options;
  std::string port_file;
  std::string kubeconfig_file;
  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i];
    if (flag == "--tls") {
      options.tls = true;
      continue;
    }
    std::string value;
    size_t eq = flag.find('=');
    if (eq != std::string::npos) {
      value = flag.substr(eq + 1);
      flag = flag.substr(0, eq);
    } else if (i + 1 < argc) {
      value = argv[++i];
    } else {
      std::fprintf(stderr, "kube_test_server: %s needs a value\n", flag.c_str());
      return 2;
    }
    if (flag == "--port") {
      if (!absl::SimpleAtoi(value, &options.port)) {
        std::fprintf(stderr, "kube_test_server: bad --port %s\n", value.c_str());
        return 2;
      }
    } else if (flag == "--port-file") {
      port_file = value;
    } else if (flag == "--token") {
      options.bearer_token = value;
    } else if (flag == "--kubeconfig") {
      kubeconfig_file = value;
    } else if (flag == "--service-map") {
      options.service_map_file = value;
    } else if (flag == "--omit-resources") {
      options.omitted_resources = absl::StrSplit(value, ',', absl::SkipEmpty());
    } else {
      std::fprintf(stderr,
                   "usage: kube_test_server [--port N] [--port-file FILE] [--token T] "
                   "[--kubeconfig FILE] [--tls] [--service-map FILE] "
                   "[--omit-resources NAME,...]\n");
      return 2;
    }
  }
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  // Block before any thread starts so only sigwait below receives them.
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  auto server = facet::testing::KubeTestServer::Start(options);
  if (!server.ok()) {
    std::fprintf(stderr, "kube_test_server: %s\n", server.status().ToString().c_str());
    return 1;
  }
  if (!kubeconfig_file.empty() &&
      !WriteFileAtomically(kubeconfig_file, facet::testing::KubeconfigFor(**server))) {
    std::fprintf(stderr, "kube_test_server: cannot write %s\n", kubeconfig_file.c_str());
    return 1;
  }
  if (!port_file.empty() && !WriteFileAtomically(port_file, std::to_string((*server)->port()))) {
    std::fprintf(stderr, "kube_test_server: cannot write %s\n", port_file.c_str());
    return 1;
  }
  int signal_number = 0;
  sigwait(&signals, &signal_number);
  return 0;
}
