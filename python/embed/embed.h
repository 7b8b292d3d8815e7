// The crema tool's support for "Python" layers (embed.cpp): an interpreter started in the
// process at the first such layer.
#pragma once

namespace crema::python {

// Call once, before building nets: "Python" layers become known to the layer registry.
void enable_embedded_python_layers();

}  // namespace crema::python
