#include "controller/kubernetes/leader_election/leader_elector.h"

#include <utility>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "controller/kubernetes/client/yaml_fields.h"
#include "spdlog/spdlog.h"
#include "xds_server/json/yaml_json.h"

namespace facet::controller {

using kube::KubeClient;
using kube::StringAt;
namespace {

constexpr char kLeaseApi[] = "/apis/coordination.k8s.io/v1";

void SetString(YAML::Node node, const char* key, const std::string& value) {
  node[key] = value;
  node[key].SetTag("!");  // A string in JSON, whatever it looks like.
}

absl::StatusOr<std::string> ToJson(const YAML::Node& node) {
  return json::YamlToJson(node, "lease");
}

}  // namespace

std::string FormatMicroTime(absl::Time time) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%E6SZ", time, absl::UTCTimeZone());
}

absl::StatusOr<std::unique_ptr<LeaderElector>> LeaderElector::Create(KubeClient& client,
                                                                      Clock& clock, Options options,
                                                                      Callback callback) {
  if (options.lease_namespace.empty() || options.lease_name.empty() || options.identity.empty()) {
    return absl::InvalidArgumentError(
        "leader election needs a lease namespace, a lease name and an identity");
  }
  if (!(options.lease_duration > options.renew_deadline &&
        options.renew_deadline > options.retry_period * 1.2)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "leader election timings must satisfy lease duration (",
        absl::FormatDuration(options.lease_duration), ") > renew deadline (",
        absl::FormatDuration(options.renew_deadline), ") > 1.2 x retry period (",
        absl::FormatDuration(options.retry_period), ")"));
  }
  return std::unique_ptr<LeaderElector>(
      new LeaderElector(client, clock, std::move(options), std::move(callback)));
}

LeaderElector::LeaderElector(KubeClient& client, Clock& clock, Options options, Callback callback)
    : client_(client), clock_(clock), options_(std::move(options)), callback_(std::move(callback)) {}

LeaderElector::~LeaderElector() { Stop(); }

std::string LeaderElector::LeaseCollection() const {
  return absl::StrCat(kLeaseApi, "/namespaces/", options_.lease_namespace, "/leases");
}

bool LeaderElector::is_leader() const {
  if (!leading_) return false;
  const int64_t renewed = last_renew_nanos_;
  return clock_.Now() - absl::FromUnixNanos(renewed) < options_.renew_deadline;
}

std::string LeaderElector::LeasePath() const {
  return absl::StrCat(LeaseCollection(), "/", options_.lease_name);
}

void LeaderElector::Start() {
  thread_ = std::thread([this] {
    while (!stop_.HasBeenNotified()) {
      Tick();
      if (!clock_.SleepFor(options_.retry_period, stop_)) break;
    }
  });
}

void LeaderElector::Stop() {
  if (!stop_.HasBeenNotified()) stop_.Notify();
  if (thread_.joinable()) thread_.join();
  if (leading_) {
    Release();
    SetLeading(false);
  }
}

void LeaderElector::SetLeading(bool leading) {
  if (leading_.exchange(leading) == leading) return;
  spdlog::info("leader election: {} {} lease {}/{}", options_.identity,
               leading ? "acquired" : "lost", options_.lease_namespace, options_.lease_name);
  if (callback_) callback_(leading);
}

bool LeaderElector::TryCreate(absl::Time now) {
  YAML::Node lease(YAML::NodeType::Map);
  SetString(lease, "apiVersion", "coordination.k8s.io/v1");
  SetString(lease, "kind", "Lease");
  SetString(lease["metadata"], "name", options_.lease_name);
  SetString(lease["metadata"], "namespace", options_.lease_namespace);
  YAML::Node spec = lease["spec"];
  SetString(spec, "holderIdentity", options_.identity);
  spec["leaseDurationSeconds"] = absl::ToInt64Seconds(options_.lease_duration);
  SetString(spec, "acquireTime", FormatMicroTime(options_.wall_now()));
  SetString(spec, "renewTime", FormatMicroTime(options_.wall_now()));
  spec["leaseTransitions"] = 0;
  absl::StatusOr<std::string> json = ToJson(lease);
  if (!json.ok()) return false;
  absl::StatusOr<YAML::Node> created = client_.Create(LeaseCollection(), *json);
  if (!created.ok()) {
    // AlreadyExists: another replica created it first; it leads.
    if (created.status().code() != absl::StatusCode::kAlreadyExists) {
      spdlog::warn("leader election: creating lease: {}", std::string(created.status().message()));
    }
    return false;
  }
  last_renew_ = now;
  last_renew_nanos_ = absl::ToUnixNanos(now);
  return true;
}

