// The exporter's driver: graph inputs from the Input layers, one converter per layer in the
// Net's order, value names kept as Caffe's blob names, outputs, the onnx checker and shape
// inference, and the atomic write.
#include "export/onnx_export.h"

#include <onnx/checker.h>
#include <onnx/shape_inference/implementation.h>

#include <functional>
#include <map>
#include <set>
#include <sstream>

#include "core/proto_io.h"
#include "core/upgrade_proto.h"
#include "export/onnx_layers.h"

namespace crema {
namespace {

constexpr int kOpset = 17;
constexpr int kIrVersion = 8;  // the IR version of opset 17
const char* const kBatchSymbol = "N";

using Converter = std::function<void(OnnxLayerContext&)>;

const std::map<std::string, Converter>& converters() {
  static const std::map<std::string, Converter> table = {
      {"ArgMax", convert_argmax},
      {"Bias", convert_bias},
      {"Concat", convert_concat},
      {"Convolution", convert_convolution},
      {"Crop", convert_crop},
      {"Deconvolution", convert_deconvolution},
      {"Eltwise", convert_eltwise},
      {"Flatten", convert_flatten},
      {"InnerProduct", convert_inner_product},
      {"LRN", convert_lrn},
      {"MVN", convert_mvn},
      {"PReLU", convert_prelu},
      {"Parameter", convert_parameter},
      {"Pooling", convert_pooling},
      {"Reduction", convert_reduction},
      {"Reshape", convert_reshape},
      {"Scale", convert_scale},
      {"Slice", convert_slice},
      {"Softmax", convert_softmax},
      {"Tile", convert_tile},
  };
  return table;
}

// Layers whose tops are their bottoms' values at inference.
bool is_identity(const std::string& type) { return type == "Split" || type == "Dropout"; }

const std::set<std::string>& data_source_types() {
  static const std::set<std::string> types = {"Data",       "ImageData", "HDF5Data",
                                              "MemoryData", "DummyData", "WindowData"};
  return types;
}

[[noreturn]] void unsupported(const Layer<float>& layer) {
  const std::string type = layer.type();
  if (data_source_types().count(type))
    layer.error("ONNX export takes a deploy net, whose inputs are Input layers");
  if (layer.is_loss() || type == "Accuracy")
    layer.error("ONNX export takes a deploy net, without losses or accuracy");
  layer.error("ONNX export does not support this layer type");
}

std::string dims_string(const std::vector<int64_t>& dims) {
  std::ostringstream os;
  for (size_t i = 0; i < dims.size(); ++i) os << (i ? " " : "") << dims[i];
  return os.str();
}

std::vector<int64_t> graph_dims(const std::vector<int64_t>& dims, bool dynamic_batch) {
  std::vector<int64_t> out = dims;
  if (dynamic_batch && !out.empty()) out[0] = -1;
  return out;
}

// What the shape check compares: the value a layer wrote for a blob, and the Net's shape.
struct ExpectedShape {
  std::string value, blob, layer;
  std::vector<int64_t> dims;
};

class Exporter {
 public:
  Exporter(Net<float>& net, const OnnxExportOptions& options, onnx::GraphProto* graph)
      : net_(net), options_(options), graph_proto_(graph), graph_(graph) {}

  void run() {
    name_blobs();
    for (int i = 0; i < net_.num_layers(); ++i) i = convert(i);
    add_outputs();
  }
  const std::vector<ExpectedShape>& expected() const { return expected_; }

 private:
  // Every blob keeps its Caffe name on the value its last writer gives it; the values an
  // in-place layer overwrites are named "<blob>/<layer>". A graph input keeps its name whatever
  // writes over it later.
  void name_blobs() {
    const auto& blobs = net_.blobs();
    for (size_t b = 0; b < blobs.size(); ++b) blob_name_[blobs[b].get()] = net_.blob_names()[b];
    std::set<const Tensor<float>*> inputs;
    for (int i = 0; i < net_.num_layers(); ++i) {
      const std::string type = net_.layers()[size_t(i)]->type();
      for (const Tensor<float>* t : net_.top_vecs()[size_t(i)]) {
        if (type == "Input") {
          inputs.insert(t);
          graph_.reserve(blob_name_[t]);
        } else if (!is_identity(type)) {
          last_writer_[t] = i;
        }
      }
    }
    for (const Tensor<float>* t : inputs) last_writer_.erase(t);
    for (const auto& [tensor, layer] : last_writer_) graph_.reserve(blob_name_[tensor]);
  }

