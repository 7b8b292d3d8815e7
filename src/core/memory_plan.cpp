// Greedy interval sharing (see memory_plan.h).
#include "core/memory_plan.h"

#include <algorithm>
#include <numeric>

namespace crema {

std::vector<int> share_buffers(const std::vector<Lifetime>& values) {
  std::vector<int> order(values.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return values[size_t(a)].first < values[size_t(b)].first; });
  struct Buffer {
    size_t bytes;
    int busy_until;  // the last step of the value it holds now
  };
  std::vector<Buffer> buffers;
  std::vector<int> plan(values.size(), -1);
  for (int v : order) {
    const Lifetime& l = values[size_t(v)];
    int best = -1;
    for (int b = 0; b < int(buffers.size()); ++b) {
      // Values come in order of first step, so a buffer is free once its value's last step is
      // before this value's first.
      if (buffers[size_t(b)].busy_until >= l.first) continue;
      if (best < 0) {
        best = b;
        continue;
      }
      const size_t have = buffers[size_t(b)].bytes, best_have = buffers[size_t(best)].bytes;
      const bool fits = have >= l.bytes, best_fits = best_have >= l.bytes;
      if (fits ? !best_fits || have < best_have : !best_fits && have > best_have) best = b;
    }
    if (best < 0) {
      best = int(buffers.size());
      buffers.push_back({0, 0});
    }
    Buffer& buf = buffers[size_t(best)];
    buf.bytes = std::max(buf.bytes, l.bytes);
    buf.busy_until = l.last;
    plan[size_t(v)] = best;
  }
  return plan;
}

std::vector<size_t> buffer_bytes(const std::vector<Lifetime>& values,
                                 const std::vector<int>& plan) {
  std::vector<size_t> bytes;
  for (size_t v = 0; v < values.size(); ++v) {
    const size_t b = size_t(plan[v]);
    if (b >= bytes.size()) bytes.resize(b + 1, 0);
    bytes[b] = std::max(bytes[b], values[v].bytes);
  }
  return bytes;
}

}  // namespace crema
