// The TF32 backward filter over padded planes (conv_wgrad_planes.cuh): its support rule, the
// plane-major copies of x and dy, the depth splits, and the finish into dw's [k][c][r][s]. The
// implicit GEMM's Hopper row runs it for every stride-1 TF32 backward filter it supports.
#include <algorithm>

#include "primitives/common/batch_slices.h"
#include "primitives/common/fast_div.h"
#include "primitives/conv/conv_cuda.cuh"
#include "primitives/conv/conv_igemm.cuh"
#include "primitives/conv/conv_igemm_wgrad.cuh"
#include "primitives/conv/conv_wgrad_planes.cuh"

namespace crema::prim::cuda {
#ifdef CREMA_WITH_SM90A
namespace {

using igemm::PlanesGeo;

// The copies of a slice of images stay within this (CaffeNet's conv2 at batch 256: 346 MB).
constexpr int64_t kPlanesSliceBytes = int64_t(512) << 20;

int64_t padded_plane(const ConvProblem& p) {
  return int64_t(p.xd.h + 2 * p.cd.pad_h) * (p.xd.w + 2 * p.cd.pad_w);
}

// dst[c][v] for v < depth (rows of `depth` values) = tf32(src[n][c][y - oy][x - ox]) where
// v = (n hp + y) wp + x lies in the first `valid` values and (y - oy, x - ox) in the source's
// hs x ws plane, else zero. A thread per value: the writes coalesce, and so do the reads along a
// source row.
__global__ void to_planes_kernel(int hs, int ws, int oy, int ox, FastDiv plane, FastDiv row,
                                 int valid, int depth, int64_t sn, int64_t sc, int64_t sh,
                                 int64_t sw, const float* __restrict__ src,
                                 uint32_t* __restrict__ dst) {
  const int v = int(blockIdx.x) * blockDim.x + threadIdx.x;
  if (v >= depth) return;
  const int c = blockIdx.y;
  float value = 0.f;
  if (v < valid) {
    const int n = int(plane.div(uint32_t(v))), at = v - n * int(plane.d);
    const int yp = int(row.div(uint32_t(at))), y = yp - oy, x = at - yp * int(row.d) - ox;
    if (igemm::inside(y, x, hs, ws)) value = src[n * sn + c * sc + y * sh + x * sw];
  }
  dst[int64_t(c) * depth + v] = igemm::tf32(value);
}

// The tensor d (f32, any strides) as plane-major rows in the padded planes of g.
void to_planes(cudaStream_t st, const TensorDesc& d, const void* src, const ConvProblem& p,
               const PlanesGeo& g, int oy, int ox, uint32_t* dst) {
  const dim3 grid((g.depth + 255) / 256, d.c);
  to_planes_kernel<<<grid, 256, 0, st>>>(d.h, d.w, oy, ox, FastDiv(uint32_t(padded_plane(p))),
                                         FastDiv(uint32_t(g.wp)), int(d.n * padded_plane(p)),
                                         g.depth, d.stride_n, d.stride_c, d.stride_h, d.stride_w,
                                         static_cast<const float*>(src), dst);
  check_launch("to_planes_kernel");
}

PlanesGeo geo_of(Handle& h, const ConvProblem& p) {
  const ConvDesc& cd = p.cd;
  PlanesGeo g{};
  g.kg = p.wd.k / cd.groups;
  g.cg = p.wd.c;
  g.s = p.wd.s;
  g.rows = p.wd.r * p.wd.s * g.cg;
  g.wp = p.xd.w + 2 * cd.pad_w;
  g.dh = cd.dilation_h, g.dw = cd.dilation_w;
  g.depth = int((p.xd.n * padded_plane(p) + 3) / 4 * 4);
  g.k = p.wd.k;
  // Splits: about two blocks an SM over the grid (a block fills one), at least 8 k-tiles a
  // split, the partial filters within the workspace budget, the grid's z within 65535.
  const int width = igemm::planes_width(g.kg);
  const int64_t blocks = int64_t((g.rows + igemm::kPlanesTileM - 1) / igemm::kPlanesTileM) *
                         ((g.kg + width - 1) / width) * cd.groups;
  const int k_tiles = (g.depth + igemm::kPlanesDepth - 1) / igemm::kPlanesDepth;
  const int64_t filter_bytes = int64_t(g.k) * g.rows * int64_t(sizeof(float));
  const igemm::DepthSplits d =
      igemm::depth_splits(blocks, k_tiles, 2, 8, filter_bytes, h.workspace_budget(), cd.groups);
  g.splits = d.splits, g.tiles = d.tiles;
  return g;
}

// Workspace: x's copy, dy's copy, the partial filters; each 256-byte aligned.
struct Carving {
  size_t dy, part, total;
};
Carving carving_of(const ConvProblem& p, const PlanesGeo& g) {
  Carving l{};
  l.dy = round256(size_t(p.wd.c) * p.cd.groups * size_t(g.depth) * 4);
  l.part = l.dy + round256(size_t(g.k) * size_t(g.depth) * 4);
  l.total = l.part + size_t(g.splits) * size_t(g.k) * size_t(g.rows) * sizeof(float);
  return l;
}

// Images a slice: the copies of a slice within kPlanesSliceBytes.
int planes_slice(const ConvProblem& p) {
  const int64_t image =
      int64_t(p.wd.c * p.cd.groups + p.wd.k) * padded_plane(p) * int64_t(sizeof(float));
  if (image * p.xd.n <= kPlanesSliceBytes) return p.xd.n;
  return even_slice(p.xd.n, kPlanesSliceBytes / image);
}

void run(Handle& h, const ConvProblem& p, const void* x, const void* dy, float* dw, Blend blend) {
  const PlanesGeo g = geo_of(h, p);
  const Carving l = carving_of(p, g);
  char* ws = static_cast<char*>(h.workspace(l.total));
  auto* xp = reinterpret_cast<uint32_t*>(ws);
  auto* dyp = reinterpret_cast<uint32_t*>(ws + l.dy);
  auto* part = reinterpret_cast<float*>(ws + l.part);
  cudaStream_t st = stream_of(h);
  to_planes(st, p.xd, x, p, g, p.cd.pad_h, p.cd.pad_w, xp);
  to_planes(st, p.yd, dy, p, g, 0, 0, dyp);
  igemm::wgrad_planes_launch(st, g, dyp, xp, part, p.cd.groups);
  igemm::wgrad_finish(st, g.splits, p.wd.k, p.wd.c, p.wd.c, p.wd.r * p.wd.s, part, dw, blend);
}

}  // namespace

const char* wgrad_planes_unsupported(const ConvProblem& p) {
  const ConvDesc& cd = p.cd;
  if (cd.math != MathMode::kTF32) return "TF32 math only";
  if (p.xd.dtype != DataType::kFloat32 || p.yd.dtype != DataType::kFloat32)
    return "f32 tensors only";
  if (cd.stride_h != 1 || cd.stride_w != 1) return "stride 1 only";
  if (p.wd.c % igemm::kPlanesBoxRows) return "channels of a group a multiple of 8";
  if (p.wd.k < igemm::planes_width(p.wd.k / cd.groups)) return "fewer output channels than a tile";
  if (int64_t(p.wd.c) * cd.groups > 65535 || p.wd.k > 65535)
    return "more than 65535 input or output channels";
  const int64_t depth = int64_t(planes_slice(p)) * padded_plane(p);
  if (depth >= (int64_t(1) << 30) || depth < 64) return "padded planes out of the kernel's range";
  return nullptr;
}

size_t wgrad_planes_workspace(Handle& h, const ConvProblem& p) {
  const ConvProblem s = ImageSlice(p, planes_slice(p)).of(p);
  return carving_of(s, geo_of(h, s)).total;
}

void wgrad_planes_run(Handle& h, const ConvProblem& p, const void* x, const void* dy, float* dw,
                      Blend blend) {
  filter_over_slices(p, planes_slice(p), x, dy, blend,
                     [&](const ConvProblem& s, const void* xs, const void* dys, Blend b) {
                       run(h, s, xs, dys, dw, b);
                     });
}

#else  // the kernel is built for sm_90a alone

const char* wgrad_planes_unsupported(const ConvProblem&) { return "built without sm_90a code"; }
size_t wgrad_planes_workspace(Handle&, const ConvProblem&) { return 0; }
void wgrad_planes_run(Handle&, const ConvProblem&, const void*, const void*, float*, Blend) {
  throw PrimError("wgrad over padded planes: built without sm_90a code");
}

#endif
}  // namespace crema::prim::cuda
