// Per-thread random generator, and generators' states as text.
#include "core/rng.h"

#include <sstream>

#include "core/errors.h"

namespace crema {

Rng& thread_rng() {
  thread_local Rng rng(std::random_device{}());
  return rng;
}

void seed_thread_rng(int64_t seed) {
  thread_rng().seed(seed < 0 ? uint64_t(std::random_device{}()) : uint64_t(seed));
}

std::string random_to_text(const Rng& rng) {
  std::ostringstream os;
  os << rng;
  return os.str();
}

Rng random_from_text(const std::string& text, const std::string& what) {
  // The state is 312 numbers; a longer text is not one (and is not parsed at length).
  CREMA_REQUIRE(text.size() <= 8192, what, ": not a random generator's state (", text.size(),
                " bytes)");
  std::istringstream is(text);
  Rng rng;
  is >> rng;
  std::string rest;
  CREMA_REQUIRE(!is.fail() && !(is >> rest), what, ": not a random generator's state");
  return rng;
}

}  // namespace crema
