// The Data layer on a GPU decoding its JPEG records with nvJPEG (data_param.decoder GPU) against
// the same layer decoding them on the CPU (decoder CPU), same seed: the same labels, crops and
// flips, pixels within the hardware decoder's few levels of libjpeg's (times the scale), batch
// after batch with the records wrapping around; a progressive-free, unturned LMDB, so every
// record is decoded by the hardware. Skips where nvJPEG has no hardware decoder. And the workers'
// pixels transformed on the GPU against the CPU layer, exactly.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/rng.h"
#include "cuda_test_util.h"
#include "data/data_test_util.h"
#include "data/nvjpeg_decoder.h"
#include "layers/data_layer.h"

namespace crema {
namespace {

struct Batches {
  std::vector<std::vector<float>> data, label;
  bool gpu = false;
};

Batches run(const LayerParameter& p, int batches, Device device = Device::kCUDA) {
  seed_thread_rng(7);
  prim::Handle h(device);
  Tensor<float> data(device), label(device);
  DataLayer<float> layer(p, device);
  layer.setup({}, {&data, &label});
  Batches out;
  out.gpu = layer.gpu_decodes();
  for (int b = 0; b < batches; ++b) {
    layer.forward(h, {}, {&data, &label});
    h.synchronize();
    out.data.push_back(data.data_vector());
    out.label.push_back(label.data_vector());
  }
  return out;
}

constexpr size_t kBatch = 4;

// A TRAIN Data layer over db: batches of kBatch, crops of 31 mirrored, a scale, and per-channel
// mean values or none.
LayerParameter jpeg_layer(const std::string& db, bool mean_values) {
  LayerParameter p;
  p.set_name("data");
  p.set_type("Data");
  p.set_phase(TRAIN);
  p.mutable_data_param()->set_source(db);
  p.mutable_data_param()->set_batch_size(kBatch);
  p.mutable_data_param()->set_backend(DataParameter::LMDB);
  TransformationParameter* t = p.mutable_transform_param();
  t->set_crop_size(31);
  t->set_mirror(true);
  t->set_scale(0.5f);
  if (mean_values)
    for (float v : {104.0f, 117.0f, 123.0f}) t->add_mean_value(v);
  return p;
}

// Decoded on the CPU, the workers' pixels are transformed on the GPU into the CPU layer's floats,
// bit for bit.
TEST(GpuJpegDataLayerCuda, TransformsTheWorkersPixelsAsTheCpuLayer) {
  CREMA_SKIP_WITHOUT_GPU();
  test::TempDir dir;
  const std::string db = dir.file("db");
  test::write_jpeg_lmdb(db, 11, 3, 40, 52);
  for (bool mean_values : {true, false}) {
    SCOPED_TRACE(mean_values ? "mean values" : "no mean");
    LayerParameter p = jpeg_layer(db, mean_values);
    p.mutable_data_param()->set_decoder(DataParameter::CPU);
    const Batches cpu = run(p, 4, Device::kCPU), gpu = run(p, 4);
    EXPECT_FALSE(gpu.gpu);
    EXPECT_EQ(gpu.label, cpu.label);
    EXPECT_EQ(gpu.data, cpu.data);
  }
}

TEST(GpuJpegDataLayerCuda, MatchesTheCpuDecoder) {
  CREMA_SKIP_WITHOUT_GPU();
  std::string why;
  if (!NvjpegDecoder::available(&why)) GTEST_SKIP() << "no nvJPEG: " << why;
  test::TempDir dir;
  const std::string db = dir.file("db");
  test::write_jpeg_lmdb(db, 11, 3, 40, 52);
  for (bool mean_values : {true, false}) {
    SCOPED_TRACE(mean_values ? "mean values" : "no mean");
    LayerParameter p = jpeg_layer(db, mean_values);
    p.mutable_data_param()->set_decoder(DataParameter::CPU);
    const Batches cpu = run(p, 4);
    p.mutable_data_param()->set_decoder(DataParameter::GPU);
    const Batches gpu = run(p, 4);
    EXPECT_FALSE(cpu.gpu);
    ASSERT_TRUE(gpu.gpu);
    for (size_t b = 0; b < cpu.data.size(); ++b) {
      SCOPED_TRACE("batch " + std::to_string(b));
      EXPECT_EQ(gpu.label[b], cpu.label[b]);
      ASSERT_EQ(gpu.data[b].size(), cpu.data[b].size());
      const size_t example = cpu.data[b].size() / kBatch;
      double worst = 0, sum = 0;
      std::string per_example;  // mean differences, which name the example a failure is in
      for (size_t e = 0; e < kBatch; ++e) {
        double example_sum = 0;
        for (size_t i = e * example; i < (e + 1) * example; ++i) {
          const double d = std::abs(double(gpu.data[b][i]) - double(cpu.data[b][i]));
          worst = std::max(worst, d);
          example_sum += d;
        }
        sum += example_sum;
        per_example += ' ';
        per_example += std::to_string(example_sum / double(example));
      }
      // A wrong crop or flip of these gradients differs by tens of levels.
      EXPECT_LE(worst, 8 * 0.5) << "largest difference; mean per example:" << per_example;
      EXPECT_LE(sum / double(cpu.data[b].size()), 1.0 * 0.5) << "mean difference";
    }
  }
}

}  // namespace
}  // namespace crema
