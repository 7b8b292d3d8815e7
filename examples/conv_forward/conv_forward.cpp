// conv_forward: a forward convolution on the crema primitives library alone, the way a program
// outside crema uses it. It describes a batch of images, a filter bank and the convolution, asks
// the library for the output size, the algorithm and its workspace, then runs the same code on
// the GPU (when one is visible) and on the CPU and checks that the two results agree.
//
// Build it against an installed crema (docs/primitives.md):
//   cmake -S examples/conv_forward -B build-example -DCMAKE_PREFIX_PATH=<prefix>
//   cmake --build build-example && build-example/conv_forward
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "primitives/conv.h"
#include "primitives/handle.h"
#include "primitives/types.h"

namespace prim = crema::prim;

namespace {

// The problem, with the channels, kernel and stride of the first layer of a large ImageNet
// network (96 input channels, 7x7, stride 2) but a small batch and image, so the CPU run takes a
// fraction of a second.
constexpr int kBatch = 2, kChannels = 96, kImage = 55;
constexpr int kFilters = 256, kKernel = 7, kPad = 3, kStride = 2;

// Runs y = conv(x, w) with a handle on `device`: copies x and w there, queries the algorithm and
// its workspace, runs conv_fwd and copies y back. The same code serves both devices; every
// pointer a primitive takes is memory of its handle's device.
std::vector<float> run_conv(prim::Device device, const prim::ConvDesc& cd,
                            const prim::TensorDesc& xd, const std::vector<float>& x,
                            const prim::FilterDesc& wd, const std::vector<float>& w,
                            const prim::TensorDesc& yd) {
  prim::Handle handle(device);
  const prim::ConvAlgo algo = prim::conv_heuristic(handle, cd, xd, wd, yd);
  const size_t workspace = prim::conv_workspace_size(handle, algo, cd, xd, wd, yd);
  std::printf("%s: algorithm %s, workspace %zu bytes\n",
              device == prim::Device::kCPU ? "CPU" : "GPU", prim::conv_algo_name(algo), workspace);
  handle.workspace(workspace);  // the handle owns it; allocating now keeps conv_fwd from doing so

  const prim::Device host = prim::Device::kCPU;
  prim::DeviceBuffer x_dev(device, x.size() * sizeof(float));
  prim::DeviceBuffer w_dev(device, w.size() * sizeof(float));
  prim::DeviceBuffer y_dev(device, size_t(yd.count()) * sizeof(float));
  prim::device_memcpy(x_dev.get(), device, x.data(), host, x_dev.bytes());
  prim::device_memcpy(w_dev.get(), device, w.data(), host, w_dev.bytes());

  // y = 1 * conv(x, w) + 0 * y: beta 0 never reads y, so y needs no initialisation.
  prim::conv_fwd(handle, cd, algo, xd, x_dev.get(), wd, w_dev.get(), yd, y_dev.get());
  handle.synchronize();

  std::vector<float> y(size_t(yd.count()));
  prim::device_memcpy(y.data(), host, y_dev.get(), device, y_dev.bytes());
  return y;
}

// One output element by the definition in conv.h, in double: the check that needs no GPU.
double reference_at(const std::vector<float>& x, const std::vector<float>& w, int n, int k, int p,
                    int q) {
  double sum = 0;
  for (int c = 0; c < kChannels; ++c)
    for (int r = 0; r < kKernel; ++r)
      for (int s = 0; s < kKernel; ++s) {
        const int h = p * kStride - kPad + r, v = q * kStride - kPad + s;
        if (h < 0 || h >= kImage || v < 0 || v >= kImage) continue;
        sum += double(x[((size_t(n) * kChannels + c) * kImage + h) * kImage + v]) *
               w[((size_t(k) * kChannels + c) * kKernel + r) * kKernel + s];
      }
  return sum;
}

}  // namespace

int main() try {
  // 1. Describe the input batch, the filters and the convolution.
  const auto f32 = prim::DataType::kFloat32;
  const prim::TensorDesc xd = prim::TensorDesc::nchw(f32, kBatch, kChannels, kImage, kImage);
  const prim::FilterDesc wd{f32, kFilters, kChannels, kKernel, kKernel};
  prim::ConvDesc cd;
  cd.pad_h = cd.pad_w = kPad;
  cd.stride_h = cd.stride_w = kStride;

  // 2. Ask for the output size and describe the output.
  const int out = prim::conv_out_dim(kImage, kKernel, kPad, kStride, /*dilation=*/1);
  const prim::TensorDesc yd = prim::TensorDesc::nchw(f32, kBatch, kFilters, out, out);
  prim::conv_check(cd, xd, wd, yd);
  std::printf("input %d x %d x %d x %d, filter %d x %d x %d x %d, pad %d, stride %d\n", xd.n, xd.c,
              xd.h, xd.w, wd.k, wd.c, wd.r, wd.s, kPad, kStride);
  std::printf("output %d x %d x %d x %d\n", yd.n, yd.c, yd.h, yd.w);

  // 3. Random inputs, fixed seed.
  std::mt19937 rng(42);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::vector<float> x(size_t(xd.count())), w(size_t(wd.count()));
  for (float& v : x) v = uniform(rng);
  for (float& v : w) v = uniform(rng);

  // 4. The CPU result, spot-checked against the definition at 16 outputs (border rows included).
  const std::vector<float> y_cpu = run_conv(prim::Device::kCPU, cd, xd, x, wd, w, yd);
  double scale = 1;  // the tolerances are relative to the largest output
  for (float v : y_cpu) scale = std::max(scale, double(std::abs(v)));
  double spot_diff = 0;
  for (int i = 0; i < 16; ++i) {
    const int n = i % kBatch, k = (i * 37) % kFilters, p = (i * 5) % out, q = (i * 11 + 3) % out;
    const size_t at = ((size_t(n) * kFilters + k) * out + p) * out + q;
    spot_diff = std::max(spot_diff, std::abs(y_cpu[at] - reference_at(x, w, n, k, p, q)));
  }
  std::printf("CPU vs definition at 16 outputs: max abs difference %.3g\n", spot_diff);
  bool ok = spot_diff <= 1e-4 * scale;

  // 5. The GPU result, compared with the CPU one.
  if (prim::cuda_available()) {
    const std::vector<float> y_gpu = run_conv(prim::Device::kCUDA, cd, xd, x, wd, w, yd);
    double diff = 0;
    for (size_t i = 0; i < y_cpu.size(); ++i)
      diff = std::max(diff, double(std::abs(y_gpu[i] - y_cpu[i])));
    std::printf("GPU vs CPU: max abs difference %.3g (largest output %.3g)\n", diff, scale);
    ok = ok && diff <= 1e-4 * scale;
  } else {
    std::printf("no GPU visible: ran on the CPU only\n");
  }
  std::printf("conv_forward: %s\n", ok ? "OK" : "MISMATCH");
  return ok ? 0 : 1;
} catch (const prim::PrimError& e) {
  std::fprintf(stderr, "conv_forward: error: %s\n", e.what());
  return 1;
}
