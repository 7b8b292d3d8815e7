// Graph passes applied to a NetParameter before a Net is built, as Caffe does them:
// filter_net keeps the layers whose include/exclude rules match the NetState; insert_splits adds
// a Split layer wherever one top feeds several bottoms (or feeds a bottom and is also a loss),
// so every gradient is accumulated explicitly.
#pragma once

#include <string>

#include "crema.pb.h"

namespace crema {

// True when the state satisfies the rule (phase, min/max level, all stages, no not_stage).
bool state_meets_rule(const NetState& state, const NetStateRule& rule);

// The layers of param that the param's state selects. A layer with both include and exclude
// rules is an error.
NetParameter filter_net(const NetParameter& param);

// Throws crema::Error for a bottom that no earlier layer produces.
NetParameter insert_splits(const NetParameter& param);

// Caffe's names, kept so that weights and logs match: "<blob>_<layer>_<top>_split[_<k>]".
std::string split_layer_name(const std::string& blob, const std::string& layer, int top_index);
std::string split_blob_name(const std::string& blob, const std::string& layer, int top_index,
                            int split_index);

}  // namespace crema
