// The storage types no kernel implements yet (bf16, f16) are refused by every primitive on the
// CPU with one line naming the entry point, the type and the device ("act_fwd: bf16 is not
// supported on cpu"), before anything is written: none silently reads half-size data as float.
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "primitives/activation.h"
#include "primitives/argmax.h"
#include "primitives/batchnorm.h"
#include "primitives/blas.h"
#include "primitives/dropout.h"
#include "primitives/elementwise.h"
#include "primitives/eltwise.h"
#include "primitives/gather.h"
#include "primitives/im2col.h"
#include "primitives/losses.h"
#include "primitives/lrn.h"
#include "primitives/mvn.h"
#include "primitives/pool.h"
#include "primitives/prelu.h"
#include "primitives/reduce.h"
#include "primitives/scale_bias.h"
#include "primitives/softmax.h"
#include "primitives/solver_update.h"

namespace crema::prim {
namespace {

constexpr float kUntouched = 7.0f;
constexpr uint8_t kUntouchedMask = 0xab;

// Distinct buffers, larger than any shape below needs (lrn refuses overlapping x and y), filled
// with a sentinel so a call that wrote before throwing is caught.
struct Buffers {
  std::vector<float> v[6];
  std::vector<uint8_t> mask = std::vector<uint8_t>(1024, kUntouchedMask);
  std::vector<int32_t> index = std::vector<int32_t>(1024, -5);
  Buffers() {
    for (auto& b : v) b.assign(1024, kUntouched);
  }
  float* operator[](int i) { return v[i].data(); }
  bool untouched() const {
    for (const auto& b : v)
      for (float f : b)
        if (f != kUntouched) return false;
    for (uint8_t m : mask)
      if (m != kUntouchedMask) return false;
    for (int32_t i : index)
      if (i != -5) return false;
    return true;
  }
};

struct Call {
  std::string op;  // the entry point the error names
  std::function<void(Handle&, Buffers&)> run;
};

// A representative call of every primitive backend that branches on the data type, with
// descriptors of type t and otherwise valid arguments.
std::vector<Call> calls(DataType t) {
  const TensorDesc d = TensorDesc::nchw(t, 2, 3, 4, 4), pooled = TensorDesc::nchw(t, 2, 3, 2, 2);
  const PoolDesc pool{PoolMode::kMax, 2, 2, 0, 0, 2, 2};
  const SoftmaxDesc sm{.dtype = t, .outer = 2, .channels = 3, .inner = 4};
  const SoftmaxLossDesc sl{.dtype = t, .outer = 2, .channels = 3, .inner = 4};
  const AccuracyDesc acc{.dtype = t, .outer = 2, .channels = 3, .inner = 4};
  const ArgMaxDesc am{.dtype = t, .outer = 2, .channels = 3, .inner = 4};
  const DropoutDesc dd{.dtype = t, .count = 96};
  const EltwiseDesc ed{.dtype = t, .op = EltwiseOp::kMax, .n = 9, .num_inputs = 2, .coeff = {}};
  const ScaleBiasDesc sb{t, 2, 3, 4};
  const RowsDesc rows{t, 2, 4, 3};
  const Im2colDesc ic{.dtype = t, .c = 2, .h = 4, .w = 4, .kernel_h = 3, .kernel_w = 3};
  const SolverUpdateDesc su{.dtype = t, .count = 9, .rate = 0.1};
  const EuclideanLossDesc el{t, 2, 3};
  const HingeLossDesc hl{.dtype = t, .num = 2, .dim = 3};
  using B = Buffers;
  return {
      {"act_fwd", [=](Handle& h, B& b) { act_fwd(h, ActDesc{}, d, b[0], d, b[1]); }},
      {"act_bwd", [=](Handle& h, B& b) { act_bwd(h, ActDesc{}, d, b[0], b[1], d, b[2], b[3]); }},
      {"pool_fwd", [=](Handle& h, B& b) { pool_fwd(h, pool, d, b[0], pooled, b[1]); }},
      {"pool_bwd", [=](Handle& h, B& b) { pool_bwd(h, pool, pooled, b[0], b[1], d, b[2], b[3]); }},
      {"softmax_fwd", [=](Handle& h, B& b) { softmax_fwd(h, sm, b[0], b[1]); }},
      {"softmax_bwd", [=](Handle& h, B& b) { softmax_bwd(h, sm, b[0], b[1], b[2]); }},
      {"softmax_loss_fwd", [=](Handle& h, B& b) { softmax_loss_fwd(h, sl, b[0], b[1], b[2]); }},
      {"accuracy_fwd", [=](Handle& h, B& b) { accuracy_fwd(h, acc, b[0], b[1], b[2], b[3]); }},
      {"gemm", [=](Handle& h,
                   B& b) { gemm(h, t, Trans::kNo, Trans::kYes, 4, 5, 6, 1, b[0], b[1], 0, b[2]); }},
      {"gemv", [=](Handle& h, B& b) { gemv(h, t, Trans::kNo, 4, 5, 1, b[0], b[1], 0, b[2]); }},
      // axpy is axpby with beta 1 and reports as it.
      {"axpby", [=](Handle& h, B& b) { axpy(h, t, 9, 2, b[0], b[1]); }},
      {"axpby", [=](Handle& h, B& b) { axpby(h, t, 9, 2, b[0], 0.5, b[1]); }},
      {"scal", [=](Handle& h, B& b) { scal(h, t, 9, 2, b[0]); }},
      {"fill", [=](Handle& h, B& b) { fill(h, t, 9, 2, b[0]); }},
      {"dot", [=](Handle& h, B& b) { dot(h, t, 9, b[0], b[1]); }},
      {"asum", [=](Handle& h, B& b) { asum(h, t, 9, b[0]); }},
      {"bias_add", [=](Handle& h, B& b) { bias_add(h, d, b[0], b[1]); }},
      {"bias_bwd", [=](Handle& h, B& b) { bias_bwd(h, d, b[0], b[1]); }},
      {"lrn_fwd", [=](Handle& h, B& b) { lrn_fwd(h, LrnDesc{}, d, b[0], d, b[1]); }},
      {"lrn_bwd", [=](Handle& h, B& b) { lrn_bwd(h, LrnDesc{}, d, b[0], b[1], d, b[2], b[3]); }},
      {"batchnorm_fwd_training",
       [=](Handle& h, B& b) {
         batchnorm_fwd_training(h, BatchNormDesc{}, d, b[0], d, b[1], b[2], b[3], b[4]);
       }},
      {"batchnorm_fwd_inference",
       [=](Handle& h, B& b) {
         batchnorm_fwd_inference(h, BatchNormDesc{}, d, b[0], d, b[1], b[2], b[3]);
       }},
      {"batchnorm_bwd_training",
       [=](Handle& h, B& b) {
         batchnorm_bwd_training(h, BatchNormDesc{}, d, b[0], b[1], b[2], d, b[3]);
       }},
      {"batchnorm_bwd_inference",
       [=](Handle& h, B& b) {
         batchnorm_bwd_inference(h, BatchNormDesc{}, d, b[0], b[1], d, b[2]);
       }},
      {"dropout_fwd", [=](Handle& h, B& b) { dropout_fwd(h, dd, b[0], b[1], b.mask.data()); }},
      {"dropout_bwd", [=](Handle& h, B& b) { dropout_bwd(h, dd, b[0], b.mask.data(), b[1]); }},
      {"eltwise_fwd",
       [=](Handle& h, B& b) {
         const void* x[2] = {b[0], b[1]};
         eltwise_fwd(h, ed, x, b[2], b.index.data());
       }},
      {"reduce_fwd",
       [=](Handle& h, B& b) {
         reduce_fwd(h, ReduceDesc{}, ViewDesc::packed(t, {2, 3}), b[0], ViewDesc::packed(t, {2, 1}),
                    b[1]);
       }},
      {"scale_bias_fwd", [=](Handle& h, B& b) { scale_bias_fwd(h, sb, b[0], b[1], b[2], b[3]); }},
      {"scale_bias_bwd_scale",
       [=](Handle& h, B& b) { scale_bias_bwd_scale(h, sb, b[0], b[1], b[2]); }},
      {"prelu_fwd", [=](Handle& h, B& b) { prelu_fwd(h, PreluDesc{}, d, b[0], b[1], d, b[2]); }},
      {"mvn_fwd", [=](Handle& h, B& b) { mvn_fwd(h, MvnDesc{}, d, b[0], d, b[1]); }},
      {"argmax_fwd", [=](Handle& h, B& b) { argmax_fwd(h, am, b[0], b[1], b[2]); }},
      {"gather_rows", [=](Handle& h, B& b) { gather_rows(h, rows, b[0], b[1], b[2]); }},
      {"nonzero_indices", [=](Handle& h, B& b) { nonzero_indices(h, t, 9, b[0], b[1]); }},
      {"elt_add_scalar", [=](Handle& h, B& b) { elt_add_scalar(h, t, 9, 1.0, b[0]); }},
      {"im2col", [=](Handle& h, B& b) { im2col(h, ic, b[0], b[1]); }},
      {"col2im", [=](Handle& h, B& b) { col2im(h, ic, b[0], b[1]); }},
      {"solver_update", [=](Handle& h, B& b) { solver_update(h, su, b[0], b[1], b[2], nullptr); }},
      {"euclidean_loss_fwd", [=](Handle& h, B& b) { euclidean_loss_fwd(h, el, b[0], b[1], b[2]); }},
      {"hinge_loss_bwd", [=](Handle& h, B& b) { hinge_loss_bwd(h, hl, b[0], b[1], 1, b[2]); }},
  };
}

TEST(DtypeCpu, HalfSizeTypesAreRefusedByName) {
  Handle h(Device::kCPU);
  for (DataType t : {DataType::kBFloat16, DataType::kFloat16})
    for (const Call& call : calls(t)) {
      const std::string want = call.op + ": " + dtype_name(t) + " is not supported on cpu";
      SCOPED_TRACE(want);
      Buffers b;
      try {
        call.run(h, b);
        ADD_FAILURE() << "no error";
      } catch (const PrimError& e) {
        EXPECT_EQ(std::string(e.what()), want);
      }
      EXPECT_TRUE(b.untouched());
    }
}

// f32 and f64 still run: the visitor picked the type the old branches picked.
TEST(DtypeCpu, F32AndF64StillRun) {
  Handle h(Device::kCPU);
  std::vector<float> xf = {1, -2, 3}, yf(3, 0);
  std::vector<double> xd = {1, -2, 3}, yd(3, 0);
  axpy(h, DataType::kFloat32, 3, 2.0, xf.data(), yf.data());
  axpy(h, DataType::kFloat64, 3, 2.0, xd.data(), yd.data());
  EXPECT_EQ(yf, (std::vector<float>{2, -4, 6}));
  EXPECT_EQ(yd, (std::vector<double>{2, -4, 6}));
  EXPECT_EQ(dot(h, DataType::kFloat32, 3, xf.data(), yf.data()), 28.0);
  EXPECT_EQ(asum(h, DataType::kFloat64, 3, yd.data()), 12.0);
}

}  // namespace
}  // namespace crema::prim
