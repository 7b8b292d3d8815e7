// Greedy-by-size placement (see memory_plan.h). The largest values are placed first because they
// constrain the arena most; a smaller value then fills a gap that the larger ones left between
// values of other lifetimes. For a network's activations this comes close to peak_live_bytes.
#include "core/memory_plan.h"

#include <algorithm>
#include <numeric>
#include <utility>

namespace crema {
namespace {

size_t round_up(size_t n, size_t align) { return (n + align - 1) / align * align; }

bool overlap(const Lifetime& a, const Lifetime& b) {
  return a.first <= b.last && b.first <= a.last;
}

}  // namespace

std::vector<size_t> place_values(const std::vector<Lifetime>& values, size_t align) {
  align = std::max<size_t>(align, 1);
  std::vector<size_t> order(values.size());
  std::iota(order.begin(), order.end(), size_t(0));
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return values[a].bytes > values[b].bytes; });
  std::vector<size_t> offsets(values.size(), 0);
  std::vector<size_t> placed;
  for (size_t v : order) {
    const size_t need = round_up(values[v].bytes, align);
    // (offset, end) of the placed values live at the same time, lowest first.
    std::vector<std::pair<size_t, size_t>> busy;
    for (size_t p : placed)
      if (overlap(values[p], values[v]))
        busy.emplace_back(offsets[p], offsets[p] + round_up(values[p].bytes, align));
    std::sort(busy.begin(), busy.end());
    size_t best = 0, best_gap = 0, top = 0;
    bool found = false;
    for (const auto& [begin, end] : busy) {
      if (begin > top && begin - top >= need && (!found || begin - top < best_gap)) {
        best = top;
        best_gap = begin - top;
        found = true;
      }
      top = std::max(top, end);
    }
    offsets[v] = found ? best : top;
    placed.push_back(v);
  }
  return offsets;
}

size_t arena_bytes(const std::vector<Lifetime>& values, const std::vector<size_t>& offsets) {
  size_t end = 0;
  for (size_t v = 0; v < values.size(); ++v) end = std::max(end, offsets[v] + values[v].bytes);
  return end;
}

size_t peak_live_bytes(const std::vector<Lifetime>& values) {
  // Sweep the steps where a value starts or ends.
  std::vector<std::pair<int, long long>> events;
  for (const Lifetime& l : values) {
    events.emplace_back(l.first, static_cast<long long>(l.bytes));
    events.emplace_back(l.last + 1, -static_cast<long long>(l.bytes));
  }
  std::sort(events.begin(), events.end());
  long long live = 0, peak = 0;
  for (size_t i = 0; i < events.size(); ++i) {
    live += events[i].second;
    if (i + 1 == events.size() || events[i + 1].first != events[i].first)
      peak = std::max(peak, live);
  }
  return size_t(peak);
}

}  // namespace crema
