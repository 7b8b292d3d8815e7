// The fuzz targets' shared contract (libFuzzer, built by scripts/fuzz.sh under AddressSanitizer
// and UndefinedBehaviorSanitizer): an input is either accepted or refused with crema::Error, the
// one-line error every tool prints. Anything else (a crash, a sanitizer report, a hang, any other
// exception escaping) is a finding.
#pragma once

#include <unistd.h>

#include <cctype>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "core/errors.h"
#include "core/proto_io.h"
#include "core/upgrade_proto.h"
#include "crema.pb.h"

namespace crema::fuzz {

inline std::string_view bytes_of(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// The input as a prototxt net, parsed and upgraded as the tools load one (crema::Error if bad).
inline NetParameter net_from_text(const uint8_t* data, size_t size) {
  NetParameter net;
  read_text_proto_string(std::string(bytes_of(data, size)), "net.prototxt", &net);
  upgrade_net(&net, "net.prototxt");
  return net;
}

// A file holding the input, for readers that take a path: one per process, rewritten each run.
inline std::string as_file(const uint8_t* data, size_t size, const char* name) {
  static const std::filesystem::path dir = [] {
    std::filesystem::path d =
        std::filesystem::temp_directory_path() / ("crema_fuzz_" + std::to_string(::getpid()));
    std::filesystem::create_directories(d);
    return d;
  }();
  const std::string path = (dir / name).string();
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f || std::fwrite(data, 1, size, f) != size || std::fclose(f) != 0) std::abort();
  return path;
}

// A folder's files packed into one input: per file a name (one byte of length, then the name)
// and its bytes (four bytes of length, little-endian, then the bytes). make_seeds packs real
// databases; unpack_folder writes what an input holds into a fresh folder, one per process, and
// stops at the first frame that does not fit or names no plain file.
inline std::string pack_folder(const std::vector<std::pair<std::string, std::string>>& files) {
  std::string out;
  for (const auto& [name, bytes] : files) {
    out += char(name.size());
    out += name;
    for (int i = 0; i < 4; ++i) out += char((bytes.size() >> (8 * i)) & 0xff);
    out += bytes;
  }
  return out;
}

inline std::string unpack_folder(const uint8_t* data, size_t size, const char* name) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("crema_fuzz_" + std::to_string(::getpid())) / name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  size_t at = 0;
  while (at < size) {
    const size_t len = data[at++];
    if (len == 0 || len > 64 || size - at < len + 4) break;
    const std::string file(reinterpret_cast<const char*>(data + at), len);
    at += len;
    size_t bytes = 0;
    for (int i = 0; i < 4; ++i) bytes |= size_t(data[at++]) << (8 * i);
    if (bytes > size - at) break;
    bool plain = file != "." && file != "..";
    for (char c : file)
      plain = plain &&
              (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_');
    if (!plain) break;
    const std::string path = (dir / file).string();
    std::FILE* f = std::fopen(path.c_str(), "wb");
    if (!f || std::fwrite(data + at, 1, bytes, f) != bytes || std::fclose(f) != 0) std::abort();
    at += bytes;
  }
  return dir.string();
}

// Runs f, accepting a clean refusal.
template <typename F>
void refused_or_accepted(F&& f) {
  try {
    f();
  } catch (const crema::Error&) {
  }
}

}  // namespace crema::fuzz
