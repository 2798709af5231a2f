// e2e_cpp_client: a gRPC C++ client for end-to-end tests. Calls the generic
// method /facet.test.Echo/Whoami (empty request, wait_for_ready) on --target,
// usually an xds: target resolved with the bootstrap named by
// GRPC_XDS_BOOTSTRAP (set GRPC_EXPERIMENTAL_XDS_FEDERATION=true for xds://
// targets with an authority), and prints which backend answered.
//
//   e2e_cpp_client --target xds:///greeter --count 3
//       prints one backend id per line; failures go to stderr, exit code 1.
//   e2e_cpp_client --target xds:///greeter --duration-ms 8000 --interval-ms 20
//       prints "ok <id>" or "fail <CODE>: <message>" per call, then
//       "summary ok=N fail=M"; exit code 1 if any call failed.
//   e2e_cpp_client --target xds://a.example/greeter,xds://b.example/greeter
//       one channel per target, all in one process (so one xDS client and
//       one ADS stream); each round calls every target in turn.
#include <chrono>
#include <cstdio>
#include <iostream>
#include <iterator>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/grpcpp.h"
#include "test/e2e/dashed_flags.h"

ABSL_FLAG(std::string, target, "xds:///greeter",
          "The channel target, or several separated by ',' (each call round calls each).");
ABSL_FLAG(std::string, method, "/facet.test.Echo/Whoami", "The full method name to call.");
ABSL_FLAG(int, count, 1, "How many calls to make (ignored with --duration-ms).");
ABSL_FLAG(int, duration_ms, 0, "If set, call continuously for this long.");
ABSL_FLAG(int, interval_ms, 20, "With --duration-ms: time between the starts of calls.");
ABSL_FLAG(int, rpc_timeout_ms, 20000, "Deadline of each call.");

namespace facet::e2e {
namespace {

// The canonical names of grpc::StatusCode values 0..16.
constexpr const char* kCodeNames[] = {
    "OK",        "CANCELLED",      "UNKNOWN",           "INVALID_ARGUMENT",   "DEADLINE_EXCEEDED",
    "NOT_FOUND", "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION",
    "ABORTED",   "OUT_OF_RANGE",   "UNIMPLEMENTED",     "INTERNAL",           "UNAVAILABLE",
    "DATA_LOSS", "UNAUTHENTICATED"};

std::string CodeName(grpc::StatusCode code) {
  const int index = static_cast<int>(code);
  if (index >= 0 && index < static_cast<int>(std::size(kCodeNames))) return kCodeNames[index];
  return absl::StrCat("CODE_", index);
}

class WhoamiClient {
 public:
  WhoamiClient(const std::string& target, std::string method)
      : stub_(grpc::CreateChannel(target, grpc::InsecureChannelCredentials())),
        method_(std::move(method)) {}

  // Makes one call. On success stores the backend id in `id`; otherwise
  // returns a one-line "CODE: message".
  bool Call(absl::Duration timeout, std::string* id, std::string* error) {
    grpc::ClientContext context;
    context.set_wait_for_ready(true);
    context.set_deadline(absl::ToChronoTime(absl::Now() + timeout));
    grpc::Slice empty("");
    grpc::ByteBuffer request(&empty, 1);
    grpc::ByteBuffer response;
    grpc::Status status;
    absl::Notification done;
    stub_.UnaryCall(&context, method_, grpc::StubOptions(), &request, &response,
                    [&](grpc::Status s) {
                      status = std::move(s);
                      done.Notify();
                    });
    done.WaitForNotification();
    if (!status.ok()) {
      *error = absl::StrCat(CodeName(status.error_code()), ": ",
                            absl::StrReplaceAll(status.error_message(), {{"\n", " "}}));
      return false;
    }
    std::vector<grpc::Slice> slices;
    id->clear();
    if (response.Dump(&slices).ok()) {
      for (const grpc::Slice& slice : slices) {
        id->append(reinterpret_cast<const char*>(slice.begin()), slice.size());
      }
    }
    return true;
  }

 private:
  grpc::GenericStub stub_;
  const std::string method_;
};

using Clients = std::vector<std::unique_ptr<WhoamiClient>>;

int RunCount(const Clients& clients, int count, absl::Duration timeout) {
  int failures = 0;
  for (int i = 0; i < count; ++i) {
    for (const auto& client : clients) {
      std::string id, error;
      if (client->Call(timeout, &id, &error)) {
        std::cout << id << std::endl;
      } else {
        std::cerr << "call " << i + 1 << " failed: " << error << std::endl;
        ++failures;
      }
    }
  }
  return failures == 0 ? 0 : 1;
}

int RunContinuous(const Clients& clients, absl::Duration duration, absl::Duration interval,
                  absl::Duration timeout) {
  const absl::Time end = absl::Now() + duration;
  int ok = 0;
  int failed = 0;
  for (absl::Time next = absl::Now(); next < end; next += interval) {
    absl::SleepFor(next - absl::Now());
    for (const auto& client : clients) {
      std::string id, error;
      if (client->Call(timeout, &id, &error)) {
        ++ok;
        std::cout << "ok " << id << std::endl;
      } else {
        ++failed;
        std::cout << "fail " << error << std::endl;
      }
    }
    // After a slow call, carry on from now instead of bursting to catch up.
    if (absl::Now() > next + interval) next = absl::Now() - interval;
  }
  std::cout << "summary ok=" << ok << " fail=" << failed << std::endl;
  return failed == 0 ? 0 : 1;
}

}  // namespace
}  // namespace facet::e2e

int main(int argc, char** argv) {
  facet::e2e::ParseDashedCommandLine(argc, argv);
  facet::e2e::Clients clients;
  for (absl::string_view target : absl::StrSplit(absl::GetFlag(FLAGS_target), ',')) {
    clients.push_back(std::make_unique<facet::e2e::WhoamiClient>(std::string(target),
                                                                 absl::GetFlag(FLAGS_method)));
  }
  const absl::Duration timeout = absl::Milliseconds(absl::GetFlag(FLAGS_rpc_timeout_ms));
  if (absl::GetFlag(FLAGS_duration_ms) > 0) {
    return facet::e2e::RunContinuous(clients, absl::Milliseconds(absl::GetFlag(FLAGS_duration_ms)),
                                     absl::Milliseconds(absl::GetFlag(FLAGS_interval_ms)), timeout);
  }
  return facet::e2e::RunCount(clients, absl::GetFlag(FLAGS_count), timeout);
}
