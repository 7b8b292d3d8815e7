// Pooling: output-size rule, descriptor validation, the implementation table (pool_impl.h) and
// the choice of its row. The rows live in pool_cpu.cpp and the pool_*_cuda.cu files.
#include "primitives/pool.h"

#include <cstdint>
#include <string>

#include "primitives/common/desc_checks.h"
#include "primitives/pool/pool_impl.h"

namespace crema::prim {
namespace {

// Each device's rows in order of preference (the kAuto walk): special shapes before the
// kernels that take any window.
const PoolImpl* const kTable[] = {
#ifdef CREMA_WITH_CUDA
    &cuda::kPoolGlobal,  &cuda::kPoolRows,  &cuda::kPoolPlanes, &cuda::kPoolLanes,
    &cuda::kPoolLanesS2, &cuda::kPoolSweep, &cuda::kPoolWindow,
#endif
    &cpu::kPoolDisjoint, &cpu::kPoolDirect,
};

constexpr std::pair<PoolAlgo, const char*> kNames[] = {
    {PoolAlgo::kAuto, "auto"},     {PoolAlgo::kDisjoint, "disjoint"}, {PoolAlgo::kDirect, "direct"},
    {PoolAlgo::kGlobal, "global"}, {PoolAlgo::kRows, "rows"},         {PoolAlgo::kPlanes, "planes"},
    {PoolAlgo::kLanes, "lanes"},   {PoolAlgo::kLanesS2, "lanes_s2"},  {PoolAlgo::kSweep, "sweep"},
    {PoolAlgo::kWindow, "window"},
};

[[noreturn]] void fail(const std::string& why) { throw PrimError(why); }

// The output size must follow one of the two rounding rules; the window positions (and thus
// the computation) are the same for both, only the count of windows differs.
void check_out_dim(const char* op, const char* axis, int in, int kernel, int pad, int stride,
                   int out) {
  const int ceil_out = pool_out_dim(in, kernel, pad, stride, true);
  const int floor_out = pool_out_dim(in, kernel, pad, stride, false);
  if (out != ceil_out && out != floor_out)
    fail(std::string(op) + ": output " + axis + " is " + std::to_string(out) + ", expected " +
         std::to_string(ceil_out) +
         (ceil_out != floor_out ? " (ceil) or " + std::to_string(floor_out) + " (floor)" : ""));
}

void pool_check(const char* op, const PoolDesc& pd, const TensorDesc& xd, const TensorDesc& yd) {
  if (xd.dtype != yd.dtype) fail(std::string(op) + ": input and output data types differ");
  if (xd.n < 1 || xd.c < 1 || xd.h < 1 || xd.w < 1)
    fail(std::string(op) + ": empty input " + dims(xd));
  if (yd.n != xd.n || yd.c != xd.c)
    fail(std::string(op) + ": output " + dims(yd) + " does not match input " + dims(xd) +
         " in batch or channels");
  if (pd.mode != PoolMode::kMax && pd.mode != PoolMode::kAverage &&
      pd.mode != PoolMode::kAverageExcludePad)
    fail(std::string(op) + ": unknown pooling mode");
  check_out_dim(op, "height", xd.h, pd.kernel_h, pd.pad_h, pd.stride_h, yd.h);
  check_out_dim(op, "width", xd.w, pd.kernel_w, pd.pad_w, pd.stride_w, yd.w);
}

}  // namespace

int pool_out_dim(int in, int kernel, int pad, int stride, bool ceil_mode) {
  if (in < 1 || kernel < 1 || pad < 0 || stride < 1)
    fail("pool: invalid size (input " + std::to_string(in) + ", kernel " + std::to_string(kernel) +
         ", pad " + std::to_string(pad) + ", stride " + std::to_string(stride) + ")");
  if (pad >= kernel)
    fail("pool: pad " + std::to_string(pad) + " must be smaller than the kernel " +
         std::to_string(kernel));
  const int64_t padded = int64_t(in) + 2 * int64_t(pad);
  if (kernel > padded)
    fail("pool: kernel " + std::to_string(kernel) + " is larger than the padded input " +
         std::to_string(padded));
  const int64_t span = padded - kernel;
  int64_t out = (ceil_mode ? (span + stride - 1) / stride : span / stride) + 1;
  // Caffe's clip: with padding, the last window must start inside the input plus the top/left
  // pad, else it would only cover padding.
  if (pad > 0 && (out - 1) * stride >= int64_t(in) + pad) --out;
  return int(out);
}

const char* pool_algo_name(PoolAlgo a) { return name_in(kNames, a); }

PoolAlgo pool_algo_of(const std::string& name) { return algo_in(kNames, name, "pool"); }

std::vector<PoolAlgo> pool_algos(Device device) { return table_algos(kTable, device); }

namespace {

const char* op_name(const PoolArgs& a) { return a.forward() ? "pool_fwd" : "pool_bwd"; }

// "f32 max k3x3 pad1,1 str2,2 x128x64x56x56/strides y.../strides".
std::string call_key(const PoolArgs& a) {
  auto tensor = [](const TensorDesc& d) {
    return dims(d) + "/" + std::to_string(d.stride_n) + "," + std::to_string(d.stride_c) + "," +
           std::to_string(d.stride_h) + "," + std::to_string(d.stride_w);
  };
  const PoolDesc& pd = a.pd;
  const char* mode = pd.mode == PoolMode::kMax       ? "max"
                     : pd.mode == PoolMode::kAverage ? "avg"
                                                     : "avg_excl";
  return std::string(dtype_name(a.xd.dtype)) + " " + mode + " k" + std::to_string(pd.kernel_h) +
         "x" + std::to_string(pd.kernel_w) + " pad" + std::to_string(pd.pad_h) + "," +
         std::to_string(pd.pad_w) + " str" + std::to_string(pd.stride_h) + "," +
         std::to_string(pd.stride_w) + " x" + tensor(a.xd) + " y" + tensor(a.yd);
}

void run(Handle& h, const PoolArgs& a) {
  choose_row(kTable, h, a.pd.algo, a, op_name(a), pool_algo_name, [&] {
    return call_key(a);
  }).run(h, a);
}

PoolArgs fwd_args(const PoolDesc& pd, const TensorDesc& xd, const void* x, const TensorDesc& yd,
                  const void* y, Blend blend) {
  return PoolArgs{PoolPass::kForward, pd, xd, yd, x, nullptr, nullptr, const_cast<void*>(y), blend};
}

PoolArgs bwd_args(const PoolDesc& pd, const TensorDesc& yd, const void* y, const void* dy,
                  const TensorDesc& xd, const void* x, const void* dx, Blend blend) {
  return PoolArgs{PoolPass::kBackward, pd, xd, yd, x, y, dy, const_cast<void*>(dx), blend};
}

}  // namespace

void pool_fwd(Handle& h, const PoolDesc& pd, const TensorDesc& xd, const void* x,
              const TensorDesc& yd, void* y, Blend blend) {
  pool_check("pool_fwd", pd, xd, yd);
  if (!x || !y) fail("pool_fwd: null data pointer");
  run(h, fwd_args(pd, xd, x, yd, y, blend));
}

void pool_bwd(Handle& h, const PoolDesc& pd, const TensorDesc& yd, const void* y, const void* dy,
              const TensorDesc& xd, const void* x, void* dx, Blend blend) {
  pool_check("pool_bwd", pd, xd, yd);
  if (!dy || !dx || (pd.mode == PoolMode::kMax && (!x || !y))) fail("pool_bwd: null data pointer");
  run(h, bwd_args(pd, yd, y, dy, xd, x, dx, blend));
}

const char* pool_fwd_unsupported(Handle& h, const PoolDesc& pd, const TensorDesc& xd, const void* x,
                                 const TensorDesc& yd, const void* y, Blend blend) {
  return forced_unsupported(kTable, h.device(), pd.algo, fwd_args(pd, xd, x, yd, y, blend));
}

const char* pool_bwd_unsupported(Handle& h, const PoolDesc& pd, const TensorDesc& yd, const void* y,
                                 const void* dy, const TensorDesc& xd, const void* x,
                                 const void* dx, Blend blend) {
  return forced_unsupported(kTable, h.device(), pd.algo, bwd_args(pd, yd, y, dy, xd, x, dx, blend));
}

}  // namespace crema::prim
