// Buffer sharing by lifetime: values that are never live at the same time can use one buffer.
// Net::share_gradient_memory plans a training net's activation gradients with it (each lives from
// the backward of the layer that writes it to the backward of the layer that reads it).
#pragma once

#include <cstddef>
#include <vector>

namespace crema {

// A value live from step `first` through step `last` (inclusive) that needs `bytes`.
struct Lifetime {
  int first = 0, last = 0;
  size_t bytes = 0;
};

// The buffer of each value, numbered from 0; values whose lifetimes overlap get different
// buffers. Greedy in order of first step: a value takes the smallest free buffer that holds it,
// else the largest free buffer (which grows to hold it), else a new buffer.
std::vector<int> share_buffers(const std::vector<Lifetime>& values);

// The bytes each buffer of a plan needs: the largest value it holds.
std::vector<size_t> buffer_bytes(const std::vector<Lifetime>& values, const std::vector<int>& plan);

}  // namespace crema
