// Local equivalents of absl's status_macros.h, which Debian's abseil 20220623
// does not ship. Same names, so an abseil upgrade is a rename.
#ifndef FACET_XDS_SERVER_COMMON_STATUS_MACROS_H_
#define FACET_XDS_SERVER_COMMON_STATUS_MACROS_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define FACET_STATUS_CONCAT_INNER_(a, b) a##b
#define FACET_STATUS_CONCAT_(a, b) FACET_STATUS_CONCAT_INNER_(a, b)

// Returns from the enclosing function if `expr` (an absl::Status) is not OK.
#define RETURN_IF_ERROR(expr)                            \
  do {                                                   \
    if (::absl::Status facet_status_ = (expr);           \
        !facet_status_.ok()) {                           \
      return facet_status_;                              \
    }                                                    \
  } while (false)

// Evaluates `rexpr` (an absl::StatusOr<T>); on error returns its status,
// otherwise move-assigns the value to `lhs` (which may be a declaration).
#define ASSIGN_OR_RETURN(lhs, rexpr) \
  FACET_ASSIGN_OR_RETURN_IMPL_(FACET_STATUS_CONCAT_(facet_statusor_, __LINE__), lhs, rexpr)

#define FACET_ASSIGN_OR_RETURN_IMPL_(statusor, lhs, rexpr) \
  auto statusor = (rexpr);                                 \
  if (!statusor.ok()) {                                    \
    return std::move(statusor).status();                   \
  }                                                        \
  lhs = *std::move(statusor)

#endif  // FACET_XDS_SERVER_COMMON_STATUS_MACROS_H_
