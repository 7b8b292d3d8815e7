// parse_text: a message read from the text format, for the tests that write their nets and
// solvers inline.
#pragma once

#include <string>

#include "core/proto_io.h"

namespace crema::test {

// text parsed as a Message; errors name it `name`, as they would a file.
template <typename Message>
Message parse_text(const std::string& text, const std::string& name = "test.prototxt") {
  Message m;
  read_text_proto_string(text, name, &m);
  return m;
}

}  // namespace crema::test
