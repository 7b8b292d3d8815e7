// Net and Layer for Python: the compiled half of pycaffe's Net (python/crema/pycaffe.py adds
// blobs, params, forward and backward with their keyword arguments). Nets are built, upgraded and
// loaded by the library's own code; every error is a crema::Error, raised as crema.Error.
#include <pybind11/stl.h>

#include <optional>
#include <string>
#include <vector>

#include "bindings.h"
#include "core/errors.h"
#include "core/proto_io.h"
#include "core/upgrade_proto.h"
#include "layers/memory_data_layer.h"

namespace crema::python {
namespace {

// A net made from Python: its handle outlives it (members are destroyed in reverse order).
struct OwnedNet {
  std::unique_ptr<prim::Handle> handle;
  std::unique_ptr<Net<float>> net;
};

Phase to_phase(int phase) {
  CREMA_REQUIRE(phase == TRAIN || phase == TEST,
                "phase must be crema.TRAIN (0) or crema.TEST (1), got ", phase);
  return Phase(phase);
}

void copy_weights(Net<float>& net, const std::string& path) {
  require_weights_copied(net.copy_trained_layers_from(load_net_param_binary(path)), path);
}

std::shared_ptr<NetRef> make_net(const std::string& prototxt, int phase,
                                 const std::optional<std::string>& weights, int level,
                                 const std::vector<std::string>& stages) {
  const Phase net_phase = to_phase(phase);
  NetParameter param = load_net_param_text(prototxt);
  param.mutable_state()->set_level(level);
  for (const std::string& stage : stages) param.mutable_state()->add_stage(stage);
  auto owned = std::make_shared<OwnedNet>();
  owned->handle = std::make_unique<prim::Handle>(mode().device, mode().device_id);
  owned->net = std::make_unique<Net<float>>(param, net_phase, mode().device);
  if (weights) copy_weights(*owned->net, *weights);
  return std::make_shared<NetRef>(
      NetRef{std::shared_ptr<Net<float>>(owned, owned->net.get()),
             std::shared_ptr<prim::Handle>(owned, owned->handle.get())});
}

void check_layer_index(const Net<float>& net, int i, const char* what) {
  CREMA_REQUIRE(i >= 0 && i < net.num_layers(), what, " layer index ", i, " is out of range (net ",
                net.name(), " has ", net.num_layers(), " layers)");
}

float forward(NetRef& r, int start, int end) {
  check_layer_index(*r.net, start, "forward: start");
  check_layer_index(*r.net, end, "forward: end");
  CREMA_REQUIRE(start <= end, "forward: start layer ", start, " comes after end layer ", end);
  upload_host_copies();
  py::gil_scoped_release unlocked;
  return r.net->forward_range(*r.handle, start, end);
}

void backward(NetRef& r, int start, int end) {
  check_layer_index(*r.net, start, "backward: start");
  check_layer_index(*r.net, end, "backward: end");
  CREMA_REQUIRE(start >= end, "backward: start layer ", start, " comes before end layer ", end);
  upload_host_copies();
  py::gil_scoped_release unlocked;
  r.net->backward_range(*r.handle, start, end);
  r.net->wait(*r.handle);
}

// The tops of the Input layers: what forward(**inputs) fills.
std::vector<std::string> input_names(const Net<float>& net) {
  std::vector<std::string> names;
  for (const auto& layer : net.layers())
    if (std::string(layer->type()) == "Input")
      for (const std::string& top : layer->param().top()) names.push_back(top);
  return names;
}

// Each layer's bottom (tops false) or top names, in layer order.
std::vector<std::vector<std::string>> layer_blob_names(const Net<float>& net, bool tops) {
  std::vector<std::vector<std::string>> names;
  for (const auto& l : net.layers()) {
    const auto& blobs = tops ? l->param().top() : l->param().bottom();
    names.emplace_back(blobs.begin(), blobs.end());
  }
  return names;
}

// Net.set_input_arrays for a MemoryData layer (the first layer, as in pycaffe, unless named).
void set_input_arrays(NetRef& r, const py::array_t<float, py::array::c_style>& data,
                      const py::array_t<float, py::array::c_style>& labels, int layer_index) {
  check_layer_index(*r.net, layer_index, "set_input_arrays:");
  auto* layer = dynamic_cast<MemoryDataLayer<float>*>(r.net->layers()[size_t(layer_index)].get());
  CREMA_REQUIRE(layer, "set_input_arrays needs a MemoryData layer; layer ",
                r.net->layer_names()[size_t(layer_index)], " is a ",
                r.net->layers()[size_t(layer_index)]->type());
  const Tensor<float>& top = *r.net->top_vecs()[size_t(layer_index)][0];
  CREMA_REQUIRE(data.ndim() == 4 && data.shape(1) == top.shape(1) &&
                    data.shape(2) == top.shape(2) && data.shape(3) == top.shape(3),
                "set_input_arrays: data must be N x ", top.shape(1), " x ", top.shape(2), " x ",
                top.shape(3), " (the layer's channels, height and width)");
  CREMA_REQUIRE(labels.ndim() >= 1 && labels.size() == data.shape(0),
                "set_input_arrays: labels must hold one value per example (", data.shape(0),
                "), got ", labels.size());
  layer->set_input(data.data(), labels.data(), data.shape(0));
}

}  // namespace

void bind_net(py::module_& m) {
  py::class_<Layer<float>, std::shared_ptr<Layer<float>>>(m, "Layer", "One layer of a net")
      .def_property_readonly("type", [](const Layer<float>& l) { return std::string(l.type()); })
      .def_property_readonly("name", [](const Layer<float>& l) { return l.name(); })
      .def_property_readonly(
          "blobs", [](Layer<float>& l) { return l.blobs(); },
          "the learnable parameters, a list of Blob");

  py::class_<NetRef, std::shared_ptr<NetRef>>(m, "Net", "A net built from a prototxt, as Caffe's")
      .def(py::init(&make_net), py::arg("network_file"), py::arg("phase"), py::kw_only(),
           py::arg("weights") = std::nullopt, py::arg("level") = 0,
           py::arg("stages") = std::vector<std::string>{},
           "Net(network_file, phase, weights=None, level=0, stages=[])")
      .def(py::init([](const std::string& prototxt, const std::string& weights, int phase) {
             return make_net(prototxt, phase, weights, 0, {});
           }),
           py::arg("network_file"), py::arg("weights"), py::arg("phase"),
           "Net(network_file, weights, phase)")
      .def_property_readonly("name", [](const NetRef& r) { return r.net->name(); })
      .def_property_readonly("phase", [](const NetRef& r) { return int(r.net->phase()); })
      .def_property_readonly("_blob_names", [](const NetRef& r) { return r.net->blob_names(); })
      .def_property_readonly("_blobs", [](const NetRef& r) { return r.net->blobs(); })
      .def_property_readonly("_layer_names", [](const NetRef& r) { return r.net->layer_names(); })
      .def_property_readonly("layers",
                             [](const NetRef& r) {
                               std::vector<std::shared_ptr<Layer<float>>> layers;
                               for (const auto& l : r.net->layers())
                                 layers.emplace_back(r.net, l.get());  // keeps the net alive
                               return layers;
                             })
      .def_property_readonly("_inputs", [](const NetRef& r) { return input_names(*r.net); })
      .def_property_readonly("_outputs", [](const NetRef& r) { return r.net->output_blob_names(); })
      .def_property_readonly("_layer_bottoms",
                             [](const NetRef& r) { return layer_blob_names(*r.net, false); })
      .def_property_readonly("_layer_tops",
                             [](const NetRef& r) { return layer_blob_names(*r.net, true); })
      .def("_forward", &forward, py::arg("start"), py::arg("end"))
      .def("_backward", &backward, py::arg("start"), py::arg("end"))
      .def(
          "reshape",
          [](NetRef& r) {
            upload_host_copies();
            r.net->reshape();
          },
          "fits every layer to its inputs' shapes (after Blob.reshape of an input)")
      .def(
          "copy_from",
          [](NetRef& r, const std::string& path) {
            upload_host_copies();
            copy_weights(*r.net, path);
          },
          py::arg("weights"), "copies the weights of a .caffemodel by layer name")
      .def(
          "share_with",
          [](NetRef& r, const NetRef& other) {
            upload_host_copies();
            r.net->share_trained_layers_with(*other.net);
          },
          py::arg("other"), "makes this net's parameters the same memory as other's")
      .def(
          "save",
          [](const NetRef& r, const std::string& path) {
            upload_host_copies();
            NetParameter param;
            r.net->to_proto(&param);
            write_binary_proto_atomic(param, path);
          },
          py::arg("filename"), "writes the net and its weights as a .caffemodel")
      .def("_set_input_arrays", &set_input_arrays, py::arg("data"), py::arg("labels"),
           py::arg("layer_index"));
}

}  // namespace crema::python
