// Upgrade of old Caffe net and solver definitions to the current schema, as Caffe does on load:
// V0 nets (`layers { layer { type: "conv" } }`, padding layers) and V1 nets
// (`layers { type: CONVOLUTION }`) become `layer { type: "Convolution" }` with blobs_lr /
// weight_decay turned into ParamSpec lr_mult / decay_mult; legacy data-layer preprocessing moves
// to transform_param; net-level `input` / `input_dim` / `input_shape` become an Input layer;
// the solver's `solver_type` enum becomes the `type` string. Plus the loaders that read a file
// and upgrade it in one step.
#pragma once

#include <string>

#include "crema.pb.h"

namespace crema {

// True when upgrade_net would change the net.
bool net_needs_upgrade(const NetParameter& net);

// Upgrades *net in place to the current format. source_name (usually the file path) prefixes
// every error, which also names the offending layer: unknown V0/V1 layer types, V0 fields that do
// not apply to the layer's type, inconsistent net inputs, or V1 and current layers mixed.
void upgrade_net(NetParameter* net, const std::string& source_name);

// True when the solver uses the legacy `solver_type` enum.
bool solver_needs_upgrade(const SolverParameter& solver);

// Moves `solver_type` into `type` ("SGD", "Nesterov", "AdaGrad", "RMSProp", "AdaDelta", "Adam").
// Both set to different solvers is an Error. Inline nets (net_param, train_net_param,
// test_net_param) are upgraded too; source_name prefixes errors.
void upgrade_solver(SolverParameter* solver, const std::string& source_name = "solver");

// Reads a text prototxt net and upgrades it.
NetParameter load_net_param_text(const std::string& path);
// Reads a binary net (.caffemodel) and upgrades it. An HDF5 weights file (.caffemodel.h5, known
// by its signature) is read as core/hdf5_weights.h says: its layers' names and blobs.
NetParameter load_net_param_binary(const std::string& path);
// Reads a text solver prototxt and upgrades it.
SolverParameter load_solver_param(const std::string& path);

}  // namespace crema
