// The conversion of one crema layer into ONNX nodes (opset 17), used by the exporter
// (onnx_export.h). Each converter reads the layer's parameters, its learned blobs and the shapes
// the Net inferred, and writes nodes whose last outputs are the names the exporter picked for
// the layer's tops.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/layer.h"
#include "core/tensor.h"
#include "export/onnx_graph.h"

namespace crema {

struct OnnxLayerContext {
  Layer<float>* layer = nullptr;
  std::vector<const Tensor<float>*> bottoms, tops;  // the Net's tensors: their shapes
  std::vector<std::string> inputs;                  // ONNX values holding the bottoms
  std::vector<std::string> outputs;                 // ONNX names the tops must get
  OnnxGraph* graph = nullptr;
  bool dynamic_batch = false;  // axis 0 of the graph's inputs is symbolic

  const LayerParameter& param() const { return layer->param(); }
  const std::string& name() const { return layer->name(); }
  // Throws crema::Error "layer <name> (<type>): <parts>".
  template <typename... Parts>
  [[noreturn]] void error(const Parts&... parts) const {
    layer->error(parts...);
  }
  // Learned blob i as float32 values, and its shape.
  std::vector<float> blob_values(int i) const;
  std::vector<int64_t> blob_shape(int i) const;
  int num_blobs() const { return int(layer->blobs().size()); }
};

// The shape input of an ONNX Reshape from `from` to `to` (the Net's shapes). With a symbolic
// batch, axis 0 is 0 (copied from the input) where both shapes keep the batch there, else -1
// (inferred), so the graph runs at any batch size.
std::vector<int64_t> reshape_target(const std::vector<int64_t>& from,
                                    const std::vector<int64_t>& to, bool dynamic_batch);
// Reshape of `input` to the Net's `to` shape; returns the output name (output_name when given).
std::string emit_reshape(OnnxLayerContext& c, const std::string& input,
                         const std::vector<int64_t>& from, const std::vector<int64_t>& to,
                         const std::string& output_name);

// Converters by layer type, in two files: onnx_layers_nn.cpp (convolutions, pooling, LRN,
// inner product, normalization, scale and bias) and onnx_layers_tensor.cpp (activations,
// element-wise, and the layers that move data: concat, slice, reshape, crop, softmax).
void convert_convolution(OnnxLayerContext& c);
void convert_deconvolution(OnnxLayerContext& c);
void convert_pooling(OnnxLayerContext& c);
void convert_lrn(OnnxLayerContext& c);
void convert_inner_product(OnnxLayerContext& c);
void convert_prelu(OnnxLayerContext& c);
void convert_scale(OnnxLayerContext& c);
void convert_bias(OnnxLayerContext& c);
// A BatchNorm with the stored statistics; `scale` (may be null) is the per-channel Scale layer
// that follows it in place, folded into the same BatchNormalization node.
void convert_batch_norm(OnnxLayerContext& c, const OnnxLayerContext* scale);
// Whether `scale` can be folded into the BatchNorm before it: a learned per-channel scale on
// axis 1 of the BatchNorm's output.
bool scale_folds_into_batch_norm(const OnnxLayerContext& batch_norm, const OnnxLayerContext& scale);

void convert_activation(OnnxLayerContext& c);  // ReLU, ELU, Sigmoid, TanH, AbsVal, BNLL, ...
void convert_eltwise(OnnxLayerContext& c);
void convert_concat(OnnxLayerContext& c);
void convert_slice(OnnxLayerContext& c);
void convert_flatten(OnnxLayerContext& c);
void convert_reshape(OnnxLayerContext& c);
void convert_softmax(OnnxLayerContext& c);
void convert_crop(OnnxLayerContext& c);
void convert_argmax(OnnxLayerContext& c);
void convert_tile(OnnxLayerContext& c);
void convert_reduction(OnnxLayerContext& c);
void convert_parameter(OnnxLayerContext& c);
void convert_mvn(OnnxLayerContext& c);

// Whether convert_activation handles the type.
bool is_onnx_activation(const std::string& type);

}  // namespace crema
