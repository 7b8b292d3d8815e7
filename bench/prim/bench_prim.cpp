// bench_prim: each crema CUDA primitive against cuDNN's C API on identical random inputs, on the
// layer shapes of LeNet, CaffeNet, GoogLeNet, ResNet-50 and VGG-16 at training batch sizes. Every
// row first checks that both produce the same output (conv and the bias gradient within 1e-3
// relative, a different summation order; the others within 1e-5; dropout, whose masks differ,
// each against its own mask; the solver update, which cuDNN lacks, against the host), then times
// both with CUDA events on one stream (warm-up, median of the repeats, buffers rotated where a
// row would fit in L2, calls under a millisecond replayed as CUDA graphs of about a millisecond
// of calls) and prints a markdown table. A memory-bound row also times a
// device-to-device copy of the bytes it must move, the same way: the ceiling at the row's size.
// A row's samples of crema, cuDNN and the copy are taken in turn, so they share the conditions.
// The last line is the copy ceiling of 1 GiB.
//
// cuDNN is never linked by the library, only by this program. Build it by pointing CMake at a
// cuDNN 9 install, e.g. the one in PyTorch's wheels:
//   NV=$(python3 -c 'import os, torch; print(os.path.realpath(os.path.join(
//        os.path.dirname(torch.__file__), "..", "nvidia")))')
//   cmake -S . -B build -DCREMA_CUDNN_ROOT=$NV/cudnn && cmake --build build --target bench_prim
//   export LD_LIBRARY_PATH=$NV/cudnn/lib:$NV/cublas/lib:$LD_LIBRARY_PATH
//   NVIDIA_TF32_OVERRIDE=0 build/bench/prim/bench_prim [--filter=SUBSTRING] [--repeats=30]
//       [--batch=N] [--crema-algo=auto] [--pool-algo=auto] [--softmax-algo=auto]
//       [--lrn-algo=auto] [--math=fp32|tf32|bf16|fp16] [--layout=nchw|nhwc]
// NVIDIA_TF32_OVERRIDE=0 keeps every library in strict fp32 (the program also sets it when it
// is unset and --math is fp32, before any CUDA library starts); cuDNN's convolutions are also
// set to CUDNN_FMA_MATH. --math=tf32 compares the convolutions with TF32 tensor cores allowed on
// both sides (crema's ConvDesc::math kTF32, cuDNN's CUDNN_TENSOR_OP_MATH, any of its
// algorithms); run it without NVIDIA_TF32_OVERRIDE=0, which would forbid TF32 to both.
// --math=bf16|fp16 gives both libraries the same data rounded to 16-bit activation tensors,
// fp32 accumulation (as PyTorch's autocast runs it, and as crema's layers store activations
// under --precision=bf16|fp16); crema's filter and filter gradient stay fp32. --layout=nhwc
// stores the convolutions' activations channels last on both sides (cuDNN's filter too: KRSC,
// as PyTorch's channels_last keeps it; crema's stays KCRS, its master weights). --filter
// keeps the rows whose "op layer pass" contains the substring (e.g. "conv caffenet:conv2", "bwd
// filter", "pool"); --batch replaces every net's batch size;
// --crema-algo picks crema's convolution algorithm: auto (the heuristic the layers use), find,
// or one by name (implicit_gemm, im2col_gemm, gemm_1x1, direct, winograd). --pool-algo,
// --softmax-algo and
// --lrn-algo pick those ops' rows: auto (the layers' choice), all (auto, then every row that runs
// the layer, one table row each), or one by name (docs/primitives.md lists them).
#include "bench_prim.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

using namespace crema;

