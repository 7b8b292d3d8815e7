// File-to-file upgrades of old Caffe definitions, behind tools/upgrade_net_proto_text,
// upgrade_net_proto_binary and upgrade_solver_proto_text: read in any supported format (V0, V1 or
// current), upgrade (upgrade_proto.h), write in the current format. The output is written
// atomically, so a failure never leaves a half-written file.
#pragma once

#include <string>

namespace crema {

// Each returns whether the input needed an upgrade (the output is written either way). Errors
// (unreadable input, syntax, an unknown V1 layer type) throw crema::Error naming the input.
bool upgrade_net_text_file(const std::string& input, const std::string& output);
bool upgrade_net_binary_file(const std::string& input, const std::string& output);
bool upgrade_solver_text_file(const std::string& input, const std::string& output);

}  // namespace crema
