// How sliced passes cut a batch (primitives/common/batch_slices.h): the slices the CUDA tests and
// the reference nets' layers run in, pinned where the CPU build can check them.
#include "primitives/common/batch_slices.h"

#include <gtest/gtest.h>

#include "primitives/conv/conv_impl.h"
#include "problems.h"

namespace crema::prim {
namespace {

TEST(BatchSlices, EvenSlicesOfAtMostTheGivenImages) {
  EXPECT_EQ(even_slice(18, 17), 9);  // two slices of 9, not 17 and 1
  EXPECT_EQ(even_slice(5, 4), 3);    // 3 and 2
  EXPECT_EQ(even_slice(256, 22), 22);
  EXPECT_EQ(even_slice(8, 100), 8);  // the whole batch
  EXPECT_EQ(even_slice(8, 0), 1);    // at least an image
}

// Forward's and backward filter's padded copies: CaffeNet's conv1 in slices of 22 images
// (17 MiB), VGG-16's conv1_1 of 16, the CUDA test's 25-image batch of 13; none for a layer whose
// copy pads nothing or fits in 16 MiB.
TEST(BatchSlices, PaddedCopiesOfFirstLayers) {
  const auto slice = [](const test::ConvProblem& pb, MathMode math) {
    test::Descs ds = test::descs_of(pb, DataType::kFloat32);
    ds.cd.math = math;
    return cuda::padded_copy_slice(ConvProblem{ds.cd, ds.xd, ds.wd, ds.yd});
  };
  const test::ConvProblem caffenet{"caffenet:conv1", 256, 3, 227, 227, 96, 11, 11, 0, 0, 4, 4};
  EXPECT_EQ(slice(caffenet, MathMode::kBF16), 22);
  EXPECT_EQ(slice(caffenet, MathMode::kTF32), 22);  // 4 channels of 4 bytes: the same bytes
  EXPECT_EQ(slice({"vgg16:conv1_1", 64, 3, 224, 224, 64, 3, 3, 1, 1, 1, 1}, MathMode::kBF16), 16);
  EXPECT_EQ(slice({"in_slices", 25, 3, 227, 227, 16, 11, 11, 0, 0, 4, 4}, MathMode::kFP16), 13);
  EXPECT_EQ(slice({"fits", 20, 3, 227, 227, 16, 11, 11, 0, 0, 4, 4}, MathMode::kBF16), 20);
  EXPECT_EQ(slice({"unpadded", 64, 64, 224, 224, 64, 3, 3, 1, 1, 1, 1}, MathMode::kBF16), 64);
}

}  // namespace
}  // namespace crema::prim
