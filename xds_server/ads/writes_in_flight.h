// The writes in flight, by stream: what the write-stall check looks at, so
// that a stream with no write in flight costs its periodic pass nothing.
#ifndef FACET_XDS_SERVER_ADS_WRITES_IN_FLIGHT_H_
#define FACET_XDS_SERVER_ADS_WRITES_IN_FLIGHT_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace facet::xds {

// Streams register when a write starts and leave when it completes; the
// stall check's pass looks at those alone. Thread-safe; never calls a writer
// with its own lock held, so writers may call it under theirs. The writes
// are kept in shards by stream id, each under its own lock: a push to
// thousands of streams (one thread starting writes) and their completions
// (gRPC's threads) seldom meet on one lock.
class WritesInFlight {
 public:
  class Writer {
   public:
    virtual ~Writer() = default;
    // Cancels the stream if a write has been in flight since before `limit`
    // (the writer checks again under its own lock).
    virtual void CancelIfStalled(absl::Time limit) = 0;
  };

  // Records that `writer`'s stream `id` started a write at `started`
  // (replacing what it recorded before).
  void Started(uint64_t id, absl::Time started, std::shared_ptr<Writer> writer);
  // Records that stream `id`'s write completed.
  void Ended(uint64_t id);

  // Calls CancelIfStalled(limit) on the writer of every write that started
  // before `limit`, with no lock held. Returns how many writes it looked at:
  // those in flight, whatever the number of streams.
  size_t CancelStalled(absl::Time limit);

  size_t size() const;

 private:
  struct Write {
    absl::Time started;
    std::shared_ptr<Writer> writer;
  };
  struct alignas(64) Shard {  // One cache line of its own for each lock.
    mutable absl::Mutex mu;
    absl::flat_hash_map<uint64_t, Write> writes ABSL_GUARDED_BY(mu);
  };
  static constexpr size_t kShards = 16;
  Shard& ShardOf(uint64_t id) { return shards_[id % kShards]; }

  std::array<Shard, kShards> shards_;
};

}  // namespace facet::xds

#endif  // FACET_XDS_SERVER_ADS_WRITES_IN_FLIGHT_H_
