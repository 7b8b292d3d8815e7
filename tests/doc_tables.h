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

// Expects the table under "## <section>" to list, per device, the names of algos(device) in
// order (a build without CUDA checks the CPU rows only).
template <typename Algo, typename Device>
void expect_documented(const std::string& section, std::vector<Algo> (*algos)(Device),
                       const char* (*name)(Algo)) {
  auto listed = documented_rows(section);
  for (const char* device : {"cpu", "cuda"}) {
    std::vector<std::string> names;
    for (Algo a : algos(std::string(device) == "cpu" ? Device::kCPU : Device::kCUDA))
      names.push_back(name(a));
    if (names.empty()) continue;
    EXPECT_EQ(listed[device], names) << section << ", " << device;
  }
}

}  // namespace crema::test
