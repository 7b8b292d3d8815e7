// error_of: the message of the crema::Error a piece of test code throws, for the tests of
// error messages.
#pragma once

#include <string>

#include "core/errors.h"

namespace crema::test {

// The message of the crema::Error f throws, or "(no error)" when it throws none (which no
// expected message matches, so a test of an error still fails).
template <typename F>
std::string error_of(const F& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace crema::test
