// Test fixtures written with the HDF5 C library directly (not through crema's own HDF5 code, so
// that the two check each other): files of named datasets, as h5py or Caffe's scripts write them.
// Without libhdf5, CREMA_SKIP_WITHOUT_HDF5() skips the test.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#ifdef CREMA_WITH_HDF5
#include <hdf5.h>
#endif

#ifdef CREMA_WITH_HDF5
#define CREMA_SKIP_WITHOUT_HDF5() (void)0
#else
#define CREMA_SKIP_WITHOUT_HDF5() GTEST_SKIP() << "built without HDF5"
#endif

namespace crema::test {

// One dataset to write: its name, dimensions and values, stored as 64-bit floats when
// as_double, 32-bit integers when as_int, else 32-bit floats.
struct H5Dataset {
  std::string name;
  std::vector<uint64_t> dims;
  std::vector<double> values;
  bool as_double = false;
  bool as_int = false;
  uint64_t gzip_chunk_rows = 0;  // > 0: chunked by this many rows and gzip-compressed, as h5py's
                                 // compression="gzip"
};

#ifdef CREMA_WITH_HDF5
// Writes path (truncating it) with the datasets; names may hold '/' for datasets in groups,
// which are created as needed.
inline void write_h5(const std::string& path, const std::vector<H5Dataset>& datasets) {
  const hid_t file = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  ASSERT_GE(file, 0) << path;
  const hid_t lcpl = H5Pcreate(H5P_LINK_CREATE);
  H5Pset_create_intermediate_group(lcpl, 1);
  for (const H5Dataset& d : datasets) {
    const std::vector<hsize_t> dims(d.dims.begin(), d.dims.end());
    const hid_t space = dims.empty() ? H5Screate(H5S_SCALAR)
                                     : H5Screate_simple(int(dims.size()), dims.data(), nullptr);
    const hid_t type = d.as_double ? H5T_IEEE_F64LE : d.as_int ? H5T_STD_I32LE : H5T_IEEE_F32LE;
    const hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    if (d.gzip_chunk_rows > 0) {
      std::vector<hsize_t> chunk = dims;
      chunk[0] = std::min<hsize_t>(chunk[0], d.gzip_chunk_rows);
      H5Pset_chunk(dcpl, int(chunk.size()), chunk.data());
      H5Pset_deflate(dcpl, 1);
    }
    const hid_t ds = H5Dcreate2(file, d.name.c_str(), type, space, lcpl, dcpl, H5P_DEFAULT);
    H5Pclose(dcpl);
    ASSERT_GE(ds, 0) << d.name;
    // HDF5 converts the doubles to the file's type.
    if (!d.values.empty()) {
      ASSERT_GE(H5Dwrite(ds, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, d.values.data()), 0);
    }
    H5Dclose(ds);
    H5Sclose(space);
  }
  H5Pclose(lcpl);
  ASSERT_GE(H5Fclose(file), 0);
}

// Reads a whole numeric dataset as doubles, with its dimensions.
inline std::vector<double> read_h5(const std::string& path, const std::string& name,
                                   std::vector<uint64_t>* dims_out = nullptr) {
  std::vector<double> values;
  const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  EXPECT_GE(file, 0) << path;
  if (file < 0) return values;
  const hid_t ds = H5Dopen2(file, name.c_str(), H5P_DEFAULT);
  EXPECT_GE(ds, 0) << name;
  if (ds >= 0) {
    const hid_t space = H5Dget_space(ds);
    const int rank = H5Sget_simple_extent_ndims(space);
    std::vector<hsize_t> dims(static_cast<size_t>(rank));
    H5Sget_simple_extent_dims(space, dims.data(), nullptr);
    hsize_t n = 1;
    for (hsize_t d : dims) n *= d;
    values.resize(n);
    if (n > 0) {
      EXPECT_GE(H5Dread(ds, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()), 0);
    }
    if (dims_out) dims_out->assign(dims.begin(), dims.end());
    H5Sclose(space);
    H5Dclose(ds);
  }
  H5Fclose(file);
  return values;
}
// Reads a scalar string dataset (fixed or variable length).
inline std::string read_h5_string(const std::string& path, const std::string& name) {
  std::string value;
  const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  const hid_t ds = file < 0 ? -1 : H5Dopen2(file, name.c_str(), H5P_DEFAULT);
  EXPECT_GE(ds, 0) << path << " " << name;
  if (ds >= 0) {
    const hid_t type = H5Dget_type(ds);
    const hid_t memory = H5Tcopy(H5T_C_S1);
    if (H5Tis_variable_str(type) > 0) {
      char* text = nullptr;
      H5Tset_size(memory, H5T_VARIABLE);
      H5Dread(ds, memory, H5S_ALL, H5S_ALL, H5P_DEFAULT, &text);
      value = text ? text : "";
      H5free_memory(text);
    } else {
      std::vector<char> buf(H5Tget_size(type) + 1, '\0');
      H5Tset_size(memory, buf.size());
      H5Dread(ds, memory, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf.data());
      value = buf.data();
    }
    H5Tclose(memory);
    H5Tclose(type);
    H5Dclose(ds);
  }
  if (file >= 0) H5Fclose(file);
  return value;
}
#else
inline std::string read_h5_string(const std::string&, const std::string&) { return ""; }
inline void write_h5(const std::string&, const std::vector<H5Dataset>&) {}
inline std::vector<double> read_h5(const std::string&, const std::string&,
                                   std::vector<uint64_t>* = nullptr) {
  return {};
}
#endif

}  // namespace crema::test
