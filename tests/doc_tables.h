// The implementation tables docs/primitives.md prints, read back for the tests that hold them
// against the code's tables.
#pragma once

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <regex>
#include <string>
#include <vector>

namespace crema::test {

// The implementation table docs/primitives.md prints under "## <section>": each device's
// algorithm names in the order of the document's rows ("| 1 | `name` | cuda | ..."). Tests hold
// it against the code's table, so the reference cannot drift.
inline std::map<std::string, std::vector<std::string>> documented_rows(const std::string& section) {
  std::map<std::string, std::vector<std::string>> rows;
  std::ifstream doc(std::string(CREMA_SOURCE_DIR) + "/docs/primitives.md");
  EXPECT_TRUE(doc) << "docs/primitives.md";
  const std::regex row(R"(^\| [0-9]+ \| `([a-z0-9_]+)` \| (cpu|cuda) \|)");
  bool inside = false;
  std::smatch m;
  for (std::string line; std::getline(doc, line);) {
    if (line.rfind("## ", 0) == 0) inside = line == "## " + section;
    if (inside && std::regex_search(line, m, row)) rows[m[2]].push_back(m[1]);
  }
  EXPECT_FALSE(rows.empty()) << "no table under ## " << section;
  return rows;
}

}  // namespace crema::test
