#include "xds_server/relay/relay.h"

#include <map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "spdlog/spdlog.h"
#include "xds_server/common/log_text.h"

namespace facet::xds {

// Forwards one upstream client's events to the relay, tagged with its index.
// It names servers from its own copy of the list: the relay's upstream
// clients may be going away while another one's events arrive.
class Relay::Listener final : public UpstreamClient::Listener {
 public:
  Listener(Relay& relay, int index, std::vector<UpstreamServer> servers)
      : relay_(relay), index_(index), servers_(std::move(servers)) {}

  absl::Status OnUpdate(const UpstreamUpdate& update) override {
    return relay_.OnUpdate(index_, update);
  }
  void OnConnected(int server_index) override {
    spdlog::info("relay: upstream {} connected to {}", index_, servers_[server_index].server_uri);
  }
  void OnDisconnected(int server_index, const absl::Status& status) override {
    spdlog::warn("relay: upstream {} lost {}: {}; serving from the cache", index_,
                 servers_[server_index].server_uri,
                 SafeForLog(status.message(), kMaxLoggedStatusBytes));
  }

 private:
  Relay& relay_;
  const int index_;
  const std::vector<UpstreamServer> servers_;
};

namespace {

std::string ListKey(const std::vector<UpstreamServer>& servers) {
  std::vector<std::string> parts;
  for (const UpstreamServer& server : servers) {
    parts.push_back(absl::StrCat(server.server_uri, "|", server.channel_creds, "|",
                                 absl::StrJoin(server.server_features, ",")));
  }
  return absl::StrJoin(parts, "\n");
}

}  // namespace

Relay::Relay(SnapshotStore& store, Options options)
    : store_(store), options_(std::move(options)), cache_(RelayCache::Options{}) {
  // One upstream client per distinct server list: authorities served by the
  // same servers share one ADS stream.
  std::map<std::string, int> index_of;
  std::vector<std::vector<UpstreamServer>> lists;
  auto index_for = [&](const std::vector<UpstreamServer>& servers) {
    auto [it, inserted] = index_of.try_emplace(ListKey(servers), static_cast<int>(lists.size()));
    if (inserted) lists.push_back(servers);
    return it->second;
  };
  index_for(options_.config.xds_servers);
  auto by_list = std::make_shared<std::map<const std::vector<UpstreamServer>*, int>>();
  (*by_list)[&options_.config.xds_servers] = 0;
  for (const auto& [authority, servers] : options_.config.authorities) {
    (*by_list)[&servers] = index_for(servers);
  }
  RelayCache::Options cache_options;
  cache_options.linger = options_.linger;
  const RelayConfig* config = &options_.config;
  cache_options.route = [config, by_list](const std::string& name) {
    absl::StatusOr<const std::vector<UpstreamServer>*> servers = ServersFor(*config, name);
    if (!servers.ok()) return -1;
    auto it = by_list->find(*servers);
    return it == by_list->end() ? -1 : it->second;
  };
  {
    absl::MutexLock lock(&mu_);
    cache_ = RelayCache(std::move(cache_options));
  }
  UpstreamClient::Options upstream = options_.upstream;
  upstream.node = options_.config.node;
  for (size_t i = 0; i < lists.size(); ++i) {
    listeners_.push_back(std::make_unique<Listener>(*this, static_cast<int>(i), lists[i]));
    upstreams_.push_back(std::make_unique<UpstreamClient>(lists[i], upstream, *listeners_.back()));
  }
}

Relay::~Relay() { Stop(); }

void Relay::Start() {
  absl::MutexLock lock(&mu_);
  store_.Publish(cache_.current());
  worker_ = std::thread([this] { WorkUntilStopped(); });
}

void Relay::Stop() {
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) return;
    stopping_ = true;
  }
  if (worker_.joinable()) worker_.join();
  // Upstream clients end their streams (waiting for their callbacks) before
  // the listeners go. A callback of a client not yet destroyed finds
  // stopping_ and leaves upstreams_ alone.
  upstreams_.clear();
  listeners_.clear();
}

