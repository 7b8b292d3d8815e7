// Helpers for the loss layer tests: building a layer class directly from a prototxt snippet and
// running forward to read the scalar loss.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "gradient_checker.h"

namespace crema::test {

template <template <typename> class L, typename Dtype = double>
std::unique_ptr<L<Dtype>> make_direct(const std::string& text) {
  return std::make_unique<L<Dtype>>(layer_param(text), Device::kCPU);
}

// Sets the layer up on the tensors and returns its forward loss.
template <typename Dtype>
double forward_loss(Layer<Dtype>& layer, TensorSet<Dtype>& bottom, TensorSet<Dtype>& top) {
  layer.setup(*bottom, *top);
  EXPECT_TRUE(layer.is_loss());
  EXPECT_EQ(top[0]->count(), 1);
  Handle h;
  layer.forward(h, *bottom, *top);
  return double(top[0]->data_vector()[0]);
}

}  // namespace crema::test
