// e2e_backend: a gRPC server on 127.0.0.1 that answers every unary method
// with its --id as the response bytes, and serves the standard health service
// (SERVING). Writes its port to --port-file (atomically) once it listens, and
// exits 0 on SIGTERM or SIGINT.
//
//   e2e_backend --id prod --port-file /tmp/x/prod.port [--port 0]
#include <signal.h>

#include <cstdio>
#include <iostream>
#include <memory>
#include <string>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "grpcpp/generic/async_generic_service.h"
#include "grpcpp/grpcpp.h"
#include "grpcpp/health_check_service_interface.h"
#include "test/e2e/dashed_flags.h"
#include "test/e2e/process.h"

ABSL_FLAG(std::string, id, "", "The backend id, returned as the payload of every call.");
ABSL_FLAG(std::string, port_file, "", "Where to write the port once listening.");
ABSL_FLAG(int, port, 0, "The port to listen on; 0 picks a free one.");

namespace facet::e2e {
namespace {

// Answers one call: reads the request, if any, and replies with the id.
class WhoamiReactor : public grpc::ServerGenericBidiReactor {
 public:
  explicit WhoamiReactor(const std::string& id) {
    grpc::Slice slice(id);
    response_ = grpc::ByteBuffer(&slice, 1);
    StartRead(&request_);
  }

  void OnReadDone(bool /*ok*/) override {
    // Unary: one request (or a half-close) is all there is.
    StartWriteAndFinish(&response_, grpc::WriteOptions(), grpc::Status::OK);
  }

  void OnDone() override { delete this; }

 private:
  grpc::ByteBuffer request_;
  grpc::ByteBuffer response_;
};

class WhoamiService : public grpc::CallbackGenericService {
 public:
  explicit WhoamiService(std::string id) : id_(std::move(id)) {}

  grpc::ServerGenericBidiReactor* CreateReactor(
      grpc::GenericCallbackServerContext* /*context*/) override {
    return new WhoamiReactor(id_);
  }

 private:
  const std::string id_;
};

int Run() {
  const std::string id = absl::GetFlag(FLAGS_id);
  const std::string port_file = absl::GetFlag(FLAGS_port_file);
  if (id.empty()) {
    std::cerr << "e2e_backend: --id is required\n";
    return 2;
  }
  // Block the stop signals in every thread (gRPC's included) and take them
  // synchronously below.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  grpc::EnableDefaultHealthCheckService(true);
  WhoamiService service(id);
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(absl::StrCat("127.0.0.1:", absl::GetFlag(FLAGS_port)),
                           grpc::InsecureServerCredentials(), &port);
  builder.RegisterCallbackGenericService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || port == 0) {
    std::cerr << "e2e_backend " << id << ": could not listen\n";
    return 1;
  }
  std::cerr << "e2e_backend " << id << ": listening on 127.0.0.1:" << port << "\n";
  if (!port_file.empty()) {
    absl::Status written = WriteFileAtomically(port_file, absl::StrCat(port, "\n"));
    if (!written.ok()) {
      std::cerr << "e2e_backend " << id << ": " << written << "\n";
      return 1;
    }
  }
  int signo = 0;
  sigwait(&stop_signals, &signo);
  std::cerr << "e2e_backend " << id << ": stopping on signal " << signo << "\n";
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
  return 0;
}

}  // namespace
}  // namespace facet::e2e

int main(int argc, char** argv) {
  facet::e2e::ParseDashedCommandLine(argc, argv);
  return facet::e2e::Run();
}
