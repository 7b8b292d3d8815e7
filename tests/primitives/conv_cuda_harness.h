// Internal to the CUDA convolution tests (conv_cuda_test.cpp, conv_s2d_cuda_test.cpp): every pass
// of a problem on the GPU with each algorithm that supports it, against the CPU, which computes
// in full precision whatever the math mode.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "cuda_test_util.h"
#include "primitives/common/dtype_visit.h"
#include "primitives/conv.h"
#include "problems.h"
#include "winograd_tolerance.h"

namespace crema::prim::conv_harness {

using test::ConvProblem;
using test::Descs;
using test::descs_of;

inline constexpr Tolerance kExact{0.0, 0.0, true};

template <typename T>
struct Data {
  std::vector<T> x, w, dy, bias, y0, dx0, dw0, db0;
};

template <typename T>
Data<T> make_data(const Descs& ds, uint64_t seed, bool integer) {
  auto gen = [&](int64_t n, uint64_t s) {
    return integer ? test::random_int_vector<T>(size_t(n), seed + s)
                   : test::random_vector<T>(size_t(n), seed + s);
  };
  Data<T> d;
  d.x = gen(ds.xd.count(), 1);
  d.w = gen(ds.wd.count(), 2);
  d.dy = gen(ds.yd.count(), 3);
  d.bias = gen(ds.wd.k, 4);
  d.y0 = gen(ds.yd.count(), 5);
  d.dx0 = gen(ds.xd.count(), 6);
  d.dw0 = gen(ds.wd.count(), 7);
  d.db0 = gen(ds.wd.k, 8);
  return d;
}

// The GPU copies of a problem's inputs.
struct GpuData {
  DeviceBuffer x, w, dy, bias;
};

enum class Op {
  kFwd,
  kFwdBlendBiasRelu,
  kFwdBias,
  kBwdData,
  kBwdDataBlend,
  kBwdFilter,
  kBwdFilterBlend
};

inline const char* op_name(Op op) {
  switch (op) {
    case Op::kFwd:
      return "forward";
    case Op::kFwdBlendBiasRelu:
      return "forward blend + bias + relu";
    case Op::kFwdBias:
      return "forward + bias";
    case Op::kBwdData:
      return "backward data";
    case Op::kBwdDataBlend:
      return "backward data blend";
    case Op::kBwdFilter:
      return "backward filter";
    case Op::kBwdFilterBlend:
      return "backward filter blend";
  }
  return "?";
}

// Runs one operation on the CPU (host pointers) and returns the output.
template <typename T>
std::vector<T> run_cpu(Handle& h, Op op, const Descs& ds, const Data<T>& d) {
  switch (op) {
    case Op::kFwd:
    case Op::kFwdBias:
    case Op::kFwdBlendBiasRelu: {
      const bool blend = op == Op::kFwdBlendBiasRelu;
      std::vector<T> y = blend ? d.y0 : test::poisoned<T>(d.y0.size());
      conv_fwd(h, ds.cd, ConvAlgo::kAuto, ds.xd, d.x.data(), ds.wd, d.w.data(), ds.yd, y.data(),
               blend ? Blend{2.0, 1.0} : Blend{},
               op == Op::kFwd ? ConvEpilogue{} : ConvEpilogue{d.bias.data(), blend});
      return y;
    }
    case Op::kBwdData:
    case Op::kBwdDataBlend: {
      const bool blend = op == Op::kBwdDataBlend;
      std::vector<T> dx = blend ? d.dx0 : test::poisoned<T>(d.dx0.size());
      conv_bwd_data(h, ds.cd, ConvAlgo::kAuto, ds.wd, d.w.data(), ds.yd, d.dy.data(), ds.xd,
                    dx.data(), blend ? Blend{2.0, 3.0} : Blend{});
      return dx;
    }
    case Op::kBwdFilter:
    case Op::kBwdFilterBlend: {
      const bool blend = op == Op::kBwdFilterBlend;
      std::vector<T> dw = blend ? d.dw0 : test::poisoned<T>(d.dw0.size());
      conv_bwd_filter(h, ds.cd, ConvAlgo::kAuto, ds.xd, d.x.data(), ds.yd, d.dy.data(), ds.wd,
                      dw.data(), blend ? Blend{-2.0, 3.0} : Blend{});
      return dw;
    }
  }
  return {};
}

// The same operation on the GPU with a given algorithm.
template <typename T>
std::vector<T> run_gpu(Handle& h, Op op, ConvAlgo algo, const Descs& ds, const Data<T>& d,
                       const GpuData& g) {
  switch (op) {
    case Op::kFwd:
    case Op::kFwdBias:
    case Op::kFwdBlendBiasRelu: {
      const bool blend = op == Op::kFwdBlendBiasRelu;
      DeviceBuffer y = to_gpu(blend ? d.y0 : test::poisoned<T>(d.y0.size()));
      conv_fwd(h, ds.cd, algo, ds.xd, g.x.get(), ds.wd, g.w.get(), ds.yd, y.get(),
               blend ? Blend{2.0, 1.0} : Blend{},
               op == Op::kFwd ? ConvEpilogue{} : ConvEpilogue{g.bias.get(), blend});
      return from_gpu<T>(h, y, d.y0.size());
    }
    case Op::kBwdData:
    case Op::kBwdDataBlend: {
      const bool blend = op == Op::kBwdDataBlend;
      DeviceBuffer dx = to_gpu(blend ? d.dx0 : test::poisoned<T>(d.dx0.size()));
      conv_bwd_data(h, ds.cd, algo, ds.wd, g.w.get(), ds.yd, g.dy.get(), ds.xd, dx.get(),
                    blend ? Blend{2.0, 3.0} : Blend{});
      return from_gpu<T>(h, dx, d.dx0.size());
    }
    case Op::kBwdFilter:
    case Op::kBwdFilterBlend: {
      const bool blend = op == Op::kBwdFilterBlend;
      DeviceBuffer dw = to_gpu(blend ? d.dw0 : test::poisoned<T>(d.dw0.size()));
      conv_bwd_filter(h, ds.cd, algo, ds.xd, g.x.get(), ds.yd, g.dy.get(), ds.wd, dw.get(),
                      blend ? Blend{-2.0, 3.0} : Blend{});
      return from_gpu<T>(h, dw, d.dw0.size());
    }
  }
  return {};
}

inline const std::vector<ConvAlgo> kEveryAlgo = {ConvAlgo::kIm2colGemm,
                                                 ConvAlgo::kGemm1x1,
                                                 ConvAlgo::kDirect,
                                                 ConvAlgo::kImplicitGemm,
                                                 ConvAlgo::kImplicitGemmSm90,
                                                 ConvAlgo::kWinograd,
                                                 ConvAlgo::kSpaceToDepth,
                                                 ConvAlgo::kAuto,
                                                 ConvAlgo::kFind};
// The tensor-core rows; a row the GPU cannot run (implicit_gemm_sm90 off compute capability 9.0)
// is skipped by check_problem.
inline const std::vector<ConvAlgo> kImplicitRows = {ConvAlgo::kImplicitGemm,
                                                    ConvAlgo::kImplicitGemmSm90};

// Whether the winograd row runs op under algo (kFind may pick it, kAuto's heuristic may).
inline bool winograd_may_run(Handle& gpu, ConvAlgo algo, const Descs& ds, Op op) {
  if (!conv_supports(gpu, ConvAlgo::kWinograd, ds.cd, ds.xd, ds.wd, ds.yd)) return false;
  const ConvPass pass = op == Op::kBwdData || op == Op::kBwdDataBlend       ? ConvPass::kBwdData
                        : op == Op::kBwdFilter || op == Op::kBwdFilterBlend ? ConvPass::kBwdFilter
                                                                            : ConvPass::kFwd;
  if (algo == ConvAlgo::kAuto)
    return conv_heuristic(gpu, ds.cd, ds.xd, ds.wd, ds.yd, pass) == ConvAlgo::kWinograd;
  return algo == ConvAlgo::kWinograd || algo == ConvAlgo::kFind;
}

// The looser of tol and winograd's bound for the op (winograd_tolerance.h).
template <typename T>
Tolerance winograd_tolerance(const ConvProblem& pb, Op op, Tolerance tol) {
  const test::WinogradTolerances wt = test::winograd_tolerances(pb, sizeof(T) == 8);
  const Tolerance& w = op == Op::kBwdData || op == Op::kBwdDataBlend       ? wt.dx
                       : op == Op::kBwdFilter || op == Op::kBwdFilterBlend ? wt.dw
                                                                           : wt.y;
  return Tolerance{std::max(w.abs, tol.abs), tol.rel, true};
}

// Every op of pb on the GPU with each of `algos` it supports, against the CPU (which computes
// in full precision whatever the math mode).
template <typename T>
void check_problem(const ConvProblem& pb, bool integer, Tolerance tol, size_t budget = 0,
                   const std::vector<ConvAlgo>& algos = kEveryAlgo,
                   MathMode math = MathMode::kFP32) {
  SCOPED_TRACE(::testing::Message() << pb.name << (sizeof(T) == 8 ? " f64" : " f32")
                                    << (integer ? " int " : " real ") << math_name(math));
  Descs ds = descs_of(pb, dtype_of<T>());
  ds.cd.math = math;
  const Data<T> d = make_data<T>(ds, 1234, integer);
  Handle cpu(Device::kCPU), gpu(Device::kCUDA);
  if (budget) gpu.set_workspace_budget(budget);
  const GpuData g{to_gpu(d.x), to_gpu(d.w), to_gpu(d.dy), to_gpu(d.bias)};
  for (Op op : {Op::kFwd, Op::kFwdBlendBiasRelu, Op::kFwdBias, Op::kBwdData, Op::kBwdDataBlend,
                Op::kBwdFilter, Op::kBwdFilterBlend}) {
    const std::vector<T> want = run_cpu(cpu, op, ds, d);
    for (ConvAlgo algo : algos) {
      if (!conv_supports(gpu, algo, ds.cd, ds.xd, ds.wd, ds.yd)) continue;
      EXPECT_TRUE(
          all_close(run_gpu(gpu, op, algo, ds, d, g), want,
                    winograd_may_run(gpu, algo, ds, op) ? winograd_tolerance<T>(pb, op, tol) : tol))
          << op_name(op) << " with " << conv_algo_name(algo);
    }
  }
  for (Blend blend : {Blend{}, Blend{2.0, -1.0}}) {
    std::vector<T> db = blend.beta == 0 ? test::poisoned<T>(size_t(pb.k)) : d.db0;
    DeviceBuffer gdb = to_gpu(db);
    conv_bwd_bias(cpu, ds.yd, d.dy.data(), db.data(), blend);
    conv_bwd_bias(gpu, ds.yd, g.dy.get(), gdb.get(), blend);
    EXPECT_TRUE(all_close(from_gpu<T>(gpu, gdb, db.size()), db, integer ? kExact : tol))
        << "backward bias beta " << blend.beta;
  }
}

}  // namespace crema::prim::conv_harness
