// Solver snapshots and restore: "<prefix>_iter_N.caffemodel" (the net with its weights) and
// "<prefix>_iter_N.solverstate" (iteration, multistep position, update history, and the name of
// the weights file), both binary protos written atomically, as Caffe writes them; with
// snapshot_format HDF5, "<prefix>_iter_N.caffemodel.h5" and ".solverstate.h5" in Caffe's HDF5
// layout (core/hdf5_weights.h).
#include <glog/logging.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <string>
#include <vector>

#include "core/errors.h"
#include "core/hdf5_weights.h"
#include "core/proto_io.h"
#include "core/rng.h"
#include "core/upgrade_proto.h"
#include "solver/solver.h"

namespace crema {
namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Writes one snapshot file, the weights (`what` "") or the solver state: in HDF5 through
// write_hdf5, or as a binary proto. A failure to write is a snapshot failure.
template <typename Message>
void write_snapshot_file(const Message& m, const std::string& file, bool hdf5, const char* what,
                         void (*write_hdf5)(const Message&, const std::string&)) {
  LOG(INFO) << "Snapshotting " << what << "to " << (hdf5 ? "HDF5" : "binary proto") << " file "
            << file;
  try {
    if (hdf5)
      write_hdf5(m, file);
    else
      write_binary_proto_atomic(m, file);
  } catch (const Error& e) {
    fail("snapshot failed: ", e.what());
  }
}

// Removes the temporary files a killed run of this prefix left behind: the atomic writes'
// "<prefix>_iter_N.caffemodel.tmp.<pid>" (or .solverstate) of a process that no longer exists.
// A live process's temporaries (another run writing its snapshot now) are left alone.
void remove_stale_temporaries(const std::string& prefix) {
  namespace fs = std::filesystem;
  const fs::path p(prefix);
  const fs::path folder = p.parent_path().empty() ? fs::path(".") : p.parent_path();
  const std::string stem = p.filename().string() + "_iter_";
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(folder, ec)) {
    const std::string name = entry.path().filename().string();
    const size_t tmp = name.rfind(".tmp.");
    if (name.rfind(stem, 0) != 0 || tmp == std::string::npos) continue;
    const std::string target = name.substr(0, tmp), pid = name.substr(tmp + 5);
    if (!ends_with(target, ".caffemodel") && !ends_with(target, ".solverstate") &&
        !ends_with(target, ".caffemodel.h5") && !ends_with(target, ".solverstate.h5"))
      continue;
    if (pid.empty() || pid.size() > 9 || pid.find_first_not_of("0123456789") != std::string::npos)
      continue;
    if (::kill(pid_t(std::stol(pid)), 0) == 0 || errno != ESRCH) continue;
    std::error_code removed;
    if (fs::remove(entry.path(), removed))
      LOG(INFO) << "Removed " << entry.path().string() << ", left by an interrupted snapshot";
  }
}

// The solver's nets by the names snapshots give them: "train", "test0", "test1", ...
template <typename Dtype>
std::vector<std::pair<std::string, const Net<Dtype>*>> nets_by_name(
    const Net<Dtype>& train, const std::vector<std::unique_ptr<Net<Dtype>>>& tests) {
  std::vector<std::pair<std::string, const Net<Dtype>*>> nets{{"train", &train}};
  for (size_t i = 0; i < tests.size(); ++i)
    nets.emplace_back("test" + std::to_string(i), tests[i].get());
  return nets;
}

}  // namespace

