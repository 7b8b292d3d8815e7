// The fuzz targets' shared contract (libFuzzer, built by scripts/fuzz.sh under AddressSanitizer
// and UndefinedBehaviorSanitizer): an input is either accepted or refused with crema::Error, the
// one-line error every tool prints. Anything else (a crash, a sanitizer report, a hang, any other
// exception escaping) is a finding.
#pragma once

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>

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

// Runs f, accepting a clean refusal.
template <typename F>
void refused_or_accepted(F&& f) {
  try {
    f();
  } catch (const crema::Error&) {
  }
}

}  // namespace crema::fuzz
