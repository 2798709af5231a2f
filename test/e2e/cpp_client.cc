// e2e_cpp_client: a gRPC C++ client for end-to-end tests. Calls the generic
// method /facet.test.Echo/Whoami or the --method list (empty request,
// wait_for_ready) on --target, usually an xds: target resolved with the
// bootstrap named by GRPC_XDS_BOOTSTRAP (set
// GRPC_EXPERIMENTAL_XDS_FEDERATION=true for xds:// targets with an
// authority), and prints which backend answered.
//
//   e2e_cpp_client --target xds:///greeter --count 3
//       prints one backend id per line; failures go to stderr, exit code 1.
//   e2e_cpp_client --target xds:///greeter --duration-ms 8000 --interval-ms 20
//       prints "ok <id>" or "fail <CODE>: <message>" per call, then
//       "summary ok=N fail=M"; exit code 1 if any call failed.
//   e2e_cpp_client --target xds://a.example/greeter,xds://b.example/greeter
//       one channel per target, all in one process (so one xDS client and
//       one ADS stream); each round calls every target in turn.
//   e2e_cpp_client --method /a.B/C,/a.B/D --metadata 'x-a=1,x-b=2;;x-a=3' --count 2 --outcomes
//       each round calls, for every target, for every metadata set (';'
//       separates sets, ',' pairs; here {x-a:1, x-b:2}, none, {x-a:3}),
//       every method; --outcomes prints every call, in that order, as
//       "ok <id>" or "fail <CODE>: <message>" and exits 0 once all calls
//       are made, whatever they returned.
#include <chrono>
#include <cstdio>
#include <iostream>
#include <iterator>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/ascii.h"
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
ABSL_FLAG(std::string, method, "/facet.test.Echo/Whoami",
          "The full method name to call, or several separated by ',' (each round calls each).");
ABSL_FLAG(std::string, metadata, "",
          "Request metadata: sets separated by ';' (each round calls every method once per "
          "set), each set lower-case key=value pairs separated by ','.");
ABSL_FLAG(bool, outcomes, false,
          "Count mode: print every call's outcome as --duration-ms does and exit 0 once all "
          "calls are made.");
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

using Metadata = std::vector<std::pair<std::string, std::string>>;

class WhoamiClient {
 public:
  explicit WhoamiClient(const std::string& target)
      : stub_(grpc::CreateChannel(target, grpc::InsecureChannelCredentials())) {}

  // Calls `method` with `metadata`. On success stores the backend id in `id`;
  // otherwise stores a one-line "CODE: message" in `error`.
  bool Call(const std::string& method, const Metadata& metadata, absl::Duration timeout,
            std::string* id, std::string* error) {
    grpc::ClientContext context;
    context.set_wait_for_ready(true);
    for (const auto& [key, value] : metadata) context.AddMetadata(key, value);
    context.set_deadline(absl::ToChronoTime(absl::Now() + timeout));
    grpc::Slice empty("");
    grpc::ByteBuffer request(&empty, 1);
    grpc::ByteBuffer response;
    grpc::Status status;
    absl::Notification done;
    stub_.UnaryCall(&context, method, grpc::StubOptions(), &request, &response,
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
};

// What every round calls: for each client, for each metadata set, each method.
struct Calls {
  std::vector<std::unique_ptr<WhoamiClient>> clients;
  std::vector<Metadata> metadata_sets;
  std::vector<std::string> methods;
  absl::Duration timeout;

  // Makes one round of calls, passing each outcome to `done(ok, id, error)`.
  template <typename Done>
  void Round(Done done) const {
    for (const auto& client : clients) {
      for (const Metadata& metadata : metadata_sets) {
        for (const std::string& method : methods) {
          std::string id, error;
          const bool ok = client->Call(method, metadata, timeout, &id, &error);
          done(ok, id, error);
        }
      }
    }
  }
};

int RunCount(const Calls& calls, int count, bool outcomes) {
  int failures = 0;
  for (int i = 0; i < count; ++i) {
    calls.Round([&](bool ok, const std::string& id, const std::string& error) {
      if (outcomes) {
        std::cout << (ok ? "ok " + id : "fail " + error) << std::endl;
      } else if (ok) {
        std::cout << id << std::endl;
      } else {
        std::cerr << "call " << i + 1 << " failed: " << error << std::endl;
        ++failures;
      }
    });
  }
  return failures == 0 ? 0 : 1;
}

int RunContinuous(const Calls& calls, absl::Duration duration, absl::Duration interval) {
  const absl::Time end = absl::Now() + duration;
  int ok = 0;
  int failed = 0;
  for (absl::Time next = absl::Now(); next < end; next += interval) {
    absl::SleepFor(next - absl::Now());
    calls.Round([&](bool call_ok, const std::string& id, const std::string& error) {
      ++(call_ok ? ok : failed);
      std::cout << (call_ok ? "ok " + id : "fail " + error) << std::endl;
    });
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
  facet::e2e::Calls calls;
  for (absl::string_view target : absl::StrSplit(absl::GetFlag(FLAGS_target), ',')) {
    calls.clients.push_back(std::make_unique<facet::e2e::WhoamiClient>(std::string(target)));
  }
  calls.methods = absl::StrSplit(absl::GetFlag(FLAGS_method), ',');
  for (absl::string_view set : absl::StrSplit(absl::GetFlag(FLAGS_metadata), ';')) {
    facet::e2e::Metadata& metadata = calls.metadata_sets.emplace_back();
    for (absl::string_view pair : absl::StrSplit(set, ',', absl::SkipEmpty())) {
      std::pair<std::string, std::string> entry = absl::StrSplit(pair, absl::MaxSplits('=', 1));
      if (entry.first.empty() || entry.first != absl::AsciiStrToLower(entry.first)) {
        std::cerr << "e2e_cpp_client: --metadata wants lower-case key=value pairs, got \"" << pair
                  << "\"\n";
        return 2;
      }
      metadata.push_back(std::move(entry));
    }
  }
  calls.timeout = absl::Milliseconds(absl::GetFlag(FLAGS_rpc_timeout_ms));
  if (absl::GetFlag(FLAGS_duration_ms) > 0) {
    return facet::e2e::RunContinuous(calls, absl::Milliseconds(absl::GetFlag(FLAGS_duration_ms)),
                                     absl::Milliseconds(absl::GetFlag(FLAGS_interval_ms)));
  }
  return facet::e2e::RunCount(calls, absl::GetFlag(FLAGS_count), absl::GetFlag(FLAGS_outcomes));
}
