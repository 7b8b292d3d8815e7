// hdf5::check_in_child's contract beyond crashes (those are in Hdf5Snapshot): a read that fails
// in the checking process is that error here, without a second read in this process; and a read
// there may map 1 GiB beyond the data it declares (hdf5::internal::allow_data), no more.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <new>

#include "core/hdf5_io.h"
#include "core/hdf5_lock.h"
#include "data/data_test_util.h"
#include "error_util.h"
#include "hdf5_test_util.h"

namespace crema::test {
namespace {

constexpr size_t kBig = size_t(1536) << 20;  // more than the 1 GiB a read may take beyond its data

// Allocates kBig bytes; with any args it first declares them as its data.
void allocate_big(const std::string&, const std::vector<std::string>& args) {
  if (!args.empty()) hdf5::internal::allow_data(kBig);
  void* volatile p = ::operator new(kBig);
  ::operator delete(p);
}

int reads_here = 0;  // this process's count: the checking process counts in its own copy
int failing_read(const std::string& path) {
  ++reads_here;
  fail(path, ": no such dataset");
}

void must_exist(const std::string& path, const std::vector<std::string>&) {
  if (!std::ifstream(path)) fail(path, ": no such file");
}

std::string a_file(const TempDir& dir, const std::string& name) {
  const std::string path = dir.file(name);
  std::ofstream(path) << "x";
  return path;
}

TEST(Hdf5Check, ReadMayMapOneGibibyteBeyondItsDeclaredData) {
  CREMA_SKIP_WITHOUT_HDF5();
  TempDir dir;
  const std::string path = a_file(dir, "big.h5");
  // (a plain build answers with the limit's bad_alloc; under AddressSanitizer the allocator ends
  // the checking process instead)
  const std::string what =
      error_of([&] { hdf5::check_in_child(path, "a test read", allocate_big); });
  EXPECT_EQ(what.rfind(path + ": damaged HDF5 file: ", 0), 0u) << what;
  EXPECT_EQ(
      error_of([&] { hdf5::check_in_child(path, "a test read", allocate_big, {"declared"}); }),
      "(no error)");
}

TEST(Hdf5Check, ReadThatFailsThereIsItsErrorHereWithoutReadingAgain) {
  CREMA_SKIP_WITHOUT_HDF5();
  TempDir dir;
  const std::string path = a_file(dir, "missing_dataset.h5");
  reads_here = 0;
  for (int pass = 0; pass < 2; ++pass)  // a failed read is checked again, not cached
    EXPECT_EQ(error_of([&] { hdf5::read_checked<failing_read>(path, "a test read"); }),
              path + ": no such dataset");
  EXPECT_EQ(reads_here, 0);
}

// The checking process outlives directory changes here: a relative path names the same file there.
TEST(Hdf5Check, RelativePathAfterAChangeOfDirectory) {
  CREMA_SKIP_WITHOUT_HDF5();
  TempDir dir;
  const std::filesystem::path before = std::filesystem::current_path();
  hdf5::check_in_child(a_file(dir, "first.h5"), "a test read", must_exist);  // starts the process
  std::filesystem::current_path(dir.file(""));
  const std::string what =
      error_of([&] { hdf5::check_in_child("first.h5", "a test read", must_exist); });
  std::filesystem::current_path(before);
  EXPECT_EQ(what, "(no error)");
}

}  // namespace
}  // namespace crema::test
