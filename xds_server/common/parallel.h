// Spreads independent work over the cores.
#ifndef FACET_XDS_SERVER_COMMON_PARALLEL_H_
#define FACET_XDS_SERVER_COMMON_PARALLEL_H_

#include <cstddef>

#include "absl/functional/function_ref.h"

namespace facet::xds {

// Calls `fn(i)` for every i in [0, count), on the calling thread and, when
// there are at least 2 * min_per_thread items, on up to
// hardware_concurrency() - 1 (at most 7) more threads, which take runs of
// neighbouring indices as they become free; returns when every call
// returned. Below min_per_thread items per thread, a thread costs more
// than it saves. `fn` must be safe to call concurrently for different i.
void ParallelFor(size_t count, size_t min_per_thread, absl::FunctionRef<void(size_t)> fn);

}  // namespace facet::xds

#endif  // FACET_XDS_SERVER_COMMON_PARALLEL_H_
