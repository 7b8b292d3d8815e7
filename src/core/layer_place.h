// Where a layer was defined, for errors about it.
#pragma once

#include <string>

#include "crema.pb.h"

namespace crema {

// "net.prototxt:12: " for a layer read from a text file (LayerParameter.source_location, set by
// load_net_param_text and load_solver_param), else "": what an error about a layer starts with,
// so that it points into the file.
inline std::string layer_place(const LayerParameter& p) {
  return p.source_location().empty() ? std::string() : p.source_location() + ": ";
}

// "net.prototxt:12: layer conv1 (Convolution)": how an error names a layer, type as given.
inline std::string layer_label(const LayerParameter& p, const std::string& type) {
  return layer_place(p) + "layer " + p.name() + " (" + type + ")";
}
inline std::string layer_label(const LayerParameter& p) { return layer_label(p, p.type()); }

}  // namespace crema