void Relay::Effect(std::vector<Fetch> fetches, std::shared_ptr<const Snapshot> snapshot,
                   absl::Time changed_at) {
  // Publishing wakes every stream that watches a changed name: done on the
  // relay's own thread, never on the gRPC callback thread that delivered the
  // upstream response (the streams' writes complete on those threads).
  if (snapshot != nullptr) to_publish_.push_back({std::move(snapshot), changed_at});
  for (const Fetch& fetch : fetches) {
    if (fetch.upstream < 0 || fetch.upstream >= static_cast<int>(upstreams_.size())) continue;
    UpstreamClient& client = *upstreams_[fetch.upstream];
    if (fetch.subscribe) {
      client.Subscribe(fetch.subscription);
    } else {
      client.Unsubscribe(fetch.subscription);
    }
  }
}

void Relay::OnDemand(const std::vector<DemandChange>& changes) {
  absl::MutexLock lock(&mu_);
  if (stopping_) return;
  std::shared_ptr<const Snapshot> snapshot;
  const absl::Time now = absl::Now();
  std::vector<Fetch> fetches = cache_.OnDemand(changes, now, &snapshot);
  Effect(std::move(fetches), std::move(snapshot), now);
}

absl::Status Relay::OnUpdate(int upstream, const UpstreamUpdate& update) {
  absl::MutexLock lock(&mu_);
  if (stopping_) return absl::OkStatus();  // Its stream is closing; nothing is applied.
  std::shared_ptr<const Snapshot> snapshot;
  std::vector<Fetch> fetches;
  const absl::Time now = absl::Now();
  absl::Status status = cache_.Apply(upstream, update, now, &fetches, &snapshot);
  if (!status.ok()) {
    spdlog::warn("relay: rejected a response from upstream {}: {}", upstream,
                 SafeForLog(status.message(), kMaxLoggedStatusBytes));
    return status;
  }
  Effect(std::move(fetches), std::move(snapshot), now);
  return absl::OkStatus();
}

void Relay::WorkUntilStopped() {
  mu_.Lock();
  while (!stopping_) {
    const absl::Time now = absl::Now();
    std::shared_ptr<const Snapshot> snapshot;
    std::vector<Fetch> fetches = cache_.Expire(now, &snapshot);
    Effect(std::move(fetches), std::move(snapshot), now);
    // Snapshots in the order the cache made them, outside the lock (only
    // this thread publishes), until Stop().
    while (!to_publish_.empty() && !stopping_) {
      ToPublish next = std::move(to_publish_.front());
      to_publish_.pop_front();
      mu_.Unlock();
      store_.Publish(std::move(next.snapshot));
      if (options_.on_published) options_.on_published(absl::Now() - next.changed_at);
      mu_.Lock();
    }
    // Wake for the next snapshot, the next expiry (at most a second away, so
    // a new idle subscription is noticed) or stopping.
    absl::Time wake = now + absl::Seconds(1);
    if (auto next = cache_.NextExpiry(); next.has_value() && *next < wake) wake = *next;
    mu_.AwaitWithDeadline(absl::Condition(
                              +[](Relay* relay) ABSL_EXCLUSIVE_LOCKS_REQUIRED(relay->mu_) {
                                return relay->stopping_ || !relay->to_publish_.empty();
                              },
                              this),
                          wake);
  }
  mu_.Unlock();
}

RelayStats Relay::stats() const {
  RelayStats out;
  {
    absl::MutexLock lock(&mu_);
    out.cache = cache_.stats();
  }
  for (const auto& upstream : upstreams_) {
    const UpstreamClientStats stats = upstream->stats();
    out.upstream_streams += stats.connected ? 1 : 0;
    out.upstream_reconnects += stats.reconnects;
    out.upstream_failovers += stats.failovers;
    out.upstream_nacks_sent += stats.nacks_sent;
    out.upstream_requests_sent += stats.requests_sent;
    out.upstreams.emplace_back(upstream->servers().front().server_uri, stats.connected);
  }
  return out;
}

std::vector<RelayResourceStats> Relay::ResourceStats(size_t max, size_t* total) const {
  absl::MutexLock lock(&mu_);
  return cache_.ResourceStats(max, total);
}

}  // namespace facet::xds
