// HDF5Data layer: a list of HDF5 files -> rows of their datasets, in order or shuffled.
#include "layers/hdf5_data_layer.h"

#include <glog/logging.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <random>
#include <sstream>

#include "core/errors.h"
#include "core/hdf5_io.h"
#include "core/rng.h"

namespace crema {
namespace {

// What check_file has the checking process read: each named dataset, as the layer reads it.
template <typename Dtype>
void read_datasets(const std::string& path, const std::vector<std::string>& names) {
  const hdf5::File f = hdf5::File::open(path);
  for (const std::string& name : names) hdf5::read_dataset<Dtype>(f.id(), name, path);
}

// The files a source list names: whitespace-separated, as Caffe reads it. A relative path that
// does not exist from the working directory is taken beside the list, so that a folder holding
// a list and its files works from anywhere.
std::vector<std::string> read_file_list(const std::string& source) {
  namespace fs = std::filesystem;
  std::ifstream in(source);
  if (!in) fail("cannot open the list of HDF5 files ", source);
  std::vector<std::string> files;
  std::string line;
  for (int line_no = 1; std::getline(in, line); ++line_no) {
    std::istringstream words(line);
    for (std::string name; words >> name;) {
      std::error_code ec;
      fs::path path(name);
      if (!fs::exists(path, ec) && path.is_relative()) {
        const fs::path beside = fs::path(source).parent_path() / path;
        if (fs::exists(beside, ec)) path = beside;
      }
      if (!fs::is_regular_file(path, ec))
        fail(source, ":", line_no, ": HDF5 file ", name, " does not exist");
      files.push_back(path.string());
    }
  }
  if (files.empty()) fail(source, ": lists no HDF5 file");
  return files;
}

// One generator per (pass, file position): the orders can be rebuilt for any position (seek).
Rng order_rng(uint64_t seed, uint64_t pass, uint64_t salt) {
  return Rng(seed + pass * 0x9E3779B97F4A7C15ull + salt * 0xBF58476D1CE4E5B9ull);
}

}  // namespace

template <typename Dtype>
void Hdf5DataLayer<Dtype>::layer_setup(const Tensors&, const Tensors& top) {
  const HDF5DataParameter& p = this->param_.hdf5_data_param();
  // As Caffe: HDF5 data is generic, so there is nothing a transform could assume.
  if (this->param_.has_transform_param())
    this->error("HDF5Data does not transform data; remove transform_param");
  if (p.batch_size() == 0) this->error("hdf5_data_param.batch_size must be positive");
  if (p.batch_size() > uint32_t(INT32_MAX)) this->error("hdf5_data_param.batch_size is too large");
  if (!hdf5::hdf5_available()) this->error(p.source(), ": crema was built without HDF5");
  batch_size_ = int(p.batch_size());
  shuffle_ = p.shuffle();
  seed_ = thread_rng()();
  if (this->phase() == TRAIN) replica_ = this_replica();
  // The tops' names are the datasets' names.
  if (this->param_.top_size() != int(top.size()))
    this->error("every top must be named: the name is the dataset it reads");
  for (int j = 0; j < this->param_.top_size(); ++j) tops_.push_back(this->param_.top(j));
  loaded_.resize(tops_.size());
  batch_.resize(tops_.size());
  this->naming_layer([&] {
    files_ = read_file_list(p.source());
    file_rows_.assign(files_.size(), -1);
    seek(0);
  });
  for (size_t j = 0; j < tops_.size(); ++j) {
    std::vector<int64_t> shape{batch_size_};
    shape.insert(shape.end(), row_dims_[j].begin(), row_dims_[j].end());
    try {
      top[j]->reshape(shape);
    } catch (const Error& e) {
      this->error("top ", tops_[j], ": ", e.what());
    }
    batch_[j].resize(size_t(top[j]->count()));
  }
  LOG(INFO) << "layer " << this->name() << ": " << files_.size() << " HDF5 files in " << p.source()
            << ", output " << tops_[0] << " size: " << top[0]->shape_string();
}

template <typename Dtype>
void Hdf5DataLayer<Dtype>::check_file(const std::string& path) const {
  hdf5::check_in_child(path, "an HDF5Data source", read_datasets<Dtype>, tops_);
}

template <typename Dtype>
int64_t Hdf5DataLayer<Dtype>::rows_of(size_t file) {
  if (file_rows_[file] < 0) {
    check_file(files_[file]);
    hdf5::File f = hdf5::File::open(files_[file]);
    const hdf5::DatasetInfo info = hdf5::dataset_info(f.id(), tops_[0], files_[file]);
    if (info.dims.empty())
      fail(files_[file], ": dataset \"", tops_[0], "\" is a scalar; it needs at least one axis");
    if (info.dims[0] == 0) fail(files_[file], ": dataset \"", tops_[0], "\" holds no rows");
    file_rows_[file] = info.dims[0];
  }
  return file_rows_[file];
}

template <typename Dtype>
void Hdf5DataLayer<Dtype>::load_current() {
  const size_t file = file_order_[file_pos_];
  const std::string& path = files_[file];
  if (file != loaded_file_) {
    loaded_file_ = SIZE_MAX;  // until the whole file is in
    check_file(path);
    hdf5::File f = hdf5::File::open(path);
    const bool first = row_dims_.empty();
    int64_t rows = -1;
    for (size_t j = 0; j < tops_.size(); ++j) {
      hdf5::DatasetInfo info;
      loaded_[j] = hdf5::read_dataset<Dtype>(f.id(), tops_[j], path, &info);
      if (info.dims.empty())
        fail(path, ": dataset \"", tops_[j], "\" is a scalar; it needs at least one axis (rows)");
      const std::vector<int64_t> row(info.dims.begin() + 1, info.dims.end());
      if (first) {
        row_dims_.push_back(row);
        row_values_.push_back(
            std::accumulate(row.begin(), row.end(), int64_t(1), std::multiplies<int64_t>()));
      } else if (row != row_dims_[j]) {
        fail(path, ": dataset \"", tops_[j], "\" has rows of another shape than in ", files_[0],
             "; every file must have the same dimensions after the first");
      }
      if (j == 0) {
        rows = info.dims[0];
        if (rows == 0) fail(path, ": dataset \"", tops_[j], "\" holds no rows");
      } else if (info.dims[0] != rows) {
        fail(path, ": dataset \"", tops_[j], "\" has ", info.dims[0], " rows but \"", tops_[0],
             "\" has ", rows, "; every top's dataset must have the same number of rows");
      }
    }
    file_rows_[file] = rows;
    loaded_file_ = file;
    DLOG(INFO) << "Loaded " << rows << " rows from " << path;
  }
  row_order_.resize(size_t(file_rows_[file]));
  std::iota(row_order_.begin(), row_order_.end(), int64_t(0));
  if (shuffle_) {
    Rng rng = order_rng(seed_, pass_, file_pos_ + 1);
    std::shuffle(row_order_.begin(), row_order_.end(), rng);
  }
}

template <typename Dtype>
void Hdf5DataLayer<Dtype>::next_row() {
  ++next_record_;
  if (++row_pos_ < int64_t(row_order_.size())) return;
  row_pos_ = 0;
  if (++file_pos_ == files_.size()) {
    file_pos_ = 0;
    ++pass_;
    order_files();
  }
  load_current();
}

template <typename Dtype>
void Hdf5DataLayer<Dtype>::order_files() {
  file_order_.resize(files_.size());
  std::iota(file_order_.begin(), file_order_.end(), size_t(0));
  if (shuffle_) {
    Rng rng = order_rng(seed_, pass_, 0);
    std::shuffle(file_order_.begin(), file_order_.end(), rng);
  }
}

template <typename Dtype>
void Hdf5DataLayer<Dtype>::seek(uint64_t records) {
  // Whole passes are skipped at once (each pass's orders depend on its number only), then whole
  // files, so a seek reads no more than the files' dimensions.
  uint64_t rest = records;
  pass_ = 0;
  if (rest > 0) {
    uint64_t per_pass = 0;
    for (size_t f = 0; f < files_.size(); ++f) per_pass += uint64_t(rows_of(f));
    pass_ = rest / per_pass;
    rest %= per_pass;
  }
  order_files();
  file_pos_ = 0;
  while (rest >= uint64_t(rows_of(file_order_[file_pos_]))) {
    rest -= uint64_t(rows_of(file_order_[file_pos_]));
    ++file_pos_;
  }
  load_current();
  row_pos_ = int64_t(rest);
  next_record_ = records;
}

template <typename Dtype>
void Hdf5DataLayer<Dtype>::forward(Handle&, const Tensors&, const Tensors& top) {
  this->naming_layer([&] {
    for (int i = 0; i < batch_size_; ++i) {
      while (next_record_ % uint64_t(replica_.count) != uint64_t(replica_.rank)) next_row();
      const int64_t row = row_order_[size_t(row_pos_)];
      for (size_t j = 0; j < tops_.size(); ++j) {
        const int64_t n = row_values_[j];
        std::copy_n(loaded_[j].begin() + row * n, n, batch_[j].begin() + int64_t(i) * n);
      }
      next_row();
    }
  });
  for (size_t j = 0; j < tops_.size(); ++j) top[j]->set_data(batch_[j]);
}

template <typename Dtype>
bool Hdf5DataLayer<Dtype>::reader_state(DataReaderState* state) const {
  const uint64_t count = uint64_t(replica_.count);
  state->set_records((next_record_ + count - 1) / count * count);
  return true;
}

template <typename Dtype>
void Hdf5DataLayer<Dtype>::restore_reader_state(const DataReaderState& state) {
  try {
    seek(state.records());
  } catch (const Error& e) {
    this->error("cannot resume reading: ", e.what());
  }
}

template class Hdf5DataLayer<float>;
template class Hdf5DataLayer<double>;

}  // namespace crema
