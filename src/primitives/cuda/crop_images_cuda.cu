// CUDA crop_images: the crops go to the handle's workspace, then one block per output row of an
// image (grid x: channel and row, grid y: image) with its threads along the row, so the writes
// are coalesced and a mirrored row reads its window backwards, coalesced too. Each output float
// costs 4 bytes written and 1 (8-bit) or 4 (float) read, plus 4 for a mean image (cached: every
// image reads the same one): a batch of 256 CaffeNet crops (3 x 227 x 227) moves about 200 MB.
#include <algorithm>

#include "primitives/crop_images.h"
#include "primitives/cuda/cuda_backend.h"
#include "primitives/cuda/cuda_util.cuh"

namespace crema::prim::cuda {
namespace {

template <typename P>
__global__ void crop_kernel(CropImagesDesc d, const ImageCrop* crops, int first, float* out) {
  const int i = first + int(blockIdx.y);
  const ImageCrop c = crops[i];
  const int ch = int(blockIdx.x) / d.out_h, y = int(blockIdx.x) - ch * d.out_h;
  const P* src =
      static_cast<const P*>(c.pixels) + (int64_t(ch) * c.height + c.y0 + y) * c.pitch + c.x0;
  const float* mean =
      d.mean_image ? d.mean_image + (int64_t(ch) * d.mean_h + c.mean_y0 + y) * d.mean_w + c.mean_x0
                   : nullptr;
  const float value = d.mean_values && !mean ? d.mean_values[ch] : 0.0f;
  float* dst = out + ((int64_t(i) * d.channels + ch) * d.out_h + y) * d.out_w;
  for (int x = threadIdx.x; x < d.out_w; x += blockDim.x) {
    const int from = c.mirror ? d.out_w - 1 - x : x;
    const float m = mean ? mean[from] : value;
    dst[x] = (float(src[from]) - m) * d.scale;
  }
}

}  // namespace

void crop_images(Handle& h, const CropImagesDesc& d, int n, const ImageCrop* crops, float* out) {
  auto* staged = static_cast<ImageCrop*>(h.workspace(size_t(n) * sizeof(ImageCrop)));
  memcpy_async(staged, crops, size_t(n) * sizeof(ImageCrop), 0, h.stream());
  const unsigned rows = unsigned(d.channels) * unsigned(d.out_h);
  const int block = std::min(256, (d.out_w + 31) / 32 * 32);
  for (int first = 0; first < n; first += 65535) {
    const dim3 grid(rows, unsigned(std::min(n - first, 65535)));
    if (d.pixels == PixelType::kUInt8)
      crop_kernel<uint8_t><<<grid, block, 0, stream_of(h)>>>(d, staged, first, out);
    else
      crop_kernel<float><<<grid, block, 0, stream_of(h)>>>(d, staged, first, out);
    check_launch("crop_kernel");
  }
}

}  // namespace crema::prim::cuda
