// HDF5Output layer: the batches it writes, read back with the HDF5 C library and through an
// HDF5Data layer; the errors of mismatched bottoms and an unwritable file.
#include "layers/hdf5_output_layer.h"

#include <gtest/gtest.h>

#include <fstream>

#include "core/proto_io.h"
#include "data_test_util.h"
#include "hdf5_test_util.h"
#include "layers/hdf5_data_layer.h"

namespace crema::test {
namespace {

LayerParameter output_param(const std::string& file) {
  LayerParameter p;
  read_text_proto_string("name: 'out' type: 'HDF5Output' bottom: 'data' bottom: 'label'", "out",
                         &p);
  p.mutable_hdf5_output_param()->set_file_name(file);
  return p;
}

TEST(Hdf5OutputLayer, AppendsEveryBatchInCaffesLayoutAndReadsBack) {
  CREMA_SKIP_WITHOUT_HDF5();
  TempDir dir;
  const std::string file = dir.file("out.h5");
  Tensor<float> data({2, 3, 2}), label({2});
  {
    Hdf5OutputLayer<float> layer(output_param(file), Device::kCPU);
    layer.setup({&data, &label}, {});
    Handle h;
    for (int batch = 0; batch < 3; ++batch) {
      std::vector<float> d(12), l{float(batch * 2), float(batch * 2 + 1)};
      for (int i = 0; i < 12; ++i) d[size_t(i)] = float(batch * 100 + i) + 0.25f;
      data.set_data(d);
      label.set_data(l);
      layer.forward(h, {&data, &label}, {});
    }
    EXPECT_EQ(layer.rows(), 6);
  }
  std::vector<uint64_t> dims;
  const std::vector<double> d = read_h5(file, "data", &dims);
  EXPECT_EQ(dims, (std::vector<uint64_t>{6, 3, 2, 1}));  // num, channels, height, width
  ASSERT_EQ(d.size(), 36u);
  for (int batch = 0; batch < 3; ++batch)
    for (int i = 0; i < 12; ++i) EXPECT_EQ(d[size_t(batch * 12 + i)], batch * 100 + i + 0.25);
  EXPECT_EQ(read_h5(file, "label", &dims), (std::vector<double>{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(dims, (std::vector<uint64_t>{6, 1, 1, 1}));

  // What HDF5Output writes, HDF5Data reads.
  std::ofstream(dir.file("list.txt")) << file;
  LayerParameter in;
  read_text_proto_string("name: 'in' type: 'HDF5Data' top: 'data' top: 'label'", "in", &in);
  in.mutable_hdf5_data_param()->set_source(dir.file("list.txt"));
  in.mutable_hdf5_data_param()->set_batch_size(4);
  Hdf5DataLayer<double> reader(in, Device::kCPU);
  Tensor<double> rd, rl;
  reader.setup({}, {&rd, &rl});
  EXPECT_EQ(rd.shape(), (std::vector<int64_t>{4, 3, 2, 1}));
  EXPECT_EQ(rl.shape(), (std::vector<int64_t>{4, 1, 1, 1}));
  Handle h;
  reader.forward(h, {}, {&rd, &rl});
  EXPECT_EQ(rl.data_vector(), (std::vector<double>{0, 1, 2, 3}));
  EXPECT_EQ(rd.data_vector()[13], 100 + 1 + 0.25);
}

TEST(Hdf5OutputLayer, MismatchedBottomsAndUnwritableFilesAreErrors) {
  CREMA_SKIP_WITHOUT_HDF5();
  TempDir dir;
  Tensor<float> data({2, 3}), label({3});
  Hdf5OutputLayer<float> layer(output_param(dir.file("out.h5")), Device::kCPU);
  EXPECT_NE(error_of([&] {
              layer.setup({&data, &label}, {});
            })
                .find("the data (2 3 (6)) and label (3 (3)) bottoms must have the same number of "
                      "rows"),
            std::string::npos);
  Hdf5OutputLayer<float> nowhere(output_param(dir.file("no/such/dir/out.h5")), Device::kCPU);
  Tensor<float> label2({2});
  EXPECT_EQ(error_of([&] {
              nowhere.setup({&data, &label2}, {});
            })
                .rfind("layer out (HDF5Output): cannot create HDF5 file " +
                           dir.file("no/such/dir/out.h5"),
                       0),
            0u);
}

}  // namespace
}  // namespace crema::test
