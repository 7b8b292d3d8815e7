// Resuming a real run is bit-exact on the CPU: records, crops, flips, dropout masks and the test
// net's records continue where the snapshot left them (resume_util.h).
#include <gtest/gtest.h>

#include "resume_util.h"

namespace crema {
namespace {

TEST(Resume, LmdbCropsFlipsAndDropoutContinueBitExactly) {
  test::expect_bit_exact_resume(Device::kCPU);
}

}  // namespace
}  // namespace crema
