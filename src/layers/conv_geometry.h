// Reading the 2-d geometry of a convolution_param (kernel, pad, stride, dilation, given as the
// repeated fields or the _h/_w pairs), for the layers that take it: Convolution, Deconvolution
// and Im2col.
#pragma once

#include "crema.pb.h"

namespace crema {

struct ConvGeometry {
  int kernel_h = 0, kernel_w = 0;
  int pad_h = 0, pad_w = 0;
  int stride_h = 1, stride_w = 1;
  int dilation_h = 1, dilation_w = 1;
};

// Throws crema::Error (without a layer name: callers add it) for a missing or non-positive
// kernel, a non-positive stride or dilation, more than 2 values, or both forms of one field.
ConvGeometry read_conv_geometry(const ConvolutionParameter& p);

}  // namespace crema
