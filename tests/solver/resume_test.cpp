// Resuming a real run is bit-exact on the CPU: records, crops, flips, dropout masks and the test
// net's records continue where the snapshot left them (resume_util.h), from binary proto and
// from HDF5 snapshots alike.
#include <gtest/gtest.h>

#include "core/hdf5_io.h"
#include "resume_util.h"

namespace crema {
namespace {

TEST(Resume, LmdbCropsFlipsAndDropoutContinueBitExactly) {
  test::expect_bit_exact_resume(Device::kCPU);
}

TEST(Resume, Hdf5SnapshotsContinueBitExactly) {
  if (!hdf5::hdf5_available()) GTEST_SKIP() << "built without HDF5";
  test::expect_bit_exact_resume(Device::kCPU, SolverParameter::HDF5);
}

}  // namespace
}  // namespace crema
