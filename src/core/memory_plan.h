// Memory sharing by lifetime: values that are never live at the same time can use the same bytes.
// Net::share_activation_memory places a training net's activations, data and gradients, in one
// arena with it.
#pragma once

#include <cstddef>
#include <vector>

namespace crema {

// A value live from step `first` through step `last` (inclusive) that needs `bytes`.
struct Lifetime {
  int first = 0, last = 0;
  size_t bytes = 0;
};

// The offset of each value in one arena, a multiple of `align`; values whose lifetimes overlap
// get disjoint byte ranges. Greedy by size: the largest value first, each into the tightest gap
// between the values already placed that live at the same time, else above them all.
std::vector<size_t> place_values(const std::vector<Lifetime>& values, size_t align);

// The bytes of the arena that a placement needs: the end of its highest value.
size_t arena_bytes(const std::vector<Lifetime>& values, const std::vector<size_t>& offsets);

// The most bytes live at any one step: no placement needs less.
size_t peak_live_bytes(const std::vector<Lifetime>& values);

}  // namespace crema