bool LeaderElector::Tick() {
  const absl::Time now = clock_.Now();
  absl::StatusOr<YAML::Node> lease = client_.Get(LeasePath());
  if (!lease.ok()) {
    if (lease.status().code() == absl::StatusCode::kNotFound) {
      SetLeading(TryCreate(now));
      return leading_;
    }
    spdlog::warn("leader election: reading lease: {}", std::string(lease.status().message()));
    if (leading_ && now - last_renew_ >= options_.renew_deadline) SetLeading(false);
    return leading_;
  }
  YAML::Node object = YAML::Clone(*lease);
  const std::string holder = StringAt(object, {"spec", "holderIdentity"});
  const std::string record =
      absl::StrCat(holder, "|", StringAt(object, {"spec", "renewTime"}), "|",
                   StringAt(object, {"spec", "leaseTransitions"}));
  if (record != observed_record_) {
    // Judge expiry by our own clock since the record last changed, never by
    // the renewTime another replica wrote.
    observed_record_ = record;
    observed_time_ = now;
  }
  int64_t duration_seconds = absl::ToInt64Seconds(options_.lease_duration);
  (void)absl::SimpleAtoi(StringAt(object, {"spec", "leaseDurationSeconds"}), &duration_seconds);

  const bool ours = holder == options_.identity;
  if (!ours && !holder.empty() && now < observed_time_ + absl::Seconds(duration_seconds)) {
    SetLeading(false);  // Someone else holds a live lease.
    return false;
  }
  YAML::Node spec = object["spec"];
  if (!ours) {
    int64_t transitions = 0;
    (void)absl::SimpleAtoi(StringAt(object, {"spec", "leaseTransitions"}), &transitions);
    SetString(spec, "holderIdentity", options_.identity);
    SetString(spec, "acquireTime", FormatMicroTime(options_.wall_now()));
    spec["leaseTransitions"] = transitions + 1;
  }
  spec["leaseDurationSeconds"] = absl::ToInt64Seconds(options_.lease_duration);
  SetString(spec, "renewTime", FormatMicroTime(options_.wall_now()));
  absl::StatusOr<std::string> json = ToJson(object);
  absl::StatusOr<YAML::Node> updated =
      json.ok() ? client_.Update(LeasePath(), *json) : absl::StatusOr<YAML::Node>(json.status());
  if (updated.ok()) {
    last_renew_ = now;
    last_renew_nanos_ = absl::ToUnixNanos(now);
    observed_record_.clear();
    SetLeading(true);
    return true;
  }
  // A conflict means another replica wrote first (renewed or took over).
  if (updated.status().code() != absl::StatusCode::kAborted) {
    spdlog::warn("leader election: updating lease: {}", std::string(updated.status().message()));
  }
  if (!ours || now - last_renew_ >= options_.renew_deadline) SetLeading(false);
  return leading_;
}

void LeaderElector::Release() {
  absl::StatusOr<YAML::Node> lease = client_.Get(LeasePath());
  if (!lease.ok() || StringAt(*lease, {"spec", "holderIdentity"}) != options_.identity) return;
  YAML::Node object = YAML::Clone(*lease);
  SetString(object["spec"], "holderIdentity", "");
  object["spec"]["leaseDurationSeconds"] = 1;
  SetString(object["spec"], "renewTime", FormatMicroTime(options_.wall_now()));
  absl::StatusOr<std::string> json = ToJson(object);
  if (json.ok()) (void)client_.Update(LeasePath(), *json);
}

}  // namespace facet::controller
