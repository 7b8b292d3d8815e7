// The "Python" layer type (python_layer.cpp) and the interpreter the crema tool starts for it.
#pragma once

#include "bindings.h"

namespace crema::python {

// A "Python" layer; the interpreter must be running.
std::unique_ptr<Layer<float>> make_python_layer(const LayerParameter& param, Device device);
// Makes "Python" layers known to the nets built from now on in this process (the module's
// import, inside a running interpreter).
void register_python_layer();

// For the crema tool: "Python" layers start an interpreter in the process at the first such
// layer, whose crema module is the tool's own bindings (so nets and Blobs are the tool's
// objects); the crema package's Python files are found in the build tree and the install prefix
// after PYTHONPATH.
void enable_embedded_python_layers();

// Defines the _crema module's contents in m (module.cpp): shared by the extension module and the
// interpreter the tool embeds.
void define_module(py::module_& m);

}  // namespace crema::python
