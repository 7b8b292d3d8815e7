// LevelDB's log format for tests and the LevelDB fuzz target: records framed into 32 KiB blocks
// with their masked CRC-32C checksums, as LevelDB writes its manifests and logs, and the
// checksums of an existing file written anew (so that a mutated record passes LevelDB's check).
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace crema::test {

inline uint32_t crc32c(const char* p, size_t n, uint32_t crc = 0) {
  static const std::array<uint32_t, 256> table = [] {
    std::array<uint32_t, 256> t{};
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = c & 1 ? (c >> 1) ^ 0x82f63b78u : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  crc = ~crc;
  for (size_t i = 0; i < n; ++i) crc = table[(crc ^ uint8_t(p[i])) & 0xff] ^ (crc >> 8);
  return ~crc;
}

constexpr size_t kLogBlock = 32768, kLogHeader = 7;

// The header checksum of a fragment: CRC-32C of its type byte and payload, masked.
inline uint32_t fragment_checksum(char type, const char* payload, size_t n) {
  const uint32_t crc = crc32c(payload, n, crc32c(&type, 1));
  return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

inline void put_fixed32(std::string* s, size_t at, uint32_t v) {
  for (int i = 0; i < 4; ++i) (*s)[at + size_t(i)] = char((v >> (8 * i)) & 0xff);
}

// records as a log file: each split into fragments that fit their blocks (FULL = 1, FIRST = 2,
// MIDDLE = 3, LAST = 4), blocks with fewer than 7 bytes left padded with zeros.
inline std::string log_file(const std::vector<std::string>& records) {
  std::string out;
  for (const std::string& r : records) {
    size_t done = 0;
    bool first = true;
    do {
      size_t left = kLogBlock - out.size() % kLogBlock;
      if (left < kLogHeader) {
        out.append(left, '\0');
        left = kLogBlock;
      }
      const size_t n = std::min(r.size() - done, left - kLogHeader);
      const bool last = done + n == r.size();
      const char type = first && last ? 1 : first ? 2 : last ? 4 : 3;
      const size_t at = out.size();
      out.append(kLogHeader, '\0');
      out[at + 4] = char(n & 0xff);
      out[at + 5] = char(n >> 8);
      out[at + 6] = type;
      out.append(r, done, n);
      put_fixed32(&out, at, fragment_checksum(type, r.data() + done, n));
      done += n;
      first = false;
    } while (done < r.size());
  }
  return out;
}

// Writes every fragment's checksum of a log file anew, up to the first fragment that does not
// fit its block or the file.
inline void restamp_checksums(std::string* file) {
  size_t pos = 0;
  while (pos < file->size()) {
    const size_t left = kLogBlock - pos % kLogBlock;
    if (left < kLogHeader) {
      pos += left;
      continue;
    }
    if (file->size() - pos < kLogHeader) return;
    const size_t n = size_t(uint8_t((*file)[pos + 4])) | size_t(uint8_t((*file)[pos + 5])) << 8;
    if (kLogHeader + n > left || kLogHeader + n > file->size() - pos) return;
    put_fixed32(file, pos, fragment_checksum((*file)[pos + 6], file->data() + pos + kLogHeader, n));
    pos += kLogHeader + n;
  }
}

// Pieces of a manifest record (a VersionEdit): varints, length-prefixed strings, internal keys
// (a user key, then sequence << 8 | type as 8 little-endian bytes).
inline void put_varint(std::string* s, uint64_t v) {
  while (v >= 0x80) {
    *s += char(v | 0x80);
    v >>= 7;
  }
  *s += char(v);
}
inline void put_bytes(std::string* s, const std::string& b) {
  put_varint(s, b.size());
  *s += b;
}
inline std::string internal_key(const std::string& user_key, uint64_t sequence) {
  std::string k = user_key;
  const uint64_t tag = sequence << 8 | 1;  // a value
  for (int i = 0; i < 8; ++i) k += char((tag >> (8 * i)) & 0xff);
  return k;
}

}  // namespace crema::test
