// upgrade_solver_proto_text: upgrades a solver prototxt (solver_type enum or current) to the
// current format, as Caffe's tool of that name does.
#include "core/upgrade_files.h"
#include "tool_main.h"

int main(int argc, char** argv) {
  return crema::tools::run_upgrade_tool(argc, argv, "upgrade_solver_proto_text",
                                        "a solver prototxt (solver_type enum or current)",
                                        crema::upgrade_solver_text_file);
}
