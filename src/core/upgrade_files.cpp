// Read, upgrade, write for the upgrade_* tools.
#include "core/upgrade_files.h"

#include "core/proto_io.h"
#include "core/upgrade_proto.h"
#include "crema.pb.h"

namespace crema {

bool upgrade_net_text_file(const std::string& input, const std::string& output) {
  NetParameter net;
  read_text_proto(input, &net);
  const bool needed = net_needs_upgrade(net);
  if (needed) upgrade_net(&net, input);
  write_text_proto_atomic(net, output);
  return needed;
}

bool upgrade_net_binary_file(const std::string& input, const std::string& output) {
  NetParameter net;
  read_binary_proto(input, &net);
  const bool needed = net_needs_upgrade(net);
  if (needed) upgrade_net(&net, input);
  write_binary_proto_atomic(net, output);
  return needed;
}

bool upgrade_solver_text_file(const std::string& input, const std::string& output) {
  SolverParameter solver;
  read_text_proto(input, &solver);
  const bool needed = solver_needs_upgrade(solver);
  if (needed) upgrade_solver(&solver, input);
  write_text_proto_atomic(solver, output);
  return needed;
}

}  // namespace crema
