// Reading the 2-d geometry of a convolution_param (kernel, pad, stride, dilation, given as the
// repeated fields or the _h/_w pairs), for the layers that take it: Convolution, Deconvolution
// and Im2col; and the num_output and group of the first two.
#pragma once

#include "core/errors.h"
#include "core/layer.h"
#include "crema.pb.h"
#include "primitives/conv.h"

namespace crema {

struct ConvGeometry {
  int kernel_h = 0, kernel_w = 0;
  int pad_h = 0, pad_w = 0;
  int stride_h = 1, stride_w = 1;
  int dilation_h = 1, dilation_w = 1;

  // The primitives' descriptor of this geometry with `groups` groups.
  prim::ConvDesc conv_desc(int groups) const {
    return prim::ConvDesc{pad_h, pad_w, stride_h, stride_w, dilation_h, dilation_w, groups};
  }
};

// num_output and group of a Convolution or Deconvolution layer.
struct ConvChannels {
  int num_output = 0;
  int groups = 1;
};

// Throws crema::Error (without a layer name: the overloads below add it) for a missing or
// non-positive kernel, a non-positive stride or dilation, sizes past 2^30, more than 2 values, or
// both forms of one field.
ConvGeometry read_conv_geometry(const ConvolutionParameter& p);

// Throws crema::Error unless num_output and group are in [1, 2^30] and both the input's
// `channels` and num_output are divisible by group.
ConvChannels read_conv_channels(const ConvolutionParameter& p, int64_t channels);

// Returns f(); a crema::Error it throws is thrown again as the layer's, naming it.
template <typename Dtype, typename F>
auto named_by(const Layer<Dtype>& layer, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const Error& e) {
    layer.error(e.what());
  }
}

template <typename Dtype>
ConvGeometry read_conv_geometry(const Layer<Dtype>& layer, const ConvolutionParameter& p) {
  return named_by(layer, [&] { return read_conv_geometry(p); });
}

template <typename Dtype>
ConvChannels read_conv_channels(const Layer<Dtype>& layer, const ConvolutionParameter& p,
                                int64_t channels) {
  return named_by(layer, [&] { return read_conv_channels(p, channels); });
}

}  // namespace crema
