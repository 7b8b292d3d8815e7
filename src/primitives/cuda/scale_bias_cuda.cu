// Broadcast scale and bias on CUDA. The element-wise passes are one grid-stride kernel whose
// channel is (i / inner) % C (32-bit index math where the count allows); memory-bound at
// 2 * sizeof(T) bytes per element (3 with beta != 0). The parameter gradients are deterministic
// per-channel sums in double (cuda_reduce.cuh): one read of dy (and x) per element. bf16 and
// f16 data are computed in fp32, with fp32 scale, bias and parameter gradients.
#include "primitives/common/dtype_visit.h"
#include "primitives/cuda/cuda_reduce.cuh"
#include "primitives/cuda/cuda_util.cuh"
#include "primitives/scale_bias.h"

namespace crema::prim::cuda {
namespace {

template <typename T, typename I, typename M = MathOf<T>>
__global__ void fwd_kernel(I n, I C, I inner, const T* x, const M* scale, const M* bias, T* y,
                           M alpha, M beta) {
  for (I i = I(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += I(blockDim.x) * gridDim.x) {
    const I c = (i / inner) % C;
    const M xi = M(load_as_float(x[i]));
    M v;
    if (!bias)
      v = xi * scale[c];
    else if (!scale)
      v = xi + bias[c];
    else
      v = xi * scale[c] + bias[c];
    blend_store(y + i, v, alpha, beta);
  }
}

template <typename T>
void fwd(Handle& h, const ScaleBiasDesc& sd, const void* x, const void* scale, const void* bias,
         void* y, Blend b) {
  using M = MathOf<T>;
  const int64_t n = sd.count();
  auto run = [&](auto zero) {
    using I = decltype(zero);
    fwd_kernel<T, I><<<grid_for(n), kBlock, 0, stream_of(h)>>>(
        I(n), I(sd.channels), I(sd.inner), static_cast<const T*>(x), static_cast<const M*>(scale),
        static_cast<const M*>(bias), static_cast<T*>(y), M(b.alpha), M(b.beta));
  };
  if (n < (int64_t(1) << 31))  // i + grid stride stays below 2^32
    run(uint32_t{});
  else
    run(uint64_t{});
  check_launch("scale_bias_fwd");
}

template <typename T>
struct DyTerm {
  const T* dy;
  __device__ void operator()(int64_t j, int64_t, double (&v)[1]) const {
    v[0] += double(load_as_float(dy[j]));
  }
};

template <typename T>
struct DyXTerm {
  const T* dy;
  const T* x;
  __device__ void operator()(int64_t j, int64_t, double (&v)[1]) const {
    v[0] += double(load_as_float(dy[j])) * double(load_as_float(x[j]));
  }
};

// out[c] = alpha * M(sum) + beta * out[c], in M (the parameters' type) as the CPU's blend.
template <typename M>
struct BlendOut {
  M* out;
  M alpha, beta;
  __device__ void operator()(int64_t c, const double (&v)[1]) const {
    blend_store(out + c, M(v[0]), alpha, beta);
  }
};

template <typename T, typename Term>
void reduce(Handle& h, const ScaleBiasDesc& sd, Term term, void* out, Blend b, const char* name) {
  const ChanPlan plan = plan_channels(sd.outer, sd.channels, sd.inner);
  const size_t need = plan.scratch_doubles(1);
  double* scratch = need ? static_cast<double*>(h.workspace(need * sizeof(double))) : nullptr;
  using M = MathOf<T>;
  channel_sums<1>(h, plan, scratch, term, BlendOut<M>{static_cast<M*>(out), M(b.alpha), M(b.beta)},
                  name);
}

}  // namespace

void scale_bias_bwd_bias(Handle& h, const ScaleBiasDesc& sd, const void* dy, void* dbias,
                         Blend blend) {
  visit_dtype(kAllTypes, sd.dtype, "scale_bias_bwd_bias", Device::kCUDA, [&](auto tag) {
    using T = typename decltype(tag)::type;
    reduce<T>(h, sd, DyTerm<T>{static_cast<const T*>(dy)}, dbias, blend, "scale_bias_bwd_bias");
  });
}

void scale_bias_bwd_data(Handle& h, const ScaleBiasDesc& sd, const void* dy, const void* scale,
                         void* dx, Blend blend) {
  visit_dtype(kAllTypes, sd.dtype, "scale_bias_bwd_data", Device::kCUDA, [&](auto tag) {
    fwd<typename decltype(tag)::type>(h, sd, dy, scale, nullptr, dx, blend);
  });
}

void scale_bias_bwd_scale(Handle& h, const ScaleBiasDesc& sd, const void* dy, const void* x,
                          void* dscale, Blend blend) {
  visit_dtype(kAllTypes, sd.dtype, "scale_bias_bwd_scale", Device::kCUDA, [&](auto tag) {
    using T = typename decltype(tag)::type;
    reduce<T>(h, sd, DyXTerm<T>{static_cast<const T*>(dy), static_cast<const T*>(x)}, dscale, blend,
              "scale_bias_bwd_scale");
  });
}

void scale_bias_fwd(Handle& h, const ScaleBiasDesc& sd, const void* x, const void* scale,
                    const void* bias, void* y, Blend blend) {
  visit_dtype(kAllTypes, sd.dtype, "scale_bias_fwd", Device::kCUDA, [&](auto tag) {
    fwd<typename decltype(tag)::type>(h, sd, x, scale, bias, y, blend);
  });
}

}  // namespace crema::prim::cuda
