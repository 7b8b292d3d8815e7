// docs/primitives.md is the library's reference: its "Operations" table names every descriptor
// and every entry point the public headers declare, so a new one cannot go undocumented.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

namespace {

std::string read(const std::filesystem::path& p) {
  std::ifstream in(p);
  EXPECT_TRUE(in) << p;
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The text of docs/primitives.md from "## Operations" to the next "## ".
std::string operations_section() {
  const std::string doc = read(std::string(CREMA_SOURCE_DIR) + "/docs/primitives.md");
  const size_t begin = doc.find("\n## Operations\n");
  EXPECT_NE(begin, std::string::npos) << "no ## Operations in docs/primitives.md";
  if (begin == std::string::npos) return "";
  const size_t end = doc.find("\n## ", begin + 1);
  return doc.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
}

TEST(PrimitivesDocs, OperationsNameEveryDescriptorAndEntryPoint) {
  const std::string ops = operations_section();
  // Entry points take the Handle first; descriptors are the structs the headers declare.
  const std::regex entry(R"(\b([a-z][a-z0-9_]*)\(Handle& h\b)"),
      desc(R"(\nstruct ([A-Za-z0-9]+) \{)");
  const std::set<std::string> not_ops = {"handle.h", "types.h", "view.h", "blas_kernels.h"};
  int checked = 0;
  for (const auto& f : std::filesystem::directory_iterator(std::string(CREMA_SOURCE_DIR) +
                                                           "/src/primitives/include/primitives")) {
    const std::string name = f.path().filename().string();
    if (not_ops.count(name)) continue;
    const std::string header = read(f.path());
    EXPECT_NE(ops.find("`" + name + "`"), std::string::npos) << name << " has no row";
    for (const std::regex& re : {entry, desc})
      for (std::sregex_iterator it(header.begin(), header.end(), re), end; it != end; ++it) {
        EXPECT_NE(ops.find("`" + (*it)[1].str() + "`"), std::string::npos)
            << name << ": " << (*it)[1] << " is not in docs/primitives.md's Operations";
        ++checked;
      }
  }
  EXPECT_GT(checked, 100);
}

}  // namespace
