#include "xds_server/common/regular_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace facet::xds {

RegularFileRead ReadRegularFile(const std::string& path, std::size_t max_bytes) {
  RegularFileRead result;
  auto fail = [&](RegularFileRead::Outcome outcome, int error = 0) {
    result.outcome = outcome;
    result.error = error;
    result.text.clear();
    return std::move(result);
  };
  // Non-blocking, so that opening a FIFO never waits for a writer.
  const int fd = open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return fail(RegularFileRead::Outcome::kCannotRead, errno);
  struct Closer {
    int fd;
    ~Closer() { close(fd); }
  } closer{fd};
  struct stat st;
  if (fstat(fd, &st) != 0) return fail(RegularFileRead::Outcome::kCannotRead, errno);
  if (!S_ISREG(st.st_mode)) return fail(RegularFileRead::Outcome::kNotRegular);
  const auto size = static_cast<std::uintmax_t>(st.st_size);
  if (size > max_bytes) {
    result.size = size;
    return fail(RegularFileRead::Outcome::kTooLarge);
  }
  // The size may change while reading: read at most one byte more than the
  // bound.
  result.text.reserve(size);
  char chunk[64 * 1024];
  while (result.text.size() <= max_bytes) {
    const ssize_t n = read(fd, chunk, std::min(sizeof(chunk), max_bytes + 1 - result.text.size()));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return fail(RegularFileRead::Outcome::kCannotRead, errno);
    if (n == 0) break;
    result.text.append(chunk, static_cast<size_t>(n));
  }
  if (result.text.size() > max_bytes) return fail(RegularFileRead::Outcome::kTooLarge);
  return result;
}

std::string DescribeFailure(const RegularFileRead& read, std::size_t max_bytes,
                            absl::string_view what) {
  switch (read.outcome) {
    case RegularFileRead::Outcome::kRead:
      return "was read";
    case RegularFileRead::Outcome::kCannotRead: {
      // Lower case like the other reasons ("too many levels of symbolic links").
      std::string text = std::strerror(read.error);
      absl::AsciiStrToLower(&text);
      return absl::StrCat("cannot be read: ", text);
    }
    case RegularFileRead::Outcome::kNotRegular:
      return "is not a regular file";
    case RegularFileRead::Outcome::kTooLarge:
      return absl::StrCat("is ",
                          read.size > 0 ? absl::StrCat(read.size, " bytes") : "larger than that",
                          "; the limit for ", what, " is ", max_bytes, " bytes");
  }
  return "cannot be read";
}

absl::StatusOr<std::string> ReadRegularFileOrError(const std::string& path, std::size_t max_bytes,
                                                   absl::string_view what,
                                                   absl::string_view prefix) {
  RegularFileRead read = ReadRegularFile(path, max_bytes);
  if (read.outcome == RegularFileRead::Outcome::kRead) return std::move(read.text);
  std::string message = absl::StrCat(prefix, DescribeFailure(read, max_bytes, what));
  switch (read.outcome) {
    case RegularFileRead::Outcome::kCannotRead:
      if (read.error == ENOENT) return absl::NotFoundError(message);
      if (read.error == EACCES || read.error == EPERM) {
        return absl::PermissionDeniedError(message);
      }
      return absl::FailedPreconditionError(message);
    case RegularFileRead::Outcome::kTooLarge:
      return absl::InvalidArgumentError(message);
    default:
      return absl::FailedPreconditionError(message);
  }
}

}  // namespace facet::xds
