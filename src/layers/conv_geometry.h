// Reading the 2-d geometry of a convolution_param (kernel, pad, stride, dilation, given as the
// repeated fields or the _h/_w pairs), for the layers that take it: Convolution, Deconvolution
// and Im2col.
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

// Throws crema::Error (without a layer name: the overload below adds it) for a missing or
// non-positive kernel, a non-positive stride or dilation, sizes past 2^30, more than 2 values, or
// both forms of one field.
ConvGeometry read_conv_geometry(const ConvolutionParameter& p);

// The same for a layer's setup: the error names the layer.
template <typename Dtype>
ConvGeometry read_conv_geometry(const Layer<Dtype>& layer, const ConvolutionParameter& p) {
  try {
    return read_conv_geometry(p);
  } catch (const Error& e) {
    layer.error(e.what());
  }
}

}  // namespace crema
