// upgrade_net_proto_text: upgrades a net prototxt (V0, V1 or current) to the current format, as
// Caffe's tool of that name does.
#include "core/upgrade_files.h"
#include "tool_main.h"

int main(int argc, char** argv) {
  return crema::tools::run_upgrade_tool(argc, argv, "upgrade_net_proto_text",
                                        "a net prototxt (V0, V1 or current)",
                                        crema::upgrade_net_text_file);
}