// Before the training time is spent: the folder the snapshots go to exists and is writable, and
// a fresh run finds no snapshots of its prefix there (an earlier run's, which it would overwrite).
template <typename Dtype>
void Solver<Dtype>::check_snapshot_folder(bool fresh) const {
  namespace fs = std::filesystem;
  const fs::path folder = fs::path(param_.snapshot_prefix()).parent_path();
  const std::string shown = folder.empty() ? "." : folder.string();
  std::error_code ec;
  CREMA_REQUIRE(folder.empty() || fs::is_directory(folder, ec), "snapshot_prefix \"",
                param_.snapshot_prefix(), "\": the folder ", shown, " does not exist");
  CREMA_REQUIRE(::access(shown.c_str(), W_OK) == 0, "snapshot_prefix \"", param_.snapshot_prefix(),
                "\": the folder ", shown, " is not writable");
  if (!fresh || overwrite_snapshots_) return;
  const std::string stem = fs::path(param_.snapshot_prefix()).filename().string() + "_iter_";
  std::vector<std::string> earlier;
  for (const auto& entry : fs::directory_iterator(folder.empty() ? fs::path(".") : folder, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(stem, 0) != 0) continue;
    const std::string rest = name.substr(stem.size());
    const size_t dot = rest.find('.');
    const std::string digits = rest.substr(0, dot),
                      ext = dot == std::string::npos ? "" : rest.substr(dot);
    if (!digits.empty() && digits.find_first_not_of("0123456789") == std::string::npos &&
        (ext == ".caffemodel" || ext == ".solverstate" || ext == ".caffemodel.h5" ||
         ext == ".solverstate.h5"))
      earlier.push_back(entry.path().string());
  }
  if (earlier.empty()) return;
  std::sort(earlier.begin(), earlier.end());
  fail("snapshot_prefix \"", param_.snapshot_prefix(), "\": snapshots of an earlier run exist (",
       earlier.front(),
       earlier.size() > 1 ? " and " + std::to_string(earlier.size() - 1) + " more" : "",
       "); resume from one (--snapshot), choose another snapshot_prefix, or pass "
       "--overwrite_snapshots");
}

template <typename Dtype>
std::string Solver<Dtype>::snapshot_filename(const char* extension) const {
  return param_.snapshot_prefix() + "_iter_" + std::to_string(iter_) + extension;
}

template <typename Dtype>
std::string Solver<Dtype>::snapshot() {
  const bool hdf5 = param_.snapshot_format() == SolverParameter::HDF5;
  remove_stale_temporaries(param_.snapshot_prefix());
  // Weights first, then the state that names them: a state file always has its weights.
  const std::string model_file = snapshot_filename(hdf5 ? ".caffemodel.h5" : ".caffemodel");
  NetParameter net_param;
  net_->to_proto(&net_param, param_.snapshot_diff());
  write_snapshot_file(net_param, model_file, hdf5, "", write_net_hdf5);
  SolverState state;
  state.set_iter(iter_);
  state.set_learned_net(model_file);
  state.set_current_step(current_step_);
  if (net_->loss_scale() != 1 || adaptive_scale_) {
    state.set_loss_scale(net_->loss_scale());
    state.set_loss_scale_good_steps(scaled_good_steps_);
  }
  for (const auto& h : history_) h->to_proto(state.add_history());
  for (const auto& [name, net] : nets_by_name(*net_, test_nets_)) {
    for (const auto& layer : net->layers()) {
      DataReaderState reader;
      if (!layer->reader_state(&reader)) continue;
      reader.set_net(name);
      reader.set_layer(layer->name());
      *state.add_data_reader() = reader;
    }
  }
  state.set_random_counter(h_.counter());
  state.set_host_random(random_to_text(thread_rng()));
  const std::string state_file = snapshot_filename(hdf5 ? ".solverstate.h5" : ".solverstate");
  write_snapshot_file(state, state_file, hdf5, "solver state ", write_solver_state_hdf5);
  return state_file;
}

