// Helpers shared by the data and tool tests: a scratch directory removed at the end of each test,
// IDX and LMDB fixtures written on the fly, and the message of an expected crema::Error.
#pragma once

#include <gtest/gtest.h>
#include <zlib.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "core/errors.h"
#include "core/layer.h"
#include "crema.pb.h"
#include "data/image_test_util.h"
#include "data/jpeg_codec.h"
#include "data/lmdb_db.h"
#include "error_util.h"

namespace crema::test {

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "crema_data_XXXXXX").string();
    if (!mkdtemp(tmpl.data())) ADD_FAILURE() << "mkdtemp failed";
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

inline std::vector<uint8_t> idx_header(uint32_t magic, const std::vector<uint32_t>& dims) {
  std::vector<uint8_t> out;
  auto put = [&out](uint32_t v) {
    for (int s = 24; s >= 0; s -= 8) out.push_back(uint8_t(v >> s));
  };
  put(magic);
  for (uint32_t d : dims) put(d);
  return out;
}

inline void write_bytes(const std::string& path, const std::vector<uint8_t>& bytes, bool gz) {
  if (gz) {
    gzFile f = gzopen(path.c_str(), "wb");
    ASSERT_NE(f, nullptr);
    ASSERT_EQ(gzwrite(f, bytes.data(), unsigned(bytes.size())), int(bytes.size()));
    gzclose(f);
  } else {
    FILE* f = std::fopen(path.c_str(), "wb");
    ASSERT_NE(f, nullptr);
    ASSERT_EQ(std::fwrite(bytes.data(), 1, bytes.size(), f), bytes.size());
    std::fclose(f);
  }
}

// An IDX file of n images of rows x cols whose pixel j of image i is (i * 7 + j) % 256, and one
// of n labels i % 10.
inline void write_idx_set(const std::string& images, const std::string& labels, uint32_t n,
                          uint32_t rows, uint32_t cols, bool gz) {
  std::vector<uint8_t> img = idx_header(0x803, {n, rows, cols});
  for (uint32_t i = 0; i < n; ++i)
    for (uint32_t j = 0; j < rows * cols; ++j) img.push_back(uint8_t((i * 7 + j) % 256));
  std::vector<uint8_t> lab = idx_header(0x801, {n});
  for (uint32_t i = 0; i < n; ++i) lab.push_back(uint8_t(i % 10));
  write_bytes(images, img, gz);
  write_bytes(labels, lab, gz);
}

// A raw (not encoded) Datum of c x h x w bytes.
inline Datum raw_datum(int c, int h, int w, const std::string& bytes, int label = 0) {
  Datum d;
  d.set_channels(c);
  d.set_height(h);
  d.set_width(w);
  d.set_data(bytes);
  d.set_label(label);
  return d;
}

// Record i's key as the converters write it: "%08d".
inline std::string record_key(int i) {
  char key[16];
  std::snprintf(key, sizeof key, "%08d", i);
  return key;
}

// An LMDB of n records; record(i) gives record i's key and value.
template <typename Record>
void write_lmdb(const std::string& path, int n, const Record& record) {
  LmdbWriter writer(path);
  for (int i = 0; i < n; ++i) {
    const std::pair<std::string, std::string> kv = record(i);
    writer.put(kv.first, kv.second);
  }
  writer.commit();
}

// An LMDB of n raw Datum records c x h x w under keys "%08d": record i has label i and pixels
// (i * 10 + j) % 256.
inline void write_datum_lmdb(const std::string& path, int n, int c, int h, int w) {
  write_lmdb(path, n, [&](int i) {
    std::string bytes(size_t(c * h * w), '\0');
    for (size_t j = 0; j < bytes.size(); ++j) bytes[j] = char((i * 10 + int(j)) % 256);
    return std::pair(record_key(i), raw_datum(c, h, w, bytes, i).SerializeAsString());
  });
}

// An LMDB of n encoded-JPEG Datum records of c x h x w photo-like pixels under keys "%08d":
// record i has label i.
inline void write_jpeg_lmdb(const std::string& path, int n, int c, int h, int w) {
  write_lmdb(path, n, [&](int i) {
    Datum d;
    d.set_channels(c);
    d.set_height(h);
    d.set_width(w);
    d.set_encoded(true);
    d.set_label(i);
    d.set_data(encode_jpeg(test_pixels(c, h, w, uint64_t(i)).data(), c, h, w, 90));
    return std::pair(record_key(i), d.SerializeAsString());
  });
}

// A source layer L (no bottoms; data and label tops) set up on the CPU and run batch by batch.
template <typename L>
struct SourceRun {
  L layer;
  Tensor<float> data, label;
  prim::Handle h;
  explicit SourceRun(const LayerParameter& p) : layer(p, Device::kCPU) {
    layer.setup({}, {&data, &label});
  }
  void forward() { layer.forward(h, {}, {&data, &label}); }
  // The data and labels of n forwards, concatenated.
  std::vector<float> batches(int n) {
    std::vector<float> out;
    for (int b = 0; b < n; ++b) {
      forward();
      for (float v : data.data_vector()) out.push_back(v);
      for (float v : label.data_vector()) out.push_back(v);
    }
    return out;
  }
};

}  // namespace crema::test
