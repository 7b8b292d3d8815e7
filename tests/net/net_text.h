// A NetParameter from prototxt text, for the net tests (a parse failure fails the test).
#pragma once

#include <google/protobuf/text_format.h>
#include <gtest/gtest.h>

#include <string>

#include "crema.pb.h"

namespace crema::test {

inline NetParameter parse_net(const std::string& text) {
  NetParameter p;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &p)) << text;
  return p;
}

}  // namespace crema::test
