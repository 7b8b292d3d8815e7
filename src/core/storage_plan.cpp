// The storage plans of a net's activations (storage_plan.h).
#include "core/storage_plan.h"

namespace crema {
namespace {

// Blobs of a kNone layer take the default form; then a uniform layer with blobs of different
// forms takes all of them to the default. Each pass can only turn blobs to the default, so this
// ends.
template <typename T>
void settle(const std::vector<StorageLayer>& layers, std::vector<T>& form, T fallback) {
  for (const StorageLayer& l : layers)
    if (l.support == StorageSupport::kNone) {
      for (int id : l.bottoms) form[size_t(id)] = fallback;
      for (int id : l.tops) form[size_t(id)] = fallback;
    }
  for (bool changed = true; changed;) {
    changed = false;
    for (const StorageLayer& l : layers) {
      if (l.support != StorageSupport::kUniform) continue;
      std::vector<int> ids = l.bottoms;
      ids.insert(ids.end(), l.tops.begin(), l.tops.end());
      bool same = true;
      for (int id : ids) same = same && form[size_t(id)] == form[size_t(ids[0])];
      if (same) continue;
      for (int id : ids) form[size_t(id)] = fallback;
      changed = true;
    }
  }
}

}  // namespace

std::vector<prim::DataType> plan_storage(const std::vector<StorageLayer>& layers,
                                         const std::vector<bool>& keep_f32) {
  using prim::DataType;
  const size_t n = keep_f32.size();
  // Candidates: the type of the blob's first writer, kept while every later writer agrees.
  std::vector<DataType> type(n, DataType::kFloat32);
  std::vector<bool> written(n, false), refused(n, false);
  for (const StorageLayer& l : layers)
    for (int id : l.tops) {
      if (!written[size_t(id)]) type[size_t(id)] = l.half;
      if (type[size_t(id)] != l.half) refused[size_t(id)] = true;
      written[size_t(id)] = true;
    }
  for (size_t id = 0; id < n; ++id)
    if (refused[id] || keep_f32[id]) type[id] = DataType::kFloat32;
  settle(layers, type, DataType::kFloat32);
  return type;
}

std::vector<bool> plan_channels_last(const std::vector<StorageLayer>& layers,
                                     const std::vector<bool>& candidates) {
  std::vector<char> nhwc(candidates.begin(), candidates.end());
  settle(layers, nhwc, char(0));
  return std::vector<bool>(nhwc.begin(), nhwc.end());
}

}  // namespace crema
