// Reading a file named by an operator (a manifest, a certificate, the relay's
// configuration) without letting it block or flood the process: only a
// regular file is read, and only up to a bound.
#ifndef FACET_XDS_SERVER_COMMON_REGULAR_FILE_H_
#define FACET_XDS_SERVER_COMMON_REGULAR_FILE_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace facet::xds {

// Largest PEM certificate, key or CA file read (the --*-tls-* flags, the
// relay configuration's certificate files): a chain of a few certificates is
// a few kilobytes.
inline constexpr std::size_t kMaxCertificateFileBytes = std::size_t{1} << 20;  // 1 MiB

// What ReadRegularFile found.
struct RegularFileRead {
  enum class Outcome {
    kRead,        // `text` holds the whole file.
    kCannotRead,  // open, fstat or read failed with `error`.
    kNotRegular,  // A FIFO, a device, a socket or a directory: not read at all.
    kTooLarge,    // More than the bound; `size` is the size fstat reported,
                  // 0 when the file grew past the bound while being read.
  };
  Outcome outcome = Outcome::kRead;
  int error = 0;
  std::uintmax_t size = 0;
  std::string text;
};

// Reads the file at `path` if it is a regular file of at most `max_bytes`
// bytes. The file is opened without blocking (a FIFO without a writer does
// not wait for one) and checked with fstat before anything is read; at most
// `max_bytes` + 1 bytes are ever read. Thread-safe.
RegularFileRead ReadRegularFile(const std::string& path, std::size_t max_bytes);

// Returns why `read` (not kRead) failed, without the path, as the end of a
// message naming it: "cannot be read: no such file or directory", "is not a
// regular file", "is 2000000 bytes; the limit for <what> is 1048576 bytes".
std::string DescribeFailure(const RegularFileRead& read, std::size_t max_bytes,
                            absl::string_view what);

// ReadRegularFile as a StatusOr whose error message is
// "<prefix><DescribeFailure>": NotFound for a missing file, PermissionDenied
// for one that may not be read, InvalidArgument for one over the bound,
// FailedPrecondition otherwise (not a regular file, another read error).
absl::StatusOr<std::string> ReadRegularFileOrError(const std::string& path, std::size_t max_bytes,
                                                   absl::string_view what,
                                                   absl::string_view prefix);

}  // namespace facet::xds

#endif  // FACET_XDS_SERVER_COMMON_REGULAR_FILE_H_
