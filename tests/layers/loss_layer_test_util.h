// Helpers for the loss layer tests: building a layer class directly from a prototxt snippet,
// running forward to read the scalar loss, and asserting a setup error's text.
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

// Runs f, which must throw crema::Error containing text.
template <typename F>
void expect_error(F f, const std::string& text) {
  try {
    f();
    ADD_FAILURE() << "no error, expected: " << text;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
  }
}

}  // namespace crema::test