  OnnxLayerContext context(int i) {
    OnnxLayerContext c;
    c.layer = net_.layers()[size_t(i)].get();
    c.graph = &graph_;
    c.dynamic_batch = options_.dynamic_batch;
    for (const Tensor<float>* t : net_.bottom_vecs()[size_t(i)]) {
      c.bottoms.push_back(t);
      c.inputs.push_back(value_.at(t));
    }
    for (const Tensor<float>* t : net_.top_vecs()[size_t(i)]) {
      c.tops.push_back(t);
      const std::string& blob = blob_name_[t];
      const auto last = last_writer_.find(t);
      const bool named = last != last_writer_.end() && last->second == i;
      c.outputs.push_back(named ? blob : graph_.unique_name(blob + "/" + c.name()));
    }
    return c;
  }

  void publish(const OnnxLayerContext& c, const std::string& layer_name) {
    for (size_t j = 0; j < c.tops.size(); ++j) {
      value_[c.tops[j]] = c.outputs[j];
      expected_.push_back({c.outputs[j], blob_name_[c.tops[j]], layer_name, c.tops[j]->shape()});
    }
  }

  // Converts layer i (and the Scale it folds in); returns the last layer index it consumed.
  int convert(int i) {
    Layer<float>& layer = *net_.layers()[size_t(i)];
    const std::string type = layer.type();
    if (type == "Input") {
      add_inputs(i);
      return i;
    }
    if (type == "Silence") return i;
    if (is_identity(type)) {
      const Tensor<float>* bottom = net_.bottom_vecs()[size_t(i)][0];
      for (const Tensor<float>* t : net_.top_vecs()[size_t(i)]) value_[t] = value_.at(bottom);
      return i;
    }
    OnnxLayerContext c = context(i);
    if (type == "BatchNorm") {
      if (i + 1 < net_.num_layers() &&
          net_.layers()[size_t(i + 1)]->type() == std::string("Scale")) {
        publish(c, c.name());  // the Scale reads the BatchNorm's output
        OnnxLayerContext scale = context(i + 1);
        if (scale_folds_into_batch_norm(c, scale)) {
          convert_batch_norm(c, &scale);
          publish(scale, scale.name());
          expected_.erase(expected_.end() - 2);  // the folded value is never written
          return i + 1;
        }
        expected_.pop_back();
      }
      convert_batch_norm(c, nullptr);
    } else if (is_onnx_activation(type)) {
      convert_activation(c);
    } else {
      const auto it = converters().find(type);
      if (it == converters().end()) unsupported(layer);
      it->second(c);
    }
    publish(c, c.name());
    return i;
  }

  void add_inputs(int i) {
    for (const Tensor<float>* t : net_.top_vecs()[size_t(i)]) {
      const std::string& name = blob_name_[t];
      onnx::ValueInfoProto* input = graph_proto()->add_input();
      input->set_name(name);
      set_tensor_type(input, graph_dims(t->shape(), options_.dynamic_batch), kBatchSymbol);
      value_[t] = name;
    }
  }

  void add_outputs() {
    const auto& names = net_.output_blob_names();
    for (size_t k = 0; k < names.size(); ++k) {
      const Tensor<float>* t = net_.output_blobs()[k];
      std::string value = value_.at(t);
      if (value != names[k]) {
        // A blob whose last writer was Dropout or Split: an Identity gives it its name.
        const std::string out = graph_.reserve(names[k]) ? names[k] : graph_.unique_name(names[k]);
        graph_.add_node("Identity", names[k], {value}, {out});
        value = out;
      }
      onnx::ValueInfoProto* output = graph_proto()->add_output();
      output->set_name(value);
      set_tensor_type(output, graph_dims(t->shape(), options_.dynamic_batch), kBatchSymbol);
    }
  }

  onnx::GraphProto* graph_proto() { return graph_proto_; }

