// HDF5Data layer (Caffe's "HDF5Data"): rows of HDF5 datasets, batch by batch, with no transform.
// hdf5_data_param.source is a text file listing HDF5 files (whitespace-separated, as Caffe
// reads it; a relative path that does not exist from the working directory is looked up beside
// the list). Each top reads the dataset of its own name ("data", "label", ...), float or integer,
// as the net's type; top j is batch_size x (the dataset's dimensions after the first). Every
// dataset of a file must have the same number of rows, and every file the same dimensions per row.
//
// As Caffe: the files are loaded one at a time, whole, and their rows served in order; after the
// last row of the last file reading starts again at the first file. With shuffle, the order of
// the files is shuffled at setup and at every pass over the list, and the order of the rows of a
// file every time it is loaded (every pass for a single file); files are never interleaved. The
// shuffles draw from a seed taken from the solver's generator, so seeded runs repeat.
//
// In data-parallel training a TRAIN-phase layer keeps row i of that sequence when i mod count is
// its replica's rank, as the prefetching data layers do. Snapshots keep the rows passed, and a
// resumed run continues with the same rows.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/layer.h"
#include "core/replica.h"

namespace crema {

template <typename Dtype>
class Hdf5DataLayer : public Layer<Dtype> {
 public:
  using typename Layer<Dtype>::Tensors;
  using Layer<Dtype>::Layer;

  void layer_setup(const Tensors& bottom, const Tensors& top) override;
  // Shapes are fixed at setup.
  void reshape(const Tensors&, const Tensors&) override {}
  void forward(Handle& h, const Tensors& bottom, const Tensors& top) override;
  void backward(Handle&, const Tensors&, const std::vector<bool>&, const Tensors&) override {}

  bool reader_state(DataReaderState* state) const override;
  void restore_reader_state(const DataReaderState& state) override;

  LayerSignature signature() const override { return {"HDF5Data", exactly(0), at_least(1)}; }

  // The files in list order, and the order of files and rows in use now (for tests).
  const std::vector<std::string>& files() const { return files_; }
  const std::vector<size_t>& file_order() const { return file_order_; }
  const std::vector<int64_t>& row_order() const { return row_order_; }

 private:
  // Loads file files_[file_order_[file_pos_]] (unless it is loaded) and orders its rows.
  void load_current();
  // Moves to the next row, the next file at the end of one, the next pass at the end of all.
  void next_row();
  // The file order of pass_: the list's, or a shuffle of it drawn for this pass.
  void order_files();
  // Puts the reader where it stands after `records` rows from the start.
  void seek(uint64_t records);
  int64_t rows_of(size_t file);
  // Reads path's datasets in the checking process first (hdf5::check_in_child): libhdf5 crashes on
  // some damaged files.
  void check_file(const std::string& path) const;

  std::vector<std::string> files_;
  std::vector<std::string> tops_;  // dataset names
  bool shuffle_ = false;
  uint64_t seed_ = 0;
  int batch_size_ = 0;
  Replica replica_;
  uint64_t pass_ = 0;         // passes over the whole list completed
  size_t file_pos_ = 0;       // index into file_order_
  int64_t row_pos_ = 0;       // index into row_order_
  uint64_t next_record_ = 0;  // rows passed (read or skipped) since the start
  std::vector<size_t> file_order_;
  std::vector<int64_t> row_order_;
  size_t loaded_file_ = SIZE_MAX;
  std::vector<std::vector<Dtype>> loaded_;  // per top: the file's rows
  std::vector<int64_t> row_values_;         // per top: values in one row
  std::vector<std::vector<int64_t>> row_dims_;
  std::vector<int64_t> file_rows_;  // per listed file, -1 until known
  std::vector<std::vector<Dtype>> batch_;
};

}  // namespace crema
