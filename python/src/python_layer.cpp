// The "Python" layer type, as Caffe's: python_param names a module and a class whose setup,
// reshape, forward and backward (written in Python, deriving from crema.Layer) run the layer;
// param_str and phase are set on the object before setup. Bottoms and tops reach Python as
// Blobs, so on the CPU the layer reads and writes the net's memory through numpy views; on a GPU
// it works on host copies, written back when it returns. A Python exception becomes the layer's
// crema error, naming the exception.
#include "python_layer.h"

#include "layers/layer_registry.h"

namespace crema::python {
namespace {

class PythonLayer : public Layer<float> {
 public:
  using Layer<float>::Layer;
  ~PythonLayer() override {
    if (!self_) return;
    py::gil_scoped_acquire locked;
    self_ = py::object();
  }

  void layer_setup(const Tensors& bottom, const Tensors& top) override {
    const PythonParameter& p = param_.python_param();
    if (p.module().empty() || p.layer().empty())
      error("python_param needs module and layer (the Python module and its class)");
    call("setup", [&] {
      py::object cls = py::module_::import(p.module().c_str()).attr(p.layer().c_str());
      self_ = cls();
      self_.attr("param_str") = p.param_str();
      self_.attr("phase") = int(phase());
      self_.attr("setup")(blobs(bottom), blobs(top));
    });
  }
  void reshape(const Tensors& bottom, const Tensors& top) override {
    call("reshape", [&] { self_.attr("reshape")(blobs(bottom), blobs(top)); });
  }
  void forward(Handle& h, const Tensors& bottom, const Tensors& top) override {
    h.synchronize();  // Python reads the bottoms on the host
    call("forward", [&] { self_.attr("forward")(blobs(bottom), blobs(top)); });
  }
  void backward(Handle& h, const Tensors& top, const std::vector<bool>& propagate_down,
                const Tensors& bottom) override {
    h.synchronize();
    call("backward", [&] {
      py::list down;
      for (const bool d : propagate_down) down.append(d);
      self_.attr("backward")(blobs(top), down, blobs(bottom));
    });
  }
  LayerSignature signature() const override { return {"Python", {}, {}}; }
  const char* not_replayable() const override { return "a Python layer runs on the host"; }

 private:
  // The net's tensors as Blobs for Python; they live as long as the net, which the layer does
  // not outlive.
  static py::list blobs(const Tensors& tensors) {
    py::list list;
    for (Tensor<float>* t : tensors)
      list.append(std::shared_ptr<Tensor<float>>(t, [](Tensor<float>*) {}));
    return list;
  }

  // Runs f holding the interpreter; on a GPU, what Python wrote to host copies goes back to the
  // device. A Python exception becomes this layer's error, with its first line.
  template <typename F>
  void call(const char* method, F f) {
    std::string failure;
    {
      py::gil_scoped_acquire locked;
      try {
        f();
        upload_host_copies();
      } catch (py::error_already_set& e) {
        failure = e.what();
      }
    }
    if (!failure.empty())
      error(param_.python_param().module(), ".", param_.python_param().layer(), ".", method, ": ",
            failure.substr(0, failure.find('\n')));
  }

  py::object self_;
};

}  // namespace

std::unique_ptr<Layer<float>> make_python_layer(const LayerParameter& param, Device device) {
  return std::make_unique<PythonLayer>(param, device);
}

void register_python_layer() { register_layer_type("Python", &make_python_layer); }

}  // namespace crema::python
