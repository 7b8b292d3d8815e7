// Reading an enum field of a layer's parameters into the primitive's enum: a table of the values
// the layer supports, and the layer's error for any other.
#pragma once

#include <initializer_list>
#include <utility>

#include "core/layer.h"

namespace crema {

// The primitive's value that `table` pairs with the proto value v; for a value the table lacks,
// the layer's error "unknown <field> <v>". Q, the primitive's enum, is named by the caller.
template <typename Q, typename Dtype, typename P>
Q from_proto(const Layer<Dtype>& layer, P v, const char* field,
             std::initializer_list<std::pair<P, Q>> table) {
  for (const auto& [p, q] : table)
    if (p == v) return q;
  layer.error("unknown ", field, " ", int(v));
}

}  // namespace crema