  Net<float>& net_;
  OnnxExportOptions options_;
  onnx::GraphProto* graph_proto_;
  OnnxGraph graph_;
  std::map<const Tensor<float>*, std::string> blob_name_, value_;
  std::map<const Tensor<float>*, int> last_writer_;
  std::vector<ExpectedShape> expected_;
};

// Shape inference must give every value the Net's shape (the batch axis aside when symbolic):
// a difference means the graph computes something else than crema, which the user would only
// find at run time.
void check_inferred_shapes(const onnx::GraphProto& graph, const std::vector<ExpectedShape>& want,
                           bool dynamic_batch) {
  std::map<std::string, const onnx::TensorShapeProto*> inferred;
  for (const auto* list : {&graph.value_info(), &graph.output()})
    for (const onnx::ValueInfoProto& v : *list)
      if (v.type().tensor_type().has_shape()) inferred[v.name()] = &v.type().tensor_type().shape();
  for (const ExpectedShape& e : want) {
    const auto it = inferred.find(e.value);
    if (it == inferred.end())
      fail("layer ", e.layer, ": ONNX shape inference gives blob ", e.blob,
           " no shape (crema's: ", dims_string(e.dims), ")");
    const onnx::TensorShapeProto& s = *it->second;
    bool same = s.dim_size() == int(e.dims.size());
    std::vector<int64_t> got;
    for (int d = 0; d < s.dim_size(); ++d) {
      const bool symbolic = !s.dim(d).has_dim_value();
      got.push_back(symbolic ? -1 : s.dim(d).dim_value());
      if (dynamic_batch && d == 0) continue;  // "N", or a size shape inference could not tell
      if (symbolic || d >= int(e.dims.size()) || got.back() != e.dims[size_t(d)]) same = false;
    }
    if (!same)
      fail("layer ", e.layer, ": the ONNX graph computes blob ", e.blob, " with shape (",
           dims_string(got), ") where crema's is (", dims_string(e.dims), ")");
  }
}

}  // namespace

onnx::ModelProto net_to_onnx(Net<float>& net, const OnnxExportOptions& options) {
  onnx::ModelProto model;
  model.set_ir_version(kIrVersion);
  model.set_producer_name("crema");
  model.set_producer_version("1.0");
  onnx::OperatorSetIdProto* opset = model.add_opset_import();
  opset->set_domain("");
  opset->set_version(kOpset);
  onnx::GraphProto* graph = model.mutable_graph();
  graph->set_name(net.name().empty() ? "crema" : net.name());
  Exporter exporter(net, options, graph);
  exporter.run();
  try {
    onnx::checker::check_model(model);
    onnx::shape_inference::InferShapes(model, onnx::OpSchemaRegistry::Instance(),
                                       onnx::ShapeInferenceOptions(true, 1, false));
    onnx::checker::check_model(model);
  } catch (const std::exception& e) {
    fail("the exported model fails onnx's checks: ", e.what());
  }
  check_inferred_shapes(model.graph(), exporter.expected(), options.dynamic_batch);
  return model;
}

void set_input_batch(NetParameter* param, int batch) {
  for (LayerParameter& layer : *param->mutable_layer()) {
    if (layer.type() != "Input") continue;
    for (BlobShape& shape : *layer.mutable_input_param()->mutable_shape())
      if (shape.dim_size() > 0) shape.set_dim(0, batch);
  }
}

int export_onnx(const OnnxExportRequest& request) {
  CREMA_REQUIRE(!request.model.empty(), "export needs --model=<deploy.prototxt>");
  CREMA_REQUIRE(!request.weights.empty(), "export needs --weights=<net.caffemodel>");
  CREMA_REQUIRE(!request.onnx.empty(), "export needs --onnx=<net.onnx>");
  CREMA_REQUIRE(request.options.batch >= 0, "--batch must be positive, got ",
                request.options.batch);
  NetParameter param = load_net_param_text(request.model);
  const NetParameter weights = load_net_param_binary(request.weights);
  if (request.options.batch > 0) set_input_batch(&param, request.options.batch);
  Net<float> net(param, TEST, Device::kCPU);
  const WeightsCopy copy = net.copy_trained_layers_from(weights);
  if (!copy.unfilled.empty()) {
    std::string layers;
    for (const std::string& name : copy.unfilled) layers += (layers.empty() ? "" : ", ") + name;
    fail(request.weights, " has no weights for layer(s) ", layers, " of ", request.model,
         ": the model would hold their random initial values");
  }
  const onnx::ModelProto model = net_to_onnx(net, request.options);
  std::string bytes;
  CREMA_REQUIRE(model.SerializeToString(&bytes), request.onnx,
                ": the model is too large for one ONNX file (2 GiB)");
  write_file_atomic(bytes, request.onnx);
  return model.graph().node_size();
}

}  // namespace crema
