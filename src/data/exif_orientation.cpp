// EXIF orientation: the TIFF header and IFD0 of an APP1 segment, read with bounds checks.
#include "data/exif_orientation.h"

#include <cstring>

namespace crema {

int exif_orientation(const uint8_t* p, size_t size) {
  if (size < 6 + 8 || std::memcmp(p, "Exif\0\0", 6) != 0) return 1;
  const uint8_t* tiff = p + 6;
  const size_t n = size - 6;
  const bool little = tiff[0] == 'I' && tiff[1] == 'I';
  if (!little && !(tiff[0] == 'M' && tiff[1] == 'M')) return 1;
  const auto u16 = [&](size_t at) -> uint32_t {
    return little ? uint32_t(tiff[at]) | uint32_t(tiff[at + 1]) << 8
                  : uint32_t(tiff[at]) << 8 | uint32_t(tiff[at + 1]);
  };
  const auto u32 = [&](size_t at) -> uint32_t {
    return little ? u16(at) | u16(at + 2) << 16 : u16(at) << 16 | u16(at + 2);
  };
  if (u16(2) != 42) return 1;
  const size_t ifd = u32(4);
  if (ifd > n || n - ifd < 2) return 1;
  const size_t entries = u16(ifd);
  for (size_t i = 0; i < entries; ++i) {
    const size_t e = ifd + 2 + i * 12;
    if (e > n || n - e < 12) return 1;
    if (u16(e) != 0x0112) continue;
    // A SHORT (type 3), count 1, its value in the entry's first two value bytes.
    if (u16(e + 2) != 3 || u32(e + 4) != 1) return 1;
    const uint32_t v = u16(e + 8);
    return v >= 1 && v <= 8 ? int(v) : 1;
  }
  return 1;
}

}  // namespace crema
