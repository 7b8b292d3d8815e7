// The layer registry: an explicit table (layer_registry.cpp) from Caffe's type names to
// constructors. No static initializers: adding a layer means adding one row to the table. It is
// the LayerFactory (core/net.h) of every Net built without an explicit one.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/layer.h"

namespace crema {

// Throws crema::Error for an unknown type, listing the known ones.
template <typename Dtype>
std::unique_ptr<Layer<Dtype>> create_layer(const LayerParameter& param, Device device);

// Every registered type name, sorted.
std::vector<std::string> layer_types();

// A layer type implemented outside the library (the Python module's "Python" layers, which
// need an interpreter), for float nets. Whoever provides it registers it explicitly, before
// building nets that use it; create_layer<float> then makes it like a type of the table.
using ExternalLayerMaker =
    std::function<std::unique_ptr<Layer<float>>(const LayerParameter& param, Device device)>;
void register_layer_type(const std::string& type, ExternalLayerMaker make);

}  // namespace crema
