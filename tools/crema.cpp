// The crema command-line tool, as Caffe's `caffe`: train, test, time, device_query; and draw,
// classify and export (to ONNX).
// Every user mistake ends in one "crema: error: ..." line and exit status 1.
#include <gflags/gflags.h>
#include <glog/logging.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "backends/classify.h"
#include "backends/draw_net.h"
#include "backends/extract_features.h"
#include "core/errors.h"
#include "core/net.h"
#include "core/precision.h"
#include "core/upgrade_proto.h"
#include "primitives/blas.h"
#include "primitives/blas_kernels.h"
#include "primitives/conv.h"
#include "primitives/handle.h"
#include "solver/data_parallel.h"
#include "solver/solver.h"
#ifdef CREMA_WITH_ONNX
#include "export/onnx_export.h"
#endif
#ifdef CREMA_WITH_PYTHON
#include "embed.h"
#endif

DEFINE_string(solver, "", "train: the solver definition (prototxt)");
DEFINE_string(model, "", "test, time, export: the network definition (prototxt)");
DEFINE_string(weights, "",
              "train, test, export: trained weights (.caffemodel); train and test take several, "
              "separated by commas, copied by layer name");
DEFINE_string(snapshot, "", "train: a .solverstate to resume from");
DEFINE_bool(overwrite_snapshots, false,
            "train: start even where snapshots of the solver's snapshot_prefix already exist "
            "(they are overwritten as the new run reaches them)");
DEFINE_string(gpu, "",
              "the GPUs to run on: ids separated by commas, or 'all'; train runs one replica "
              "per GPU (data parallel, batch_size per GPU), test and time use the first; "
              "empty: the solver's solver_mode where a GPU is present, else the CPU");
DEFINE_string(precision, "",
              "train, test, time: fp32, tf32, bf16 or fp16, overriding the nets' precision "
              "fields (default: the files'; math they leave unset is TF32 on a GPU)");
DEFINE_bool(channels_last, false,
            "train, test, time: on a GPU, store the nets' 4-d activations channels last (NHWC) "
            "where every layer touching them can (guide/precision.md); the CPU keeps NCHW");
DEFINE_bool(verbose, false,
            "train, test, time: log each convolution's algorithm choice and the algorithms it "
            "skipped, with their reasons (the same as CREMA_VERBOSE=1)");
DEFINE_bool(autotune, false,
            "train, test, time: time every convolution algorithm once per layer shape and keep "
            "the fastest, remembered in --autotune_file for the next run on this device");
DEFINE_string(autotune_file, "",
              "where --autotune keeps its choices (default: $XDG_CACHE_HOME/crema/"
              "conv_algorithms, else ~/.cache/crema/conv_algorithms)");
DEFINE_string(cuda_graph, "on",
              "train: on replays each step's forward and backward on a GPU from a CUDA graph "
              "where the net allows it (one launch instead of one per kernel); off launches "
              "every kernel");
DEFINE_int32(iterations, 50, "test, time: the number of iterations");
DEFINE_int32(level, 0,
             "train, test, time: the net state's level, which layers' include/exclude rules "
             "compare with min_level and max_level (train: the training net's)");
DEFINE_string(stage, "",
              "train, test, time: the net state's stages, separated by commas, which layers' "
              "rules name in stage and not_stage (train: the training net's)");
DEFINE_string(phase, "",
              "time: the phase of the net (TRAIN or TEST; default TRAIN); draw: the phase whose "
              "layers to draw (default: all layers)");
DEFINE_string(out, "", "draw: the drawing to write (.svg, .png, .pdf, or .dot for the graph text)");
DEFINE_string(rankdir, "LR", "draw: the direction of the graph (LR, RL, TB or BT)");
DEFINE_string(labels, "", "classify: the class names, one per line (default: class numbers)");
DEFINE_string(mean_file, "", "classify: a mean image (.binaryproto) subtracted as in training");
DEFINE_string(mean_value, "",
              "classify: per-channel means subtracted as in training, e.g. 104,117,123");
DEFINE_double(scale, 1.0,
              "classify: the factor applied after the mean, as transform_param's scale");
DEFINE_int32(top, 5, "classify: how many classes to print per image");
DEFINE_string(onnx, "", "export: the ONNX model to write (.onnx)");
DEFINE_int32(batch, 0, "export: the batch size of the model's inputs (default: the prototxt's)");
DEFINE_bool(dynamic_batch, false,
            "export: make the batch axis of the model's inputs and outputs symbolic (N)");
