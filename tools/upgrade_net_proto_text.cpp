// upgrade_net_proto_text: upgrades a net prototxt (V0, V1 or current) to the current format, as
// Caffe's tool of that name does.
#include "core/upgrade_files.h"
#include "tool_main.h"

int main(int argc, char** argv) {
  return crema::tools::run_tool(argc, argv, "upgrade_net_proto_text",
                                "upgrade_net_proto_text INPUT OUTPUT\n"
                                "Reads INPUT, a net prototxt (V0, V1 or current), and writes it in "
                                "the current format to OUTPUT.",
                                2, 2, [](const std::vector<std::string>& args) {
                                  if (crema::upgrade_net_text_file(args[0], args[1]))
                                    std::printf("Wrote upgraded file to %s\n", args[1].c_str());
                                  else
                                    std::printf(
                                        "%s is already in the current format; copied to %s\n",
                                        args[0].c_str(), args[1].c_str());
                                  return 0;
                                });
}
