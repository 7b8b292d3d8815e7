// HDF5Data layer: rows served in order across files with wrap-around, shuffling of files and
// rows, resume at a position, and the errors of bad lists and bad files (files written with the
// HDF5 C library by hdf5_test_util.h, not by crema).
#include "layers/hdf5_data_layer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <set>

#include "core/proto_io.h"
#include "core/rng.h"
#include "data_test_util.h"
#include "hdf5_test_util.h"

namespace crema::test {
namespace {

// A file of `rows` rows: data row r is 2 x 3 values first + r * 10 + k (k = 0..5), label row r
// is first + r (32-bit integers, converted to the net's type).
void write_rows(const std::string& path, int rows, double first, bool as_double = false) {
  H5Dataset data{"data", {uint64_t(rows), 2, 3}, {}, as_double};
  H5Dataset label{"label", {uint64_t(rows)}, {}, false, true};
  for (int r = 0; r < rows; ++r) {
    for (int k = 0; k < 6; ++k) data.values.push_back(first + r * 10 + k);
    label.values.push_back(first + r);
  }
  write_h5(path, {data, label});
}

LayerParameter hdf5_param(const std::string& source, int batch, bool shuffle = false) {
  LayerParameter p;
  read_text_proto_string("name: 'h5' type: 'HDF5Data' top: 'data' top: 'label'", "h5", &p);
  p.mutable_hdf5_data_param()->set_source(source);
  p.mutable_hdf5_data_param()->set_batch_size(uint32_t(batch));
  p.mutable_hdf5_data_param()->set_shuffle(shuffle);
  return p;
}

template <typename Dtype>
struct Reader {
  explicit Reader(const LayerParameter& p, uint64_t seed = 7) : layer(p, Device::kCPU) {
    seed_thread_rng(int64_t(seed));
    layer.setup({}, {&data, &label});
  }
  // The labels of the next batch, after checking that each data row matches its label.
  std::vector<double> next() {
    layer.forward(h, {}, {&data, &label});
    const std::vector<Dtype> d = data.data_vector(), l = label.data_vector();
    std::vector<double> labels(l.begin(), l.end());
    for (size_t i = 0; i < l.size(); ++i)
      for (int k = 0; k < 6; ++k) {
        // label = first + r, data = first + 10 r + k: data - 10 label = k - 9 first.
        const double row = double(d[i * 6 + size_t(k)]) - 10 * double(l[i]) - k;
        EXPECT_EQ(std::fmod(row, 9.0), 0.0) << "data row " << i << " is not its label's row";
      }
    return labels;
  }
  Hdf5DataLayer<Dtype> layer;
  Tensor<Dtype> data, label;
  Handle h;
};

TEST(Hdf5DataLayer, ServesRowsInOrderAcrossFilesAndWrapsAround) {
  CREMA_SKIP_WITHOUT_HDF5();
  TempDir dir;
  write_rows(dir.file("a.h5"), 3, 100);
  write_rows(dir.file("b.h5"), 2, 200, /*as_double=*/true);
  std::ofstream(dir.file("list.txt")) << dir.file("a.h5") << "\n" << dir.file("b.h5") << "\n";
  Reader<float> r(hdf5_param(dir.file("list.txt"), 2));
  EXPECT_EQ(r.data.shape(), (std::vector<int64_t>{2, 2, 3}));
  EXPECT_EQ(r.label.shape(), (std::vector<int64_t>{2}));
  std::vector<double> seen;
  for (int i = 0; i < 5; ++i)
    for (double v : r.next()) seen.push_back(v);
  EXPECT_EQ(seen, (std::vector<double>{100, 101, 102, 200, 201, 100, 101, 102, 200, 201}));
  // The values themselves, not only their pattern: row 2 of a.h5 is 120..125.
  Reader<double> d(hdf5_param(dir.file("list.txt"), 3));
  d.next();
  EXPECT_EQ(d.data.data_vector(),
            (std::vector<double>{100, 101, 102, 103, 104, 105, 110, 111, 112, 113, 114, 115, 120,
                                 121, 122, 123, 124, 125}));
}

TEST(Hdf5DataLayer, RelativeNamesAreFoundBesideTheList) {
  CREMA_SKIP_WITHOUT_HDF5();
  TempDir dir;
  write_rows(dir.file("a.h5"), 2, 0);
  std::ofstream(dir.file("list.txt")) << "a.h5 a.h5\n";  // whitespace-separated, as Caffe reads
  Reader<float> r(hdf5_param(dir.file("list.txt"), 4));
  EXPECT_EQ(r.layer.files().size(), 2u);
  EXPECT_EQ(r.next(), (std::vector<double>{0, 1, 0, 1}));
}

// Shuffle permutes the rows of a file anew at every pass, keeps each file's rows together and
// permutes the files; the same seed gives the same sequence.
TEST(Hdf5DataLayer, ShufflesRowsWithinFilesAndTheFileOrder) {
  CREMA_SKIP_WITHOUT_HDF5();
  TempDir dir;
  std::ofstream list(dir.file("list.txt"));
  for (const char* name : {"f0.h5", "f1.h5", "f2.h5"}) {
    write_rows(dir.file(name), 5, 100 * (name[1] - '0'));
    list << dir.file(name) << "\n";
  }
  list.close();
  Reader<float> r(hdf5_param(dir.file("list.txt"), 5, /*shuffle=*/true));
  std::set<std::vector<double>> row_orders;
  std::set<std::vector<int>> file_orders;
  std::vector<double> all;
  for (int pass = 0; pass < 8; ++pass) {
    std::vector<int> files;
    for (int f = 0; f < 3; ++f) {
      const std::vector<double> rows = r.next();  // one whole file per batch
      for (double v : rows) all.push_back(v);
      const int file = int(rows[0]) / 100;
      files.push_back(file);
      std::vector<double> sorted = rows, expected(5);
      std::sort(sorted.begin(), sorted.end());
      std::iota(expected.begin(), expected.end(), 100.0 * file);
      EXPECT_EQ(sorted, expected) << "a batch mixes files or repeats rows";
      std::vector<double> order;
      for (double v : rows) order.push_back(v - 100 * file);
      row_orders.insert(order);
    }
    std::vector<int> sorted = files;
    std::sort(sorted.begin(), sorted.end());
    EXPECT_EQ(sorted, (std::vector<int>{0, 1, 2})) << "a pass must read every file once";
    file_orders.insert(files);
  }
  EXPECT_GT(row_orders.size(), 5u) << "rows are not reshuffled at each load";
  EXPECT_GT(file_orders.size(), 1u) << "files are not reshuffled at each pass";
  Reader<float> again(hdf5_param(dir.file("list.txt"), 5, true));
  std::vector<double> repeat;
  for (int i = 0; i < 24; ++i)
    for (double v : again.next()) repeat.push_back(v);
  EXPECT_EQ(repeat, all) << "the same seed must give the same order";
  Reader<float> other(hdf5_param(dir.file("list.txt"), 5, true), /*seed=*/8);
  std::vector<double> different;
  for (int i = 0; i < 24; ++i)
    for (double v : other.next()) different.push_back(v);
  EXPECT_NE(different, all);
}

// A reader restored at a position (as from a snapshot) continues as the one that got there.
TEST(Hdf5DataLayer, RestoredStateContinuesTheSameRows) {
  CREMA_SKIP_WITHOUT_HDF5();
  TempDir dir;
  write_rows(dir.file("a.h5"), 4, 0);
  write_rows(dir.file("b.h5"), 3, 500);
  std::ofstream(dir.file("list.txt")) << dir.file("a.h5") << "\n" << dir.file("b.h5") << "\n";
  for (bool shuffle : {false, true}) {
    SCOPED_TRACE(shuffle);
    Reader<float> straight(hdf5_param(dir.file("list.txt"), 3, shuffle));
    for (int i = 0; i < 6; ++i) straight.next();  // 18 rows: past two passes of 7
    DataReaderState state;
    ASSERT_TRUE(straight.layer.reader_state(&state));
    EXPECT_EQ(state.records(), 18u);
    Reader<float> resumed(hdf5_param(dir.file("list.txt"), 3, shuffle));
    resumed.layer.restore_reader_state(state);
    for (int i = 0; i < 5; ++i) EXPECT_EQ(resumed.next(), straight.next()) << i;
  }
}

std::string setup_error(const LayerParameter& p) {
  return error_of([&] { Reader<float> r(p); });
}

std::string forward_error(const LayerParameter& p, int batches) {
  return error_of([&] {
    Reader<float> r(p);
    for (int i = 0; i < batches; ++i) r.next();
  });
}

TEST(Hdf5DataLayer, BadListsAndFilesAreOneClearError) {
  CREMA_SKIP_WITHOUT_HDF5();
  TempDir dir;
  const std::string list = dir.file("list.txt");
  const auto list_of = [&](const std::string& text) { std::ofstream(list) << text; };
  const auto contains = [](const std::string& what, const std::string& part) {
    return what.find(part) != std::string::npos;
  };

  EXPECT_TRUE(contains(setup_error(hdf5_param(dir.file("none.txt"), 2)),
                       "cannot open the list of HDF5 files " + dir.file("none.txt")));
  list_of("\n\n");
  EXPECT_TRUE(contains(setup_error(hdf5_param(list, 2)), "lists no HDF5 file"));
  list_of(dir.file("a.h5") + "\n" + dir.file("missing.h5") + "\n");
  write_rows(dir.file("a.h5"), 2, 0);
  EXPECT_TRUE(contains(setup_error(hdf5_param(list, 2)),
                       list + ":2: HDF5 file " + dir.file("missing.h5") + " does not exist"));

  // A file without the top's dataset.
  write_h5(dir.file("nolabel.h5"), {{"data", {2, 3}, {1, 2, 3, 4, 5, 6}}});
  list_of(dir.file("nolabel.h5"));
  EXPECT_EQ(setup_error(hdf5_param(list, 2)),
            "layer h5 (HDF5Data): " + dir.file("nolabel.h5") + ": no dataset \"label\"");
  // Datasets of different row counts.
  write_h5(dir.file("rows.h5"), {{"data", {3, 2}, {1, 2, 3, 4, 5, 6}}, {"label", {2}, {0, 1}}});
  list_of(dir.file("rows.h5"));
  EXPECT_TRUE(contains(setup_error(hdf5_param(list, 2)),
                       dir.file("rows.h5") + ": dataset \"label\" has 2 rows but \"data\" has 3"));
  // A scalar has no rows.
  write_h5(dir.file("scalar.h5"), {{"data", {}, {1}}, {"label", {}, {0}}});
  list_of(dir.file("scalar.h5"));
  EXPECT_TRUE(contains(setup_error(hdf5_param(list, 2)),
                       dir.file("scalar.h5") + ": dataset \"data\" is a scalar"));
  // A later file whose rows have another shape fails when it is reached.
  write_h5(dir.file("wide.h5"), {{"data", {1, 7}, {1, 2, 3, 4, 5, 6, 7}}, {"label", {1}, {0}}});
  list_of(dir.file("a.h5") + " " + dir.file("wide.h5"));
  EXPECT_TRUE(contains(forward_error(hdf5_param(list, 2), 2),
                       dir.file("wide.h5") + ": dataset \"data\" has rows of another shape"));
  // transform_param has nothing to act on.
  LayerParameter with_transform = hdf5_param(list, 2);
  with_transform.mutable_transform_param()->set_scale(2);
  EXPECT_TRUE(contains(setup_error(with_transform), "HDF5Data does not transform data"));
}

TEST(Hdf5DataLayer, TruncatedOrCorruptFilesAreErrorsNamingTheFile) {
  CREMA_SKIP_WITHOUT_HDF5();
  TempDir dir;
  const std::string list = dir.file("list.txt");
  write_rows(dir.file("whole.h5"), 50, 0);
  const auto size = std::filesystem::file_size(dir.file("whole.h5"));
  for (const double keep : {0.9, 0.5, 0.1, 0.0}) {
    SCOPED_TRACE(keep);
    std::filesystem::copy_file(dir.file("whole.h5"), dir.file("cut.h5"),
                               std::filesystem::copy_options::overwrite_existing);
    std::filesystem::resize_file(dir.file("cut.h5"), uintmax_t(double(size) * keep));
    std::ofstream(list) << dir.file("cut.h5");
    const std::string what = setup_error(hdf5_param(list, 2));
    EXPECT_EQ(what.rfind("layer h5 (HDF5Data): " + dir.file("cut.h5") + ": ", 0), 0u) << what;
  }
  // Bytes that are not HDF5 at all, and an HDF5 signature followed by garbage.
  std::string junk(4096, '\0');
  Rng rng(3);
  for (char& c : junk) c = char(rng());
  std::ofstream(dir.file("junk.h5"), std::ios::binary) << junk;
  std::ofstream(list) << dir.file("junk.h5");
  EXPECT_NE(setup_error(hdf5_param(list, 2)).find(dir.file("junk.h5") + ": cannot open as HDF5"),
            std::string::npos);
  junk.replace(0, 8, "\x89HDF\r\n\x1a\n");
  std::ofstream(dir.file("junk.h5"), std::ios::binary) << junk;
  EXPECT_NE(setup_error(hdf5_param(list, 2)).find(dir.file("junk.h5")), std::string::npos);
  // A dataset claiming 4 GiB of values the file does not store (chunks never written read as
  // the fill value): refused before anything is allocated (fuzz_hdf5's finding).
  write_h5(dir.file("unbacked.h5"),
           {{"data", {uint64_t(1) << 28, 4}, {}, false, false, 1024}, {"label", {2}, {0, 1}}});
  std::ofstream(list) << dir.file("unbacked.h5");
  EXPECT_NE(setup_error(hdf5_param(list, 2))
                .find(dir.file("unbacked.h5") +
                      ": dataset \"data\" claims 1073741824 values but the file stores 0 bytes"),
            std::string::npos)
      << setup_error(hdf5_param(list, 2));
  // A file on which libhdf5 itself crashes (fuzz_hdf5's finding), read in a checking process first
  // (under AddressSanitizer the child may end by the sanitizer's exit instead of the signal).
  const std::string crash = std::string(CREMA_SOURCE_DIR) +
                            "/tests/fuzz/corpus/fuzz_hdf5/symbol_table_read_at_address_0.h5";
  std::ofstream(list) << crash;
  const std::string what = setup_error(hdf5_param(list, 2));
  EXPECT_EQ(what.rfind("layer h5 (HDF5Data): " + crash + ": damaged HDF5 file: ", 0), 0u) << what;
}

}  // namespace
}  // namespace crema::test
