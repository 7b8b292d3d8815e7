// A tensor's memory from bad input is a crema::Error naming the shapes, never an abort: one the
// host cannot hold (raised at first use), or sharing memory between tensors of different sizes.
#include <gtest/gtest.h>

#include <string>

#include "core/errors.h"
#include "core/tensor.h"

namespace crema {
namespace {

TEST(TensorMemory, AnAllocationPastTheLimitNamesTheShape) {
  prim::set_host_memory_limit(size_t(1) << 20);
  Tensor<float> t({4, 1 << 20});  // 16 MiB; reshape allocates nothing
  std::string why;
  try {
    t.mutable_data();
  } catch (const Error& e) {
    why = e.what();
  }
  prim::set_host_memory_limit(0);
  EXPECT_NE(why.find("(4 1048576 (4194304))"), std::string::npos) << why;
  EXPECT_NE(why.find("1 MiB limit"), std::string::npos) << why;
  EXPECT_NO_THROW(t.mutable_data());
}

// An Input layer without shapes leaves its tops unshaped (count 0), and a Split after it shaped
// its tops as scalars (count 1) before sharing: found by fuzz_net_build (the input is in its
// corpus); it was a failed CHECK.
TEST(TensorMemory, SharingMemoryOfAnotherSizeIsAnError) {
  Tensor<float> unshaped, scalar(std::vector<int64_t>{}), two({2});
  EXPECT_THROW(scalar.share_data(unshaped), Error);
  EXPECT_THROW(two.share_diff(scalar), Error);
  Tensor<float> other({2});
  EXPECT_NO_THROW(other.share_data(two));
}

}  // namespace
}  // namespace crema
