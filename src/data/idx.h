// IDX files, the format of MNIST and Fashion-MNIST: a big-endian magic (0x0000 0x08 <rank>
// for unsigned bytes), <rank> big-endian uint32 sizes, then the bytes. Files may be gzipped
// (.gz) or raw; both are read through zlib, which passes raw files through.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace crema {

struct IdxArray {
  std::vector<uint32_t> dims;
  std::vector<uint8_t> data;  // product(dims) bytes, row-major
};

// Reads an unsigned-byte IDX file of the given rank (3 for images: count x rows x cols, 1 for
// labels). Throws crema::Error naming the file for a missing file, a wrong magic, sizes that
// exceed the limits, or data shorter or longer than the sizes say.
IdxArray read_idx(const std::string& path, int rank);

inline IdxArray read_idx_images(const std::string& path) { return read_idx(path, 3); }
inline IdxArray read_idx_labels(const std::string& path) { return read_idx(path, 1); }

}  // namespace crema
