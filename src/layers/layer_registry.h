// The layer registry: an explicit table (layer_registry.cpp) from Caffe's type names to
// constructors. No static initializers: adding a layer means adding one row to the table. It is
// the LayerFactory (core/net.h) of every Net built without an explicit one.
#pragma once

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

}  // namespace crema
