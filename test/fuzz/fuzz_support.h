// What the fuzz targets share: invariant checks and in-memory input files.
#ifndef FACET_TEST_FUZZ_FUZZ_SUPPORT_H_
#define FACET_TEST_FUZZ_FUZZ_SUPPORT_H_

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

namespace facet::fuzz {

// Aborts, which libFuzzer reports as a crash with the input, when an
// invariant of the code under test does not hold.
inline void Check(bool condition) {
  if (!condition) std::abort();
}

// An in-memory file (memfd) holding fuzz input, for entry points that take a
// path. Owned by one thread.
class MemoryFile {
 public:
  // Creates the file with `size` bytes of `data`; aborts if the kernel refuses
  // (a broken test machine, not an input problem).
  MemoryFile(const uint8_t* data, size_t size) : fd_(memfd_create("fuzz-input", 0)) {
    if (fd_ < 0) std::abort();
    size_t written = 0;
    while (written < size) {
      ssize_t n = write(fd_, data + written, size - written);
      if (n <= 0) std::abort();
      written += static_cast<size_t>(n);
    }
    path_ = "/proc/self/fd/" + std::to_string(fd_);
  }
  ~MemoryFile() { close(fd_); }
  MemoryFile(const MemoryFile&) = delete;
  MemoryFile& operator=(const MemoryFile&) = delete;

  // Returns a path that opens the file while this object lives.
  const std::string& path() const { return path_; }

 private:
  int fd_;
  std::string path_;
};

}  // namespace facet::fuzz

#endif  // FACET_TEST_FUZZ_FUZZ_SUPPORT_H_
