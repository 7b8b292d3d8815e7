// convolution_param geometry: the repeated-or-pair rules and their range checks.
#include "layers/conv_geometry.h"

#include <cstdint>

#include "core/errors.h"

namespace crema {
namespace {

// The largest size accepted from the uint32 fields: the primitives index with int.
constexpr uint32_t kMaxSize = (uint32_t(1) << 30);

// A 2-d size given as a repeated field (0, 1 or 2 values) or as the _h/_w pair; returns false
// when neither form is present (the outputs then hold default_value).
template <typename Repeated>
bool read_pair(const Repeated& values, bool has_h, bool has_w, uint32_t h, uint32_t w,
               int default_value, const char* name, int* out_h, int* out_w) {
  auto checked = [name](uint32_t v) {
    CREMA_REQUIRE(v <= kMaxSize, name, " ", v, " is too large");
    return int(v);
  };
  if (has_h || has_w) {
    CREMA_REQUIRE(values.size() == 0, "give either ", name, " or ", name, "_h/", name,
                  "_w, not both");
    CREMA_REQUIRE(has_h && has_w, "both ", name, "_h and ", name, "_w are needed");
    *out_h = checked(h);
    *out_w = checked(w);
    return true;
  }
  CREMA_REQUIRE(values.size() <= 2, name, " has ", values.size(),
                " values; only 2-d convolution is supported");
  if (values.size() == 0) {
    *out_h = *out_w = default_value;
    return false;
  }
  *out_h = checked(values.Get(0));
  *out_w = checked(values.Get(values.size() == 1 ? 0 : 1));
  return true;
}

}  // namespace

ConvGeometry read_conv_geometry(const ConvolutionParameter& p) {
  ConvGeometry g;
  CREMA_REQUIRE(read_pair(p.kernel_size(), p.has_kernel_h(), p.has_kernel_w(), p.kernel_h(),
                          p.kernel_w(), 0, "kernel", &g.kernel_h, &g.kernel_w),
                "kernel_size (or kernel_h and kernel_w) is required");
  CREMA_REQUIRE(g.kernel_h > 0 && g.kernel_w > 0, "kernel size must be positive, got ", g.kernel_h,
                "x", g.kernel_w);
  read_pair(p.pad(), p.has_pad_h(), p.has_pad_w(), p.pad_h(), p.pad_w(), 0, "pad", &g.pad_h,
            &g.pad_w);
  read_pair(p.stride(), p.has_stride_h(), p.has_stride_w(), p.stride_h(), p.stride_w(), 1, "stride",
            &g.stride_h, &g.stride_w);
  CREMA_REQUIRE(g.stride_h > 0 && g.stride_w > 0, "stride must be positive, got ", g.stride_h, "x",
                g.stride_w);
  CREMA_REQUIRE(p.dilation_size() <= 2, "dilation has ", p.dilation_size(),
                " values; only 2-d convolution is supported");
  for (uint32_t v : p.dilation())
    CREMA_REQUIRE(v > 0 && v <= kMaxSize, "dilation must be in [1, ", kMaxSize, "], got ", v);
  g.dilation_h = p.dilation_size() > 0 ? int(p.dilation(0)) : 1;
  g.dilation_w = p.dilation_size() > 1 ? int(p.dilation(1)) : g.dilation_h;
  return g;
}

ConvChannels read_conv_channels(const ConvolutionParameter& p, int64_t channels) {
  CREMA_REQUIRE(p.num_output() > 0 && p.num_output() <= kMaxSize, "num_output must be in [1, ",
                kMaxSize, "], got ", p.num_output());
  CREMA_REQUIRE(p.group() > 0 && p.group() <= kMaxSize, "group must be in [1, ", kMaxSize,
                "], got ", p.group());
  const ConvChannels c{int(p.num_output()), int(p.group())};
  CREMA_REQUIRE(channels % c.groups == 0, "input channels (", channels,
                ") must be divisible by group (", c.groups, ")");
  CREMA_REQUIRE(c.num_output % c.groups == 0, "num_output (", c.num_output,
                ") must be divisible by group (", c.groups, ")");
  return c;
}

}  // namespace crema
