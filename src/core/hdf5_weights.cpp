// Net weights (.caffemodel.h5) and solver states (.solverstate.h5) in Caffe's HDF5 layout.
#include "core/hdf5_weights.h"

#include <cstring>
#include <fstream>
#include <map>

#include "core/errors.h"
#include "core/hdf5_io.h"
#include "core/proto_io.h"

namespace crema {
namespace {

constexpr int kMaxGroupDepth = 32;  // a cycle of hard links must not recurse forever
constexpr const char* kCremaState = "crema_state";

// "12" -> 12; anything that is not a plain decimal index -> -1.
int blob_index(const std::string& name) {
  if (name.empty() || name.size() > 6 || name.find_first_not_of("0123456789") != std::string::npos)
    return -1;
  return std::stoi(name);
}

BlobProto read_blob(hdf5::Id group, const std::string& name, const std::string& where) {
  BlobProto blob;
  const hdf5::DatasetInfo info = hdf5::dataset_info(group, name, where);
  for (const int64_t d : info.dims) blob.mutable_shape()->add_dim(d);
  if (info.is_double) {
    const std::vector<double> v = hdf5::read_dataset<double>(group, name, where);
    blob.mutable_double_data()->Add(v.begin(), v.end());
  } else {
    const std::vector<float> v = hdf5::read_dataset<float>(group, name, where);
    blob.mutable_data()->Add(v.begin(), v.end());
  }
  return blob;
}

// A blob's dimensions: its shape, or the legacy four.
std::vector<int64_t> blob_dims(const BlobProto& b) {
  if (b.has_num() || b.has_channels() || b.has_height() || b.has_width())
    return {b.num(), b.channels(), b.height(), b.width()};
  return std::vector<int64_t>(b.shape().dim().begin(), b.shape().dim().end());
}

// Writes the blob's data (or diff) as dataset `name`; a diff the blob does not hold is skipped.
void write_blob(hdf5::Id group, const std::string& name, const BlobProto& b, bool diff,
                const std::string& where) {
  const std::vector<int64_t> dims = blob_dims(b);
  int64_t count = 1;
  for (const int64_t d : dims) count *= d;
  const bool doubles = diff ? b.double_diff_size() > 0 : b.double_data_size() > 0;
  const int64_t stored = diff ? (doubles ? b.double_diff_size() : b.diff_size())
                              : (doubles ? b.double_data_size() : b.data_size());
  if (diff && stored == 0) return;
  if (stored != count) fail(where, ": blob ", name, " holds ", stored, " values for ", count);
  if (doubles)
    hdf5::write_dataset(group, name, dims, diff ? b.double_diff().data() : b.double_data().data(),
                        where);
  else
    hdf5::write_dataset(group, name, dims, diff ? b.diff().data() : b.data().data(), where);
}

// Every group under `group` that holds numbered datasets, or holds nothing at all (a layer
// without parameters), becomes a layer named by its path below /data.
void collect_layers(hdf5::Id group, const std::string& path, int depth, const std::string& file,
                    NetParameter* net) {
  const std::string where = file + ": group \"data/" + path + "\"";
  if (depth > kMaxGroupDepth) fail(where, ": groups nested too deep");
  std::map<int, BlobProto> blobs;
  bool has_subgroups = false;
  for (const std::string& name : hdf5::link_names(group, where)) {
    if (hdf5::is_group(group, name)) {
      has_subgroups = true;
      const hdf5::Object sub = hdf5::open_group(group, name, where);
      collect_layers(sub.id(), path.empty() ? name : path + "/" + name, depth + 1, file, net);
    } else if (const int index = blob_index(name); index >= 0) {
      blobs[index] = read_blob(group, name, where);
    }
  }
  if (path.empty() || (blobs.empty() && has_subgroups)) return;
  LayerParameter* layer = net->add_layer();
  layer->set_name(path);
  const int count = blobs.empty() ? 0 : blobs.rbegin()->first + 1;
  for (int i = 0; i < count; ++i) {
    const auto it = blobs.find(i);
    *layer->add_blobs() = it == blobs.end() ? BlobProto() : it->second;
  }
}

// Layer names become HDF5 paths: one that would leave its group is refused.
void check_layer_name(const std::string& name, const std::string& file) {
  bool bad = name.empty() || name.front() == '/' || name.back() == '/' ||
             name.find("//") != std::string::npos;
  for (size_t start = 0; !bad && start <= name.size();) {
    const size_t end = std::min(name.find('/', start), name.size());
    const std::string part = name.substr(start, end - start);
    bad = part == "." || part == "..";
    start = end + 1;
  }
  if (bad)
    fail("cannot write ", file, ": layer name \"", name, "\" is not a valid HDF5 group name");
}

// The fields of SolverState past Caffe's (numbers 1001 and up).
SolverState crema_fields(const SolverState& state) {
  SolverState extra = state;
  extra.clear_iter();
  extra.clear_learned_net();
  extra.clear_history();
  extra.clear_current_step();
  return extra;
}

}  // namespace

bool looks_like_hdf5(const std::string& path) {
  static const char kSignature[8] = {'\x89', 'H', 'D', 'F', '\r', '\n', '\x1a', '\n'};
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  in.seekg(0, std::ios::end);
  const std::streamoff size = in.tellg();
  // The superblock is at 0 or at 512 times a power of two (after a user block).
  for (std::streamoff at = 0; at + 8 <= size; at = at == 0 ? 512 : at * 2) {
    char head[8];
    in.seekg(at);
    if (!in.read(head, 8)) return false;
    if (std::memcmp(head, kSignature, 8) == 0) return true;
  }
  return false;
}

namespace {

NetParameter read_net_in_process(const std::string& path) {
  hdf5::File file = hdf5::File::open(path);
  if (!hdf5::is_group(file.id(), "data"))
    fail(path, ": no group \"data\"; not a weights file (.caffemodel.h5)");
  const hdf5::Object data = hdf5::open_group(file.id(), "data", path);
  NetParameter net;
  collect_layers(data.id(), "", 0, path, &net);
  return net;
}

}  // namespace

NetParameter read_net_hdf5(const std::string& path) {
  return hdf5::read_checked<read_net_in_process>(path, "weights");
}

void write_net_hdf5(const NetParameter& net, const std::string& path) {
  hdf5::File file = hdf5::File::create_in_memory(path);
  const hdf5::Object data = hdf5::create_group(file.id(), "data", path);
  bool any_diff = false;
  for (const LayerParameter& layer : net.layer())
    for (const BlobProto& b : layer.blobs()) any_diff |= b.diff_size() + b.double_diff_size() > 0;
  const hdf5::Object diff = any_diff ? hdf5::create_group(file.id(), "diff", path) : hdf5::Object();
  for (const LayerParameter& layer : net.layer()) {
    check_layer_name(layer.name(), path);
    const std::string where = path + ": layer " + layer.name();
    const hdf5::Object group = hdf5::create_group(data.id(), layer.name(), where);
    const hdf5::Object diff_group =
        any_diff ? hdf5::create_group(diff.id(), layer.name(), where) : hdf5::Object();
    for (int i = 0; i < layer.blobs_size(); ++i) {
      write_blob(group.id(), std::to_string(i), layer.blobs(i), false, where);
      if (any_diff) write_blob(diff_group.id(), std::to_string(i), layer.blobs(i), true, where);
    }
  }
  write_file_atomic(file.image(), path);
}

namespace {

SolverState read_solver_state_in_process(const std::string& path) {
  hdf5::File file = hdf5::File::open(path);
  SolverState state;
  state.set_iter(int32_t(hdf5::read_int(file.id(), "iter", path)));
  if (hdf5::has_link(file.id(), "learned_net"))
    state.set_learned_net(hdf5::read_string(file.id(), "learned_net", path));
  if (hdf5::has_link(file.id(), "current_step"))
    state.set_current_step(int32_t(hdf5::read_int(file.id(), "current_step", path)));
  const hdf5::Object history = hdf5::open_group(file.id(), "history", path);
  const std::string where = path + ": group \"history\"";
  const size_t count = hdf5::link_names(history.id(), where).size();
  for (size_t i = 0; i < count; ++i)
    *state.add_history() = read_blob(history.id(), std::to_string(i), where);
  if (hdf5::has_link(file.id(), kCremaState)) {
    SolverState extra;
    read_binary_proto_bytes(hdf5::read_bytes(file.id(), kCremaState, path),
                            path + ": dataset \"" + kCremaState + "\"", &extra);
    state.MergeFrom(crema_fields(extra));
  }
  return state;
}

}  // namespace

SolverState read_solver_state_hdf5(const std::string& path) {
  return hdf5::read_checked<read_solver_state_in_process>(path, "a solver state");
}

void write_solver_state_hdf5(const SolverState& state, const std::string& path) {
  hdf5::File file = hdf5::File::create_in_memory(path);
  hdf5::write_int(file.id(), "iter", state.iter(), path);
  hdf5::write_string(file.id(), "learned_net", state.learned_net(), path);
  hdf5::write_int(file.id(), "current_step", state.current_step(), path);
  const hdf5::Object history = hdf5::create_group(file.id(), "history", path);
  for (int i = 0; i < state.history_size(); ++i)
    write_blob(history.id(), std::to_string(i), state.history(i), false, path);
  const SolverState extra = crema_fields(state);
  if (extra.ByteSizeLong() > 0)
    hdf5::write_bytes(file.id(), kCremaState, extra.SerializeAsString(), path);
  write_file_atomic(file.image(), path);
}

}  // namespace crema