DEFINE_string(sigint_effect, "stop", "train: what SIGINT does: snapshot, stop or none");
DEFINE_string(sighup_effect, "snapshot", "train: what SIGHUP does: snapshot, stop or none");

namespace crema {
namespace {

// ---- device selection ---------------------------------------------------------------------

// --gpu's GPUs: every visible one for "all", else the listed ids, each checked.
std::vector<int> gpu_ids() {
  const int visible = prim::cuda_device_count();
  std::vector<int> ids;
  if (FLAGS_gpu == "all") {
    for (int i = 0; i < visible; ++i) ids.push_back(i);
    CREMA_REQUIRE(!ids.empty(), "--gpu=all: no GPU found");
    return ids;
  }
  const bool well_formed = FLAGS_gpu.find_first_not_of("0123456789,") == std::string::npos &&
                           FLAGS_gpu.front() != ',' && FLAGS_gpu.back() != ',' &&
                           FLAGS_gpu.find(",,") == std::string::npos;
  CREMA_REQUIRE(well_formed, "--gpu takes device ids separated by commas, or 'all'; got \"",
                FLAGS_gpu, "\"");
  std::stringstream list(FLAGS_gpu);
  for (std::string id; std::getline(list, id, ',');) {
    CREMA_REQUIRE(id.size() < 6, "--gpu=", FLAGS_gpu, ": no GPU ", id);
    ids.push_back(std::stoi(id));
    CREMA_REQUIRE(ids.back() < visible, "--gpu=", FLAGS_gpu, ": no GPU ", ids.back(), " (", visible,
                  " found)");
    CREMA_REQUIRE(std::count(ids.begin(), ids.end(), ids.back()) == 1, "--gpu=", FLAGS_gpu,
                  ": GPU ", ids.back(), " is listed twice");
  }
  return ids;
}

// --gpu wins; otherwise a solver asking for GPU mode gets the first GPU when present. *ids gets
// the GPUs to use (one for test and time: the first listed).
Device pick_device(bool solver_wants_gpu, std::vector<int>* ids) {
  *ids = {0};
  if (!FLAGS_gpu.empty()) {
    *ids = gpu_ids();
    return Device::kCUDA;
  }
  if (solver_wants_gpu && prim::cuda_available()) return Device::kCUDA;
  return Device::kCPU;
}

// test and time run on one device.
Device pick_one_device(int* device_id) {
  std::vector<int> ids;
  const Device device = pick_device(false, &ids);
  if (ids.size() > 1) LOG(INFO) << "Using GPU " << ids[0] << " of --gpu=" << FLAGS_gpu;
  *device_id = ids[0];
  return device;
}

const char* device_label(Device d) { return d == Device::kCPU ? "CPU" : "GPU"; }

// ---- train --------------------------------------------------------------------------------

std::atomic<int> g_sigint{0}, g_sighup{0};

void on_signal(int sig) {
  if (sig == SIGINT) g_sigint.fetch_add(1);
  if (sig == SIGHUP) g_sighup.fetch_add(1);
}

SolverAction parse_effect(const std::string& flag, const std::string& value) {
  if (value == "stop") return SolverAction::kStop;
  if (value == "snapshot") return SolverAction::kSnapshot;
  if (value == "none") return SolverAction::kNone;
  fail("--", flag, " must be snapshot, stop or none, got \"", value, "\"");
}

void copy_weights(Net<float>& net, const std::string& list) {
  std::stringstream ss(list);
  for (std::string path; std::getline(ss, path, ',');) {
    if (path.empty()) continue;
    LOG(INFO) << "Copying weights from " << path;
    require_weights_copied(net.copy_trained_layers_from(load_net_param_binary(path)), path);
  }
}

// --model, with --precision applied.
// --autotune: turns it on for `h` with the choices earlier runs on this device saved; returns
// the file to save to, "" when off.
std::string start_autotune(prim::Handle& h) {
  if (!FLAGS_autotune) return "";
  std::string path = FLAGS_autotune_file;
  if (path.empty()) {
    const char* cache = std::getenv("XDG_CACHE_HOME");
    const char* home = std::getenv("HOME");
    path = cache && *cache ? std::string(cache) + "/crema/conv_algorithms"
           : home && *home ? std::string(home) + "/.cache/crema/conv_algorithms"
                           : "crema_conv_algorithms";
  }
  h.set_conv_autotune(true);
  LOG(INFO) << "Autotuning convolutions, starting from " << prim::conv_algos_load(h, path)
            << " choices in " << path;
  return path;
}

// Saves the autotuned choices; a cache that cannot be written costs only the next run's timing.
void save_autotune(prim::Handle& h, const std::string& path) {
  if (path.empty()) return;
  try {
    prim::conv_algos_save(h, path);
    LOG(INFO) << "Saved " << h.algo_cache().size() << " convolution choices to " << path;
  } catch (const std::exception& e) {
    LOG(WARNING) << e.what();
  }
}

// --level and --stage into a net state, as Caffe's tool sets them; a state the flags leave
// alone keeps what the files say.
void apply_state_flags(NetState* state) {
  if (!gflags::GetCommandLineFlagInfoOrDie("level").is_default) state->set_level(FLAGS_level);
  for (const std::string& stage : split_commas(FLAGS_stage)) state->add_stage(stage);
}

NetParameter load_model() {
  NetParameter param = load_net_param_text(FLAGS_model);
  if (!FLAGS_precision.empty()) apply_precision_flag(FLAGS_precision, &param);
  apply_state_flags(param.mutable_state());
  return param;
}

int train() {
  CREMA_REQUIRE(!FLAGS_solver.empty(), "train needs --solver=<solver.prototxt>");
  CREMA_REQUIRE(FLAGS_weights.empty() || FLAGS_snapshot.empty(),
                "give either --weights or --snapshot, not both");
  SolverParameter param = load_solver_param(FLAGS_solver);
  if (!FLAGS_precision.empty()) apply_precision_flag(FLAGS_precision, &param);
  apply_state_flags(param.mutable_train_state());
  std::vector<int> gpus;
  const bool wants_gpu = param.has_solver_mode() && param.solver_mode() == SolverParameter::GPU;
  const Device device = pick_device(wants_gpu, &gpus);
  LOG(INFO) << "Training on the " << device_label(device)
            << (device == Device::kCPU ? " with " + prim::blas_description() : "");
  const SolverAction on_int = parse_effect("sigint_effect", FLAGS_sigint_effect);
  const SolverAction on_hup = parse_effect("sighup_effect", FLAGS_sighup_effect);
  std::signal(SIGINT, on_signal);
  std::signal(SIGHUP, on_signal);
  const auto actions = [on_int, on_hup]() {
    if (g_sigint.exchange(0)) return on_int;
    if (g_sighup.exchange(0)) return on_hup;
    return SolverAction::kNone;
  };
  CREMA_REQUIRE(FLAGS_cuda_graph == "on" || FLAGS_cuda_graph == "off",
                "--cuda_graph must be on or off, got \"", FLAGS_cuda_graph, "\"");
  const auto prepare = [](Solver<float>& solver) {
    if (FLAGS_channels_last) {
      solver.net().set_channels_last(true);
      for (const auto& test_net : solver.test_nets()) test_net->set_channels_last(true);
    }
    if (!FLAGS_weights.empty()) copy_weights(solver.net(), FLAGS_weights);
    solver.set_overwrite_snapshots(FLAGS_overwrite_snapshots);
    solver.set_cuda_graph(FLAGS_cuda_graph == "on");
  };
  DataParallelRun run{param, FLAGS_solver, device, gpus, FLAGS_snapshot, prepare, actions, {}};
  const bool processes = launched_by_mpi();
  if (processes || gpus.size() > 1) {
    CREMA_REQUIRE(!FLAGS_autotune, "--autotune runs on one GPU; tune there, then train on several");
    if (processes) {
      // One replica per process; a process takes the GPU of --gpu's list (every GPU without one)
      // at its rank among the processes of its machine.
      const MpiWorld world = mpi_init();
      if (world.rank > 0) FLAGS_minloglevel = 1;  // the root's log is the run's
      if (device == Device::kCUDA) {
        if (FLAGS_gpu.empty()) FLAGS_gpu = "all";
        gpus = gpu_ids();
        CREMA_REQUIRE(world.local_rank < int(gpus.size()), "process ", world.rank, " is process ",
                      world.local_rank + 1, " of its machine, but --gpu gives ", gpus.size(),
                      " GPUs");
      }
      run.device_ids = {device == Device::kCUDA ? gpus[size_t(world.local_rank)] : 0};
      std::vector<std::unique_ptr<Communicator>> comms;
      comms.push_back(make_mpi_communicator(device, run.device_ids[0]));
      train_replicas(run, std::move(comms));
    } else {
      train_data_parallel(run);
    }
    LOG(INFO) << "Optimization Done.";
    return 0;
  }
  prim::Handle handle(device, gpus[0]);
  const std::string tuned = start_autotune(handle);
  auto solver = create_solver<float>(param, device, handle, FLAGS_solver);
  solver->set_action_source(actions);
  prepare(*solver);
  solver->solve(FLAGS_snapshot);
  save_autotune(handle, tuned);
  LOG(INFO) << "Optimization Done.";
  return 0;
}

// ---- test ---------------------------------------------------------------------------------

int test() {
  CREMA_REQUIRE(!FLAGS_model.empty(), "test needs --model=<net.prototxt>");
  CREMA_REQUIRE(!FLAGS_weights.empty(), "test needs --weights=<net.caffemodel>");
  CREMA_REQUIRE(FLAGS_iterations > 0, "--iterations must be positive");
  int device_id = 0;
  const Device device = pick_one_device(&device_id);
  prim::Handle handle(device, device_id);
  const std::string tuned = start_autotune(handle);
  Net<float> net(load_model(), TEST, device);
  if (FLAGS_channels_last) net.set_channels_last(true);
  copy_weights(net, FLAGS_weights);
  net.share_inference_memory();
  LOG(INFO) << "Running for " << FLAGS_iterations << " iterations.";
  std::vector<double> sums;
  std::vector<std::string> names;
  std::vector<double> weights;
  double loss = 0;
  for (int i = 0; i < FLAGS_iterations; ++i) {
    loss += net.forward(handle);
    int idx = 0;
    const auto& outs = net.output_blobs();
    for (size_t o = 0; o < outs.size(); ++o) {
      const std::vector<float> v = outs[o]->data_vector();
      for (size_t k = 0; k < v.size(); ++k, ++idx) {
        if (i == 0) {
          sums.push_back(0);
          names.push_back(net.output_blob_names()[o]);
          weights.push_back(net.output_loss_weights()[o]);
        }
        sums[idx] += v[k];
        LOG(INFO) << "Batch " << i << ", " << names[idx] << " = " << v[k];
      }
    }
  }
  save_autotune(handle, tuned);
  LOG(INFO) << "Loss: " << loss / FLAGS_iterations;
  for (size_t k = 0; k < sums.size(); ++k) {
    const double mean = sums[k] / FLAGS_iterations;
    std::ostringstream line;
    line << names[k] << " = " << mean;
    if (weights[k] != 0) line << " (* " << weights[k] << " = " << weights[k] * mean << " loss)";
    LOG(INFO) << line.str();
  }
  return 0;
}

// ---- time ---------------------------------------------------------------------------------

// Fills the outputs of Input layers with uniform random values: timings on zeros flatter
// data-dependent layers such as max pooling.
int time() {
  CREMA_REQUIRE(!FLAGS_model.empty(), "time needs --model=<net.prototxt>");
  CREMA_REQUIRE(FLAGS_iterations > 0, "--iterations must be positive");
  CREMA_REQUIRE(FLAGS_phase.empty() || FLAGS_phase == "TRAIN" || FLAGS_phase == "TEST",
                "--phase must be TRAIN or TEST");
  int device_id = 0;
  const Device device = pick_one_device(&device_id);
  prim::Handle handle(device, device_id);
  const std::string tuned = start_autotune(handle);
  Net<float> net(load_model(), FLAGS_phase == "TEST" ? TEST : TRAIN, device);
  if (FLAGS_channels_last) net.set_channels_last(true);
  net.fill_inputs_uniform(1234);
  using Clock = std::chrono::steady_clock;
  const auto ms_since = [&](Clock::time_point t) {
    handle.synchronize();
    return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
  };
  LOG(INFO) << "Performing Forward";
  net.forward(handle);  // warm-up: allocations, algorithm choice
  LOG(INFO) << "Performing Backward";
  net.backward(handle);
  save_autotune(handle, tuned);
  const int n = net.num_layers();
  std::vector<double> fwd(n, 0), bwd(n, 0);
  double fwd_total = 0, bwd_total = 0;
  LOG(INFO) << "*** Benchmark begins ***";
  LOG(INFO) << "Testing for " << FLAGS_iterations << " iterations.";
  const auto start = Clock::now();
  for (int it = 0; it < FLAGS_iterations; ++it) {
    const auto iter_start = Clock::now();
    // A fused group (Net::absorbed_by) is timed whole, under its first layer.
    for (int i = 0; i < n; ++i) {
      if (net.absorbed_by(i) >= 0) continue;
      const auto t = Clock::now();
      net.forward_range(handle, i, net.group_end(i));
      fwd[i] += ms_since(t);
    }
    const double f = ms_since(iter_start);
    const auto back_start = Clock::now();
    for (int i = n - 1; i >= 0; --i) {
      if (net.absorbed_by(i) >= 0) continue;
      const auto t = Clock::now();
      net.backward_range(handle, net.group_end(i), i);
      bwd[i] += ms_since(t);
    }
    const double b = ms_since(back_start);
    fwd_total += f;
    bwd_total += b;
    LOG(INFO) << "Iteration: " << it + 1 << " forward-backward time: " << f + b << " ms.";
  }
  const double total = ms_since(start);
  LOG(INFO) << "Average time per layer: ";
  for (int i = 0; i < n; ++i) {
    const std::string fused = net.absorbed_by(i) >= 0
                                  ? " (fused into " + net.layer_names()[net.absorbed_by(i)] + ")"
                                  : "";
    LOG(INFO) << std::string(std::max(0, 10 - int(net.layer_names()[i].size())), ' ')
              << net.layer_names()[i] << "\tforward: " << fwd[i] / FLAGS_iterations << " ms."
              << fused;
    LOG(INFO) << std::string(std::max(0, 10 - int(net.layer_names()[i].size())), ' ')
              << net.layer_names()[i] << "\tbackward: " << bwd[i] / FLAGS_iterations << " ms."
              << fused;
  }
  LOG(INFO) << "Average Forward pass: " << fwd_total / FLAGS_iterations << " ms.";
  LOG(INFO) << "Average Backward pass: " << bwd_total / FLAGS_iterations << " ms.";
  LOG(INFO) << "Average Forward-Backward: " << (fwd_total + bwd_total) / FLAGS_iterations << " ms.";
  LOG(INFO) << "Total Time: " << total << " ms.";
  LOG(INFO) << "*** Benchmark ends ***";
  return 0;
}

// ---- draw ---------------------------------------------------------------------------------

int draw() {
  CREMA_REQUIRE(!FLAGS_model.empty(), "draw needs --model=<net.prototxt>");
  CREMA_REQUIRE(!FLAGS_out.empty(), "draw needs --out=<drawing.svg|png|pdf|dot>");
  draw_net(load_net_param_text(FLAGS_model), {FLAGS_rankdir, FLAGS_phase}, FLAGS_out);
  LOG(INFO) << "Drew " << FLAGS_model << " to " << FLAGS_out;
  return 0;
}

// ---- classify -----------------------------------------------------------------------------

// The command line's words after the command (classify's image files).
std::vector<std::string> g_operands;

int classify() {
  CREMA_REQUIRE(!FLAGS_model.empty(), "classify needs --model=<deploy.prototxt>");
  CREMA_REQUIRE(!FLAGS_weights.empty(), "classify needs --weights=<net.caffemodel>");
  CREMA_REQUIRE(!g_operands.empty(), "classify needs image files after the command");
  ClassifyRequest r;
  r.model = FLAGS_model;
  r.weights = FLAGS_weights;
  r.labels = FLAGS_labels;
  r.top = FLAGS_top;
  r.images = g_operands;
  if (!FLAGS_mean_file.empty()) r.transform.set_mean_file(FLAGS_mean_file);
  std::stringstream means(FLAGS_mean_value);
  for (std::string v; std::getline(means, v, ',');) {
    try {
      r.transform.add_mean_value(std::stof(v));
    } catch (const std::exception&) {
      fail("--mean_value: \"", v, "\" is not a number");
    }
  }
  r.transform.set_scale(float(FLAGS_scale));
  r.device = pick_one_device(&r.device_id);
  const auto results = crema::classify(r);
  for (size_t i = 0; i < results.size(); ++i) {
    std::printf("---------- Prediction for %s ----------\n", r.images[i].c_str());
    for (const auto& [score, label] : results[i])
      std::printf("%.4f - \"%s\"\n", score, label.c_str());
  }
  return 0;
}

// ---- export -------------------------------------------------------------------------------

int export_model() {
#ifdef CREMA_WITH_ONNX
  CREMA_REQUIRE(FLAGS_weights.find(',') == std::string::npos,
                "export takes one --weights file, got \"", FLAGS_weights, "\"");
  OnnxExportRequest request{FLAGS_model, FLAGS_weights, FLAGS_onnx, {}};
  request.options.dynamic_batch = FLAGS_dynamic_batch;
  request.options.batch = FLAGS_batch;
  const int nodes = export_onnx(request);
  LOG(INFO) << "Exported " << FLAGS_model << " with " << FLAGS_weights << " to " << FLAGS_onnx
            << " (ONNX opset 17, " << nodes << " nodes)";
  return 0;
#else
  fail("this crema was built without ONNX export (Debian: libonnx-dev, then configure again)");
#endif
}

// ---- device_query -------------------------------------------------------------------------

int device_query() {
  std::printf("CPU threads: %u\n", std::thread::hardware_concurrency());
  std::printf("BLAS: %s\n", prim::blas_description().c_str());
  const int n = prim::cuda_device_count();
  std::printf("CUDA devices: %d\n", n);
  for (int i = 0; i < n; ++i) std::printf("%s", prim::cuda_device_description(i).c_str());
  return 0;
}

const std::map<std::string, std::function<int()>>& commands() {
  static const std::map<std::string, std::function<int()>> table = {
      {"train", train},        {"test", test},         {"time", time},
      {"draw", draw},          {"classify", classify}, {"device_query", device_query},
      {"export", export_model}};
  return table;
}

}  // namespace
}  // namespace crema