template <typename Dtype>
void Solver<Dtype>::restore(const std::string& state_file) {
  namespace fs = std::filesystem;
  // Caffe's two formats, told apart by the file's first bytes rather than its name.
  SolverState state;
  if (looks_like_hdf5(state_file)) {
    try {
      state = read_solver_state_hdf5(state_file);
    } catch (const Error& e) {
      fail("cannot restore ", state_file, ": ", e.what());
    }
  } else {
    read_binary_proto(state_file, &state);
  }
  // Check everything before changing anything, so a bad state leaves the solver as it was.
  CREMA_REQUIRE(state.iter() >= 0 && state.current_step() >= 0, "cannot restore ", state_file,
                ": its iteration (", state.iter(), ") and multistep position (",
                state.current_step(), ") must be >= 0");
  CREMA_REQUIRE(state.history_size() == int(history_.size()), "cannot restore ", state_file,
                ": it holds ", state.history_size(), " history blobs but the ", type(),
                " solver of net \"", net_->name(), "\" needs ", history_.size(),
                " (was it written for another net or solver type?)");
  if (state.has_loss_scale()) {
    try {
      net_->check_loss_scale(state.loss_scale());
    } catch (const Error& e) {
      fail("cannot restore ", state_file, ": ", e.what());
    }
  }
  // The data readers' places, each checked to name a layer that reads data.
  const auto nets = nets_by_name(*net_, test_nets_);
  std::vector<std::pair<Layer<Dtype>*, const DataReaderState*>> readers;
  for (const DataReaderState& reader : state.data_reader()) {
    Layer<Dtype>* found = nullptr;
    for (const auto& [name, net] : nets)
      if (name == reader.net())
        for (const auto& layer : net->layers())
          if (layer->name() == reader.layer()) found = layer.get();
    DataReaderState probe;
    CREMA_REQUIRE(found && found->reader_state(&probe), "cannot restore ", state_file,
                  ": it holds the reading position of layer \"", reader.layer(), "\" of the ",
                  reader.net(),
                  " net, which has no such data layer (was it written for another net?)");
    readers.emplace_back(found, &reader);
  }
  Rng host_random;
  if (state.has_host_random()) {
    try {
      host_random = random_from_text(state.host_random(), "host_random");
    } catch (const Error& e) {
      fail("cannot restore ", state_file, ": ", e.what());
    }
  }
  std::vector<std::unique_ptr<Tensor<Dtype>>> restored;
  for (int i = 0; i < state.history_size(); ++i) {
    restored.push_back(std::make_unique<Tensor<Dtype>>(history_[i]->shape(), device_));
    try {
      restored.back()->from_proto(state.history(i), /*reshape=*/false);
    } catch (const Error& e) {
      fail("cannot restore ", state_file, ": history blob ", i, ": ", e.what(),
           " (was it written for another net?)");
    }
  }
  if (state.has_learned_net()) {
    // Caffe opens learned_net as stored (relative to the working directory). A snapshot folder
    // moved or used from elsewhere still works: then the file of that name beside the state.
    std::string weights = state.learned_net();
    if (!fs::exists(weights)) {
      const fs::path beside = fs::path(state_file).parent_path() / fs::path(weights).filename();
      CREMA_REQUIRE(fs::exists(beside), "cannot restore ", state_file, ": its weights ", weights,
                    " exist neither there nor at ", beside.string());
      weights = beside.string();
    }
    LOG(INFO) << "Restoring weights from " << weights;
    try {
      require_weights_copied(net_->copy_trained_layers_from(load_net_param_binary(weights)),
                             weights);
    } catch (const Error& e) {
      fail("cannot restore ", state_file, ": ", e.what());
    }
  }
  for (size_t i = 0; i < history_.size(); ++i) history_[i]->copy_from(*restored[i]);
  iter_ = state.iter();
  current_step_ = state.current_step();
  if (state.has_loss_scale()) {
    net_->set_loss_scale(h_, state.loss_scale());
    scaled_good_steps_ = std::max(0, state.loss_scale_good_steps());
  }
  for (const auto& [layer, reader] : readers) {
    try {
      layer->restore_reader_state(*reader);
    } catch (const Error& e) {
      fail("cannot restore ", state_file, ": ", e.what());
    }
  }
  if (state.has_random_counter()) h_.set_counter(state.random_counter());
  if (state.has_host_random()) thread_rng() = host_random;
  LOG(INFO) << "Restored solver state at iteration " << iter_;
}

// The rest of Solver is instantiated in solver.cpp; these members are defined here.
#define CREMA_INSTANTIATE(T)                                            \
  template void Solver<T>::check_snapshot_folder(bool) const;           \
  template std::string Solver<T>::snapshot_filename(const char*) const; \
  template std::string Solver<T>::snapshot();                           \
  template void Solver<T>::restore(const std::string&);
CREMA_INSTANTIATE(float)
CREMA_INSTANTIATE(double)
#undef CREMA_INSTANTIATE

}  // namespace crema