bool parse(int argc, char** argv, bench::Options& o) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&](const char* flag, std::string& out) {
      const std::string prefix = std::string(flag) + "=";
      if (a.rfind(prefix, 0) != 0) return false;
      out = a.substr(prefix.size());
      return true;
    };
    std::string v;
    if (value("--filter", v)) {
      o.filter = v;
    } else if (value("--repeats", v)) {
      o.repeats = std::max(1, std::atoi(v.c_str()));
    } else if (value("--batch", v)) {
      o.batch = std::max(0, std::atoi(v.c_str()));
    } else if (value("--crema-algo", v)) {
      o.crema_algo = v;
    } else if (value("--pool-algo", v)) {
      o.pool_algo = v;
    } else if (value("--softmax-algo", v)) {
      o.softmax_algo = v;
    } else if (value("--lrn-algo", v)) {
      o.lrn_algo = v;
    } else if (value("--math", v) && (v == "fp32" || v == "tf32" || v == "bf16" || v == "fp16")) {
      o.math = v;
    } else if (value("--layout", v) && (v == "nchw" || v == "nhwc")) {
      o.nhwc = v == "nhwc";
    } else {
      std::fprintf(stderr,
                   "usage: %s [--filter=SUBSTRING] [--repeats=N] [--batch=N] "
                   "[--crema-algo=auto|find|implicit_gemm|im2col_gemm|gemm_1x1|direct|winograd] "
                   "[--pool-algo=auto|all|ROW] [--softmax-algo=auto|all|ROW] "
                   "[--lrn-algo=auto|all|ROW] [--math=fp32|tf32|bf16|fp16] "
                   "[--layout=nchw|nhwc]\n",
                   argv[0]);
      return false;
    }
  }
  return true;
}

class CudnnHandle : public bench::CudnnObject<cudnnHandle_t, cudnnCreate, cudnnDestroy> {
 public:
  explicit CudnnHandle(cudaStream_t s) { BENCH_CUDNN(cudnnSetStream(d_, s)); }
};

// The bandwidth ceiling: a 1 GiB device-to-device copy, timed as the rows are; it reads and
// writes every byte, so 2 GiB move per copy.
void copy_ceiling(cudaStream_t s, int repeats) {
  const size_t bytes = size_t(1) << 30;
  prim::DeviceBuffer src(prim::Device::kCUDA, bytes), dst(prim::Device::kCUDA, bytes);
  BENCH_CUDA(cudaMemset(src.get(), 0x3C, bytes));
  const double ms = bench::median_ms(s, repeats, [&](int) {
    BENCH_CUDA(cudaMemcpyAsync(dst.get(), src.get(), bytes, cudaMemcpyDeviceToDevice, s));
  });
  std::printf(
      "\nCopy ceiling: cudaMemcpyAsync device to device of 1 GiB: %.3f ms, %.0f GB/s "
      "(bytes read + written)\n",
      ms, 2.0 * double(bytes) / (ms * 1e-3) / 1e9);
}

}  // namespace

int main(int argc, char** argv) {
  bench::Options opt;
  if (!parse(argc, argv, opt)) return 2;
  // Before any CUDA library reads it; an explicit setting in the environment wins.
  if (opt.math == "fp32") setenv("NVIDIA_TF32_OVERRIDE", "0", 0);
  const char* override_env = std::getenv("NVIDIA_TF32_OVERRIDE");
  try {
    if (!prim::cuda_available()) {
      std::fprintf(stderr, "bench_prim: no CUDA GPU visible\n");
      return 1;
    }
    prim::Handle h(prim::Device::kCUDA, 0);
    const auto stream = static_cast<cudaStream_t>(h.stream());
    CudnnHandle dnn(stream);
    int l2 = 0;
    BENCH_CUDA(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, h.device_id()));

    std::printf("%s", prim::cuda_device_description(h.device_id()).c_str());
    std::printf("cuDNN library %zu (headers %d), NVIDIA_TF32_OVERRIDE=%s\n", cudnnGetVersion(),
                int(CUDNN_VERSION), override_env ? override_env : "(unset)");
    std::printf(
        "repeats %d, batch %s, crema conv algo %s, conv math %s, conv layout %s, crema workspace "
        "budget %zu MiB\n\n",
        opt.repeats, opt.batch > 0 ? std::to_string(opt.batch).c_str() : "per net",
        opt.crema_algo.c_str(), opt.math.c_str(), opt.nhwc ? "nhwc" : "nchw",
        h.workspace_budget() >> 20);

    bench::Context c{h, dnn.get(), stream, opt, size_t(l2)};
    bench::print_header();
    bench::run_conv(c);
    bench::run_pool(c);
    bench::run_lrn(c);
    bench::run_softmax(c);
    bench::run_relu(c);
    bench::run_bias(c);
    bench::run_dropout(c);
    bench::run_solver_update(c);
    copy_ceiling(stream, opt.repeats);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_prim: %s\n", e.what());
    return 1;
  }
  return 0;
}
