// A tensor the host cannot hold is a crema::Error naming its shape, raised at first use.
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

}  // namespace
}  // namespace crema
