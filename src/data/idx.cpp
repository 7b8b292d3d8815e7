// IDX reader over zlib.
#include "data/idx.h"

#include <sys/stat.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

#include "core/errors.h"

namespace crema {

namespace {

struct GzCloser {
  void operator()(gzFile_s* f) const { gzclose(f); }
};
using GzFile = std::unique_ptr<gzFile_s, GzCloser>;

// Reads up to n bytes; returns how many were read (fewer only at the end of the data).
size_t read_some(gzFile f, const std::string& path, uint8_t* dst, size_t n) {
  size_t done = 0;
  while (done < n) {
    const unsigned chunk = unsigned(std::min<size_t>(n - done, size_t(1) << 30));
    const int got = gzread(f, dst + done, chunk);
    if (got < 0) {
      int err = 0;
      const char* msg = gzerror(f, &err);
      if (err == Z_BUF_ERROR) fail(path, ": truncated: the compressed data ends early");
      fail(path, ": read error: ", err == Z_ERRNO ? std::strerror(errno) : msg);
    }
    if (got == 0) break;
    done += size_t(got);
  }
  return done;
}

uint32_t big_endian(const uint8_t* p) {
  return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | uint32_t(p[3]);
}

}  // namespace

IdxArray read_idx(const std::string& path, int rank) {
  if (rank < 1 || rank > 3) fail(path, ": IDX rank ", rank, " is not supported");
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) fail(path, ": cannot open: ", std::strerror(errno));
  if (S_ISDIR(st.st_mode)) fail(path, ": is a directory, not an IDX file");
  GzFile f(gzopen(path.c_str(), "rb"));
  if (!f) fail(path, ": cannot open: ", std::strerror(errno));

  // The magic first, so that a file of the other kind is named as such even when shorter than
  // this kind's header.
  uint8_t header[4 + 4 * 3];
  const char* kind = rank == 3 ? "images" : rank == 1 ? "labels" : "data";
  if (read_some(f.get(), path, header, 4) != 4) fail(path, ": too short for an IDX file");
  const uint32_t magic = big_endian(header);
  const uint32_t expected = 0x00000800u | uint32_t(rank);
  if (magic != expected) {
    char buf[48];
    std::snprintf(buf, sizeof buf, "magic 0x%08x, expected 0x%08x", magic, expected);
    fail(path, ": not an IDX file of ", kind, ": ", buf);
  }
  const size_t header_bytes = 4 + 4 * size_t(rank);
  if (read_some(f.get(), path, header + 4, header_bytes - 4) != header_bytes - 4)
    fail(path, ": truncated IDX header (", header_bytes, " bytes expected)");
  IdxArray out;
  uint64_t count = 1;
  for (int i = 0; i < rank; ++i) {
    out.dims.push_back(big_endian(header + 4 + 4 * i));
    count *= out.dims.back();
    // Sizes are untrusted: refuse before allocating what no dataset of this kind needs.
    constexpr uint64_t kMaxBytes = uint64_t(1) << 34;
    if (count > kMaxBytes) fail(path, ": IDX sizes describe more than ", kMaxBytes, " bytes");
  }
  // A raw file's size is known up front, so a lying header is caught before any allocation;
  // a gzipped one is read in chunks, so it never allocates much beyond what it holds.
  const bool gzipped = gzdirect(f.get()) == 0;
  if (!gzipped && uint64_t(st.st_size) != header_bytes + count)
    fail(path, ": IDX sizes say ", header_bytes + count, " bytes but the file has ", st.st_size);
  constexpr size_t kChunk = size_t(1) << 24;
  while (out.data.size() < count) {
    const size_t old = out.data.size();
    const size_t want = std::min<uint64_t>(count - old, kChunk);
    out.data.resize(old + want);
    const size_t got = read_some(f.get(), path, out.data.data() + old, want);
    if (got < want)
      fail(path, ": truncated: the IDX sizes say ", count, " data bytes but the file holds ",
           old + got);
  }
  uint8_t extra;
  if (read_some(f.get(), path, &extra, 1) != 0)
    fail(path, ": has data after the ", count, " bytes its IDX sizes describe");
  return out;
}

}  // namespace crema
