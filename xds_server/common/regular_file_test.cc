#include "xds_server/common/regular_file.h"

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "xds_server/common/status_matchers.h"

namespace facet::xds {
namespace {

namespace fs = std::filesystem;
using ::facet::testing::StatusIs;
using ::testing::HasSubstr;

class RegularFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("regular_file_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string Write(const std::string& name, const std::string& text) {
    const std::string path = (dir_ / name).string();
    std::ofstream(path, std::ios::binary) << text;
    return path;
  }

  fs::path dir_;
};

TEST_F(RegularFileTest, ReadsARegularFileUpToTheBound) {
  RegularFileRead read = ReadRegularFile(Write("a.pem", "abcd"), /*max_bytes=*/4);
  EXPECT_EQ(read.outcome, RegularFileRead::Outcome::kRead);
  EXPECT_EQ(read.text, "abcd");
}

TEST_F(RegularFileTest, RefusesAFileOverTheBoundNamingItsSize) {
  const std::string path = Write("big.pem", "abcde");
  RegularFileRead read = ReadRegularFile(path, /*max_bytes=*/4);
  EXPECT_EQ(read.outcome, RegularFileRead::Outcome::kTooLarge);
  EXPECT_EQ(read.size, 5u);
  EXPECT_TRUE(read.text.empty());
  EXPECT_EQ(DescribeFailure(read, 4, "a certificate file"),
            "is 5 bytes; the limit for a certificate file is 4 bytes");
  EXPECT_THAT(ReadRegularFileOrError(path, 4, "a certificate file", "x: "),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "x: is 5 bytes; the limit for a certificate file is 4 bytes"));
}

TEST_F(RegularFileTest, RefusesAFifoWithoutWaitingForAWriter) {
  const std::string fifo = (dir_ / "pipe.pem").string();
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  // Without a writer, a blocking open would never return.
  RegularFileRead read = ReadRegularFile(fifo, kMaxCertificateFileBytes);
  EXPECT_EQ(read.outcome, RegularFileRead::Outcome::kNotRegular);
  EXPECT_THAT(ReadRegularFileOrError(fifo, kMaxCertificateFileBytes, "a certificate file", ""),
              StatusIs(absl::StatusCode::kFailedPrecondition, "is not a regular file"));
}

TEST_F(RegularFileTest, RefusesADeviceAndADirectory) {
  EXPECT_EQ(ReadRegularFile("/dev/zero", kMaxCertificateFileBytes).outcome,
            RegularFileRead::Outcome::kNotRegular);
  EXPECT_EQ(ReadRegularFile(dir_.string(), kMaxCertificateFileBytes).outcome,
            RegularFileRead::Outcome::kNotRegular);
}

TEST_F(RegularFileTest, NamesAMissingFileAndASymlinkLoop) {
  EXPECT_THAT(ReadRegularFileOrError((dir_ / "missing").string(), 4, "a file", ""),
              StatusIs(absl::StatusCode::kNotFound, "cannot be read: no such file or directory"));
  fs::create_symlink(dir_ / "b", dir_ / "a");
  fs::create_symlink(dir_ / "a", dir_ / "b");
  EXPECT_THAT(ReadRegularFileOrError((dir_ / "a").string(), 4, "a file", ""),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("cannot be read: too many levels of symbolic links")));
}

}  // namespace
}  // namespace facet::xds
