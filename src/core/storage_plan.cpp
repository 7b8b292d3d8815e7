// The storage plan of a mixed-precision net (storage_plan.h).
#include "core/storage_plan.h"

namespace crema {

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
  for (const StorageLayer& l : layers)
    if (l.support == HalfStorage::kNone) {
      for (int id : l.bottoms) refused[size_t(id)] = true;
      for (int id : l.tops) refused[size_t(id)] = true;
    }
  for (size_t id = 0; id < n; ++id)
    if (refused[id] || keep_f32[id]) type[id] = DataType::kFloat32;
  // A uniform layer with blobs of different types takes all of them back to f32; each pass can
  // only turn blobs to f32, so this ends.
  for (bool changed = true; changed;) {
    changed = false;
    for (const StorageLayer& l : layers) {
      if (l.support != HalfStorage::kUniform) continue;
      std::vector<int> ids = l.bottoms;
      ids.insert(ids.end(), l.tops.begin(), l.tops.end());
      bool same = true;
      for (int id : ids) same = same && type[size_t(id)] == type[size_t(ids[0])];
      if (same) continue;
      for (int id : ids) type[size_t(id)] = DataType::kFloat32;
      changed = true;
    }
  }
  return type;
}

}  // namespace crema
