// Internal to the net upgrade (upgrade_proto.cpp): V0 nets to V1, and the label its errors use.
#pragma once

#include <string>

#include "crema.pb.h"

namespace crema {

// "layer 'conv1'" or, for an unnamed layer, its position, so every error points somewhere.
std::string upgrade_layer_label(const std::string& name, int index);

// Whether the net has V0 layers (a `layer` inside `layers`).
bool net_has_v0_layers(const NetParameter& net);

// V0 layers become V1 layers, V0 padding layers fold into the layer they feed; errors are
// prefixed by source and name the layer.
void upgrade_v0_net(NetParameter* net, const std::string& source);

}  // namespace crema
