// Resuming a real run is bit-exact on the GPU too (resume_util.h): the dropout generator's
// counter is part of the snapshot, and every kernel of the step is deterministic.
#include <gtest/gtest.h>

#include "cuda_test_util.h"
#include "resume_util.h"

namespace crema {
namespace {

TEST(ResumeCuda, LmdbCropsFlipsAndDropoutContinueBitExactly) {
  CREMA_SKIP_WITHOUT_GPU();
  test::expect_bit_exact_resume(Device::kCUDA);
}

}  // namespace
}  // namespace crema
