// Pooling: output-size rule, descriptor validation and the one device dispatcher.
#include "primitives/pool.h"

#include <cstdint>
#include <string>

#include "primitives/dispatch.h"

namespace crema::prim {

// The implementations (pool_cpu.cpp, pool_cuda.cu), with the public signatures.
CREMA_BACKENDS(void pool_fwd(Handle& h, const PoolDesc& pd, const TensorDesc& xd, const void* x,
                             const TensorDesc& yd, void* y, Blend blend);
               void pool_bwd(Handle& h, const PoolDesc& pd, const TensorDesc& yd, const void* y,
                             const void* dy, const TensorDesc& xd, const void* x, void* dx,
                             Blend blend);)

namespace {

[[noreturn]] void fail(const std::string& why) { throw PrimError(why); }

std::string dims(const TensorDesc& d) {
  return std::to_string(d.n) + "x" + std::to_string(d.c) + "x" + std::to_string(d.h) + "x" +
         std::to_string(d.w);
}

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

void pool_fwd(Handle& h, const PoolDesc& pd, const TensorDesc& xd, const void* x,
              const TensorDesc& yd, void* y, Blend blend) {
  pool_check("pool_fwd", pd, xd, yd);
  if (!x || !y) fail("pool_fwd: null data pointer");
  CREMA_DISPATCH(h, pool_fwd, h, pd, xd, x, yd, y, blend);
}

void pool_bwd(Handle& h, const PoolDesc& pd, const TensorDesc& yd, const void* y, const void* dy,
              const TensorDesc& xd, const void* x, void* dx, Blend blend) {
  pool_check("pool_bwd", pd, xd, yd);
  if (!dy || !dx || (pd.mode == PoolMode::kMax && (!x || !y))) fail("pool_bwd: null data pointer");
  CREMA_DISPATCH(h, pool_bwd, h, pd, yd, y, dy, xd, x, dx, blend);
}

}  // namespace crema::prim
