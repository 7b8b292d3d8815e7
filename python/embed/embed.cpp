// The interpreter the crema tool starts for "Python" layers (python_layer.h). Linked into the
// tool only: the extension module runs inside an interpreter that already exists.
#include "embed.h"

#include <pybind11/embed.h>

#include <mutex>

#include "layers/layer_registry.h"
#include "python_layer.h"

namespace crema::python {
namespace {

void start_interpreter() {
  static std::once_flag started;
  std::call_once(started, [] {
    py::initialize_interpreter();
    {
      // This program's bindings are the package's compiled part: a net the tool built and the
      // Blobs its Python layers see are objects of one library.
      static PyModuleDef definition{};
      py::module_ core = py::module_::create_extension_module("crema._crema", nullptr, &definition);
      define_module(core);
      py::module_ sys = py::module_::import("sys");
      sys.attr("modules")["crema._crema"] = core;
      // After PYTHONPATH: the package's Python files in the build tree, then where
      // `cmake --install` puts them.
      sys.attr("path").attr("append")(CREMA_PYTHON_BUILD_PACKAGE_DIR);
      sys.attr("path").attr("append")(CREMA_PYTHON_INSTALL_PACKAGE_DIR);
    }
    // Layers take the interpreter when they run, from whichever thread runs them.
    PyEval_SaveThread();
  });
}

}  // namespace

void enable_embedded_python_layers() {
  register_layer_type("Python", [](const LayerParameter& param, Device device) {
    start_interpreter();
    return make_python_layer(param, device);
  });
}

}  // namespace crema::python