int main(int argc, char** argv) {
  crema::prim::prepare_blas_process(argv);
  FLAGS_logtostderr = true;
  FLAGS_minloglevel = 0;
  // Caffe's line prefix ("I1126 10:00:00.123456 ..."): its parse_log.py and parse_log.sh, and the
  // plotting built on them, read the month and day where newer glog puts the year first.
  FLAGS_log_year_in_prefix = false;
  gflags::SetUsageMessage(
      "command line brew\n"
      "usage: crema <command> <args>\n\n"
      "commands:\n"
      "  train           train or finetune a model (--solver, [--weights | --snapshot])\n"
      "  test            score a model (--model, --weights, --iterations)\n"
      "  device_query    show the CPU and GPU(s)\n"
      "  time            benchmark model execution time per layer (--model, --iterations)\n"
      "  draw            draw a net's graph with Graphviz (--model, --out, [--phase, --rankdir])\n"
      "  classify        top classes of images (--model, --weights, [--labels, --mean_file,\n"
      "                  --mean_value, --scale, --top] image...)\n"
      "  export          write a deploy net and its weights as ONNX (--model, --weights, --onnx,\n"
      "                  [--batch | --dynamic_batch])");
  gflags::SetVersionString("1.0");
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  google::InitGoogleLogging(argv[0]);
  if (FLAGS_verbose) setenv("CREMA_VERBOSE", "1", 1);  // read by the primitives library
#ifdef CREMA_WITH_PYTHON
  // Nets with "Python" layers (python_param) start an interpreter at their first one.
  crema::python::enable_embedded_python_layers();
#endif
  if (argc < 2 || (argc > 2 && std::string(argv[1]) != "classify")) {
    gflags::ShowUsageWithFlagsRestrict(argv[0], "tools/crema");
    return 1;
  }
  crema::g_operands.assign(argv + 2, argv + argc);
  const auto& table = crema::commands();
  const auto it = table.find(argv[1]);
  if (it == table.end()) {
    std::fprintf(stderr,
                 "crema: error: unknown command \"%s\" (train, test, time, draw, classify, "
                 "export, device_query)\n",
                 argv[1]);
    return 1;
  }
  try {
    return it->second();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "crema: error: %s\n", e.what());
    return 1;
  }
}
