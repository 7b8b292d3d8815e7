// The shared entry of the single-purpose tools (convert_imageset, compute_image_mean, ...):
// --help prints the usage and the tool's own flags (exit 0); flags are parsed with gflags as
// Caffe's tools parse them; glog goes to stderr; a wrong number of arguments and every error
// thrown by the work become one "<tool>: error: <message>" line and exit status 1.
#pragma once

#include <gflags/gflags.h>
#include <glog/logging.h>

#include <cstdio>
#include <cstring>
#include <exception>
#include <functional>
#include <string>
#include <vector>

#include "primitives/blas_kernels.h"

namespace crema::tools {

// usage: the text after "usage: " (arguments and a description). Runs body on the positional
// arguments when there are between min_args and max_args of them; body returns the exit status.
inline int run_tool(int argc, char** argv, const char* name, const std::string& usage,
                    size_t min_args, size_t max_args,
                    const std::function<int(const std::vector<std::string>&)>& body) {
  prim::prepare_blas_process(argv);
  gflags::SetUsageMessage(std::string("usage: ") + usage);
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--help") || !std::strcmp(argv[i], "-help") ||
        !std::strcmp(argv[i], "-h")) {
      gflags::ShowUsageWithFlagsRestrict(argv[0], (std::string("tools/") + name).c_str());
      return 0;
    }
  }
  FLAGS_log_year_in_prefix = false;  // Caffe's line prefix, as the crema tool
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  FLAGS_logtostderr = true;
  google::InitGoogleLogging(argv[0]);
  const std::vector<std::string> args(argv + 1, argv + argc);
  if (args.size() < min_args || args.size() > max_args) {
    std::fprintf(stderr, "%s: error: expected %s arguments, got %zu (see --help)\n", name,
                 min_args == max_args
                     ? std::to_string(min_args).c_str()
                     : (std::to_string(min_args) + " to " + std::to_string(max_args)).c_str(),
                 args.size());
    return 1;
  }
  try {
    return body(args);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: error: %s\n", name, e.what());
    return 1;
  }
}

// The upgrade_* tools: INPUT is read and written to OUTPUT in the current format by upgrade,
// which returns false where INPUT was already current (it is then copied as it is). what names
// INPUT's kind and the formats read, for the usage.
inline int run_upgrade_tool(int argc, char** argv, const char* name, const std::string& what,
                            bool (*upgrade)(const std::string&, const std::string&)) {
  return run_tool(argc, argv, name,
                  std::string(name) + " INPUT OUTPUT\nReads INPUT, " + what +
                      ", and writes it in the current format to OUTPUT.",
                  2, 2, [upgrade](const std::vector<std::string>& args) {
                    if (upgrade(args[0], args[1]))
                      std::printf("Wrote upgraded file to %s\n", args[1].c_str());
                    else
                      std::printf("%s is already in the current format; copied to %s\n",
                                  args[0].c_str(), args[1].c_str());
                    return 0;
                  });
}

}  // namespace crema::tools
