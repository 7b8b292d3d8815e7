// Error type and the checks that guard user input. A user mistake (bad prototxt, missing file,
// shape mismatch) becomes a crema::Error with one clear line; tools catch it at the top and exit
// non-zero. Internal invariants use glog's CHECK; user input never reaches a CHECK.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>

namespace crema {

// Control characters in the text (a NUL or a newline in a layer name read from an untrusted
// file) are written as \xNN, so that the message stays one whole line.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(one_line(what)) {}

  // The text as an Error shows it.
  static std::string one_line(const std::string& s) {
    std::string out;
    out.reserve(s.size());
    for (const char ch : s) {
      const auto c = static_cast<unsigned char>(ch);
      if (c >= 0x20 && c != 0x7f) {
        out += ch;
        continue;
      }
      static const char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
    return out;
  }
};

namespace detail {
// Builds a message from stream-able parts: make_message("layer ", name, ": bad kernel").
template <typename... Parts>
std::string make_message(const Parts&... parts) {
  std::ostringstream os;
  (os << ... << parts);
  return os.str();
}
}  // namespace detail

// Throws crema::Error whose text is the concatenation of the arguments.
template <typename... Parts>
[[noreturn]] void fail(const Parts&... parts) {
  throw Error(detail::make_message(parts...));
}

}  // namespace crema

// Validates user-controlled input: throws crema::Error(message) when cond is false.
#define CREMA_REQUIRE(cond, ...)             \
  do {                                       \
    if (!(cond)) ::crema::fail(__VA_ARGS__); \
  } while (0)
