// Net weights and solver states in HDF5, in Caffe's layout, so that Caffe reads crema's files
// and crema reads Caffe's:
//
//   <prefix>_iter_N.caffemodel.h5   /data/<layer name>/<i>  blob i of the layer (float or double,
//                                   the blob's shape); /diff/<layer name>/<i> with snapshot_diff
//   <prefix>_iter_N.solverstate.h5  /iter, /current_step (scalar ints), /learned_net (string),
//                                   /history/<i> (the solver's history blobs, in order)
//
// A layer name holding '/' (GoogLeNet's "conv1/7x7_s2") is a group inside a group; a layer is
// read from any group that holds numbered datasets. crema's resume fields of SolverState (data
// reader positions, generator states, loss scale: numbers 1001 and up) go into one more dataset,
// /crema_state, the binary proto of those fields as bytes; Caffe ignores it.
//
// Writes build the file in memory and then write it atomically (core/proto_io.h). Reads treat
// the file as untrusted: every failure is a crema::Error naming the file.
#pragma once

#include <string>

#include "crema.pb.h"

namespace crema {

// Whether path starts like an HDF5 file (its signature at offset 0, 512, 1024, ...). Needs no
// libhdf5, so a build without it still recognizes the files it cannot read.
bool looks_like_hdf5(const std::string& path);

// The layers and blobs of an HDF5 weights file as a NetParameter (layer names and blobs only).
// A blob index missing from a layer's group (Caffe writes a shared parameter once, under its
// owner) is an empty BlobProto, which Net::copy_trained_layers_from accepts for a shared blob.
NetParameter read_net_hdf5(const std::string& path);
// Writes every layer's blobs (data, and diff where the blobs hold one) of net.
void write_net_hdf5(const NetParameter& net, const std::string& path);

SolverState read_solver_state_hdf5(const std::string& path);
void write_solver_state_hdf5(const SolverState& state, const std::string& path);

}  // namespace crema
