// The fuzz targets' shared contract (libFuzzer, built by scripts/fuzz.sh under AddressSanitizer
// and UndefinedBehaviorSanitizer): an input is either accepted or refused with crema::Error, the
// one-line error every tool prints. Anything else (a crash, a sanitizer report, a hang, any other
// exception escaping) is a finding.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/errors.h"

namespace crema::fuzz {

inline std::string_view bytes_of(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
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
