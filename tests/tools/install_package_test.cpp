// The primitives library as an installed CMake package: `cmake --install` of this build into a
// temporary prefix, then examples/conv_forward configured, built and run against that prefix
// with find_package(crema), as a project outside crema would use it (docs/primitives.md).
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <string>

#include "data/data_test_util.h"
#include "primitives/handle.h"
#include "test_util.h"

namespace {

namespace fs = std::filesystem;

struct Result {
  int status = -1;
  std::string output;
};

// Runs a shell command, stdout and stderr together.
Result run(const std::string& cmd) {
  Result r;
  FILE* pipe = popen((cmd + " 2>&1").c_str(), "r");
  if (!pipe) return r;
  std::array<char, 4096> buf{};
  while (fgets(buf.data(), int(buf.size()), pipe)) r.output += buf.data();
  const int raw = pclose(pipe);
  r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : 128 + WTERMSIG(raw);
  return r;
}

std::string quoted(const std::string& s) { return "'" + s + "'"; }

const std::string kCmake = quoted(CREMA_CMAKE_COMMAND);

TEST(InstallPackage, ConvForwardExampleBuildsAndRunsAgainstTheInstalledLibrary) {
  if (crema::test::kAddressSanitizer)
    GTEST_SKIP() << "a sanitized library needs its runtime in every program built against it";
  crema::test::TempDir dir;
  const std::string prefix = dir.file("prefix"), build = dir.file("build");

  const Result install =
      run(kCmake + " --install " + quoted(CREMA_BINARY_DIR) + " --prefix " + quoted(prefix));
  ASSERT_EQ(install.status, 0) << install.output;

  // The package: the library, its CMake files, and headers that include only installed headers.
  const fs::path include = fs::path(prefix) / "include" / "crema";
  EXPECT_TRUE(fs::exists(include / "primitives" / "conv.h"));
  EXPECT_FALSE(fs::exists(include / "primitives" / "dispatch.h"));  // internal
  int headers = 0;
  const std::regex own_include(R"re(#include "(primitives/[^"]+)")re");
  for (const fs::directory_entry& e : fs::directory_iterator(include / "primitives")) {
    ++headers;
    std::ifstream in(e.path());
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    for (std::sregex_iterator m(text.begin(), text.end(), own_include), end; m != end; ++m)
      EXPECT_TRUE(fs::exists(include / (*m)[1].str()))
          << e.path().filename() << " includes " << (*m)[1] << ", which is not installed";
  }
  EXPECT_GE(headers, 20);
  bool config = false, archive = false;
  for (const fs::directory_entry& e : fs::recursive_directory_iterator(prefix)) {
    config |= e.path().filename() == "cremaConfig.cmake";
    archive |= e.path().filename() == "libcrema_primitives.a";
  }
  EXPECT_TRUE(config && archive) << install.output;

  const Result configure =
      run(kCmake + " -S " + quoted(std::string(CREMA_SOURCE_DIR) + "/examples/conv_forward") +
          " -B " + quoted(build) + " -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER=" +
          quoted(CREMA_CXX_COMPILER) + " -DCMAKE_PREFIX_PATH=" + quoted(prefix));
  ASSERT_EQ(configure.status, 0) << configure.output;
  const Result compile = run(kCmake + " --build " + quoted(build) + " -j1");
  ASSERT_EQ(compile.status, 0) << compile.output;

  const Result example = run(quoted(build + "/conv_forward"));
  EXPECT_EQ(example.status, 0) << example.output;
  EXPECT_NE(example.output.find("output 2 x 256 x 28 x 28\n"), std::string::npos) << example.output;
  EXPECT_NE(example.output.find("CPU: algorithm "), std::string::npos) << example.output;
  EXPECT_NE(example.output.find("CPU vs definition at 16 outputs"), std::string::npos)
      << example.output;
  // The GPU part runs exactly where this build sees a GPU.
  const bool gpu = crema::prim::cuda_available();
  EXPECT_EQ(example.output.find("GPU vs CPU: max abs difference") != std::string::npos, gpu)
      << example.output;
  EXPECT_EQ(example.output.find("no GPU visible") != std::string::npos, !gpu) << example.output;
  EXPECT_NE(example.output.find("conv_forward: OK\n"), std::string::npos) << example.output;
}

}  // namespace
