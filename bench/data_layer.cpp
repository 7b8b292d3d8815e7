// Benchmark of the Data layer alone: images per second that it hands out (read from the DB,
// decoded, transformed, batched), for each worker count asked for. The net around it is left out,
// so this is the rate a training step could at most consume. Defaults are CaffeNet's data layer
// (batch 256, crop 227, mirror, the mean file) in the TRAIN phase.
//
//   data_layer --source=data/synthetic_imagenet_jpeg/train_lmdb
//              [--mean_file=data/synthetic_imagenet_jpeg/mean.binaryproto] [--threads=1,0]
//              [--batch=256] [--crop=227] [--batches=20] [--warmup=2] [--gpu=0 --decoder=gpu]
//
// --threads lists data_param.threads values; 0 is the layer's default (the usable cores less
// one), and the table names the count it chose, and how many places of each batch the GPU
// decoded at the end (with --decoder=auto it adapts: give it warm-up batches). The CPU time the
// process spent per image (all its threads, user + system) is printed beside the rate: on a machine
// shared with other jobs the rate drops, the CPU time per image much less. With --gpu the layer
// runs on that GPU (its batches uploaded, or with --decoder=gpu its JPEGs decoded there by nvJPEG)
// and each timed run ends when the GPU has the last batch.
#include "layers/data_layer.h"

#include <gflags/gflags.h>
#include <glog/logging.h>
#include <sys/resource.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "core/errors.h"
#include "core/rng.h"
#include "data/batch_engine.h"
#include "primitives/handle.h"

DEFINE_string(source, "data/synthetic_imagenet_jpeg/train_lmdb", "LMDB or LevelDB of Datums");
DEFINE_string(mean_file, "", "mean image (.binaryproto); empty: mean_value 104,117,123");
DEFINE_string(threads, "1,0", "data_param.threads values, separated by commas (0: default)");
DEFINE_int32(batch, 256, "batch size");
DEFINE_int32(crop, 227, "crop size (0: none)");
DEFINE_bool(mirror, true, "random mirroring");
DEFINE_int32(batches, 20, "timed batches");
DEFINE_int32(warmup, 2, "untimed batches first (they also fill the prefetch queue)");
DEFINE_int32(gpu, -1, "the GPU the layer runs on; -1: the CPU");
DEFINE_string(decoder, "cpu", "data_param.decoder on a GPU: cpu, gpu or auto");

namespace {

struct Result {
  int workers = 0;
  int gpu_places = 0;  // of each batch, at the end
  double images_per_second = 0;
  double cpu_ms_per_image = 0;
};

// CPU seconds the process has used, all threads, user and system.
double process_cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  const auto s = [](const timeval& t) { return double(t.tv_sec) + double(t.tv_usec) * 1e-6; };
  return s(u.ru_utime) + s(u.ru_stime);
}

Result measure(uint32_t threads) {
  crema::LayerParameter p;
  p.set_name("data");
  p.set_type("Data");
  p.set_phase(crema::TRAIN);
  crema::DataParameter* d = p.mutable_data_param();
  d->set_source(FLAGS_source);
  d->set_batch_size(uint32_t(FLAGS_batch));
  d->set_threads(threads);
  crema::DataParameter::Decoder decoder = crema::DataParameter::CPU;
  std::string name = FLAGS_decoder;
  for (char& c : name) c = char(std::toupper(static_cast<unsigned char>(c)));
  if (!crema::DataParameter::Decoder_Parse(name, &decoder))
    crema::fail("--decoder must be cpu, gpu or auto; got ", FLAGS_decoder);
  d->set_decoder(decoder);
  crema::TransformationParameter* t = p.mutable_transform_param();
  if (FLAGS_crop > 0) t->set_crop_size(uint32_t(FLAGS_crop));
  t->set_mirror(FLAGS_mirror);
  if (!FLAGS_mean_file.empty()) {
    t->set_mean_file(FLAGS_mean_file);
  } else {
    for (float v : {104.f, 117.f, 123.f}) t->add_mean_value(v);
  }
  crema::seed_thread_rng(1);
  const crema::Device device = FLAGS_gpu >= 0 ? crema::Device::kCUDA : crema::Device::kCPU;
  // The handle first: it makes its GPU the thread's current one, which the layer takes.
  crema::prim::Handle h(device, std::max(FLAGS_gpu, 0));
  crema::DataLayer<float> layer(p, device);
  crema::Tensor<float> data(device), label(device);
  layer.setup({}, {&data, &label});
  for (int i = 0; i < FLAGS_warmup; ++i) layer.forward(h, {}, {&data, &label});
  h.synchronize();
  const double cpu0 = process_cpu_seconds();
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < FLAGS_batches; ++i) layer.forward(h, {}, {&data, &label});
  h.synchronize();
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double images = double(FLAGS_batches) * FLAGS_batch;
  return {layer.decode_workers(), layer.gpu_places(), images / s,
          (process_cpu_seconds() - cpu0) * 1e3 / images};
}

}  // namespace

int main(int argc, char** argv) {
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  google::InitGoogleLogging(argv[0]);
  FLAGS_minloglevel = FLAGS_v > 0 ? 0 : 2;  // --v=1 shows the AUTO decoder's changes of share
  try {
    if (FLAGS_batch <= 0 || FLAGS_batches <= 0 || FLAGS_warmup < 0)
      crema::fail("--batch and --batches must be positive, --warmup non-negative");
    std::vector<uint32_t> counts;
    std::stringstream list(FLAGS_threads);
    for (std::string item; std::getline(list, item, ',');)
      counts.push_back(uint32_t(std::stoul(item)));
    std::printf("Data layer on %s: batch %d, crop %d, mirror %s, %s; %d cores\n",
                FLAGS_source.c_str(), FLAGS_batch, FLAGS_crop, FLAGS_mirror ? "on" : "off",
                FLAGS_mean_file.empty() ? "mean_value 104,117,123" : FLAGS_mean_file.c_str(),
                crema::usable_cores());
    std::printf("%-10s %-8s %-11s %12s %16s\n", "threads", "workers", "GPU places", "images/s",
                "CPU ms/image");
    for (uint32_t threads : counts) {
      const Result r = measure(threads);
      std::printf("%-10s %-8d %-11d %12.0f %16.2f\n",
                  threads == 0 ? "0 (auto)" : std::to_string(threads).c_str(), r.workers,
                  r.gpu_places, r.images_per_second, r.cpu_ms_per_image);
      std::fflush(stdout);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "data_layer: %s\n", e.what());
    return 1;
  }
  return 0;
}
