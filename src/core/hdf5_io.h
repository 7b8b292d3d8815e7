// HDF5 files through the library's C API, with crema's error rules: every failure is a
// crema::Error naming the file and the object ("<file>: dataset \"label\": ..."), with HDF5's own
// innermost reason appended, and HDF5 never prints its error stack (automatic printing is turned
// off in each thread that calls in here). Files are untrusted: a dataset's size is checked against
// the tensor limit before anything is allocated for it.
//
// Used by the HDF5Data and HDF5Output layers and by HDF5 snapshots (.caffemodel.h5,
// .solverstate.h5). Without libhdf5 (CREMA_WITH_HDF5 unset) hdf5_available() is false and every
// other function throws an Error saying so.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace crema::hdf5 {

// hid_t is int64_t in HDF5 1.10 and later.
using Id = int64_t;

bool hdf5_available();
// The message for a build without HDF5, naming what needed it.
[[noreturn]] void fail_unavailable(const std::string& what);

// Owns one identifier of any kind (file, group, dataset, dataspace, type, property list) and
// closes it with H5Idec_ref.
class Object {
 public:
  Object() = default;
  explicit Object(Id id) : id_(id) {}
  ~Object();
  Object(Object&& other) noexcept : id_(std::exchange(other.id_, -1)) {}
  Object& operator=(Object&& other) noexcept;
  Object(const Object&) = delete;
  Object& operator=(const Object&) = delete;
  Id id() const { return id_; }

 private:
  Id id_ = -1;
};

class File {
 public:
  // Opens path read-only. Throws when it is missing, not HDF5, truncated or damaged.
  static File open(const std::string& path);
  // Opens the bytes of a whole HDF5 file held in memory; name stands for it in errors.
  static File open_image(const void* data, size_t size, const std::string& name);
  // Creates an empty file in memory only; image() returns its bytes (then written atomically).
  static File create_in_memory(const std::string& name);
  // Creates (truncates) path on disk.
  static File create(const std::string& path);

  std::string image();
  void flush();
  Id id() const { return file_.id(); }
  const std::string& name() const { return name_; }

 private:
  File(Object file, std::string name) : file_(std::move(file)), name_(std::move(name)) {}
  Object file_;
  std::string name_;
};

// Dimensions and element kind of a dataset.
struct DatasetInfo {
  std::vector<int64_t> dims;  // empty for a scalar
  bool is_double = false;     // a floating-point type wider than 4 bytes
  int64_t count() const;
};

// A read that check_in_child runs in its checking process: it opens path and reads it as the
// caller then does; args are what else it needs (dataset names, ...). A plain function: the
// checking process is a fork of this one, where the function's address names the same code.
using CheckedRead = void (*)(const std::string& path, const std::vector<std::string>& args);

// Runs read(path, args) in a checking process first, and throws an Error naming the file if that
// process dies: libhdf5 crashes on some damaged files (fuzz_hdf5 found a .caffemodel.h5 whose
// symbol table made H5Lexists read address 0 within seconds), which would take the whole process
// down. A read that fails there throws its error here, and one that needs more than 1 GiB of
// memory beyond its data is an error naming the file. One checking process serves the checks that
// come within seconds of each other; a file it read to the end as `kind` ("weights", ...; same
// path, args, size and modification time) is not checked again as that kind.
void check_in_child(const std::string& path, const char* kind, CheckedRead read,
                    const std::vector<std::string>& args = {});
// check_in_child, then Read(path) in this process: what it returns.
template <auto Read>
auto read_checked(const std::string& path, const char* kind) {
  check_in_child(path, kind,
                 [](const std::string& p, const std::vector<std::string>&) { Read(p); });
  return Read(path);
}

// `where` is the prefix of error messages ("<file>: group \"data/conv1\"").
bool has_link(Id loc, const std::string& name);
// Names of the links in a group, in name order.
std::vector<std::string> link_names(Id group, const std::string& where);
// Whether loc/name is a group (false for a dataset or anything else).
bool is_group(Id loc, const std::string& name);
Object open_group(Id loc, const std::string& name, const std::string& where);
Object create_group(Id loc, const std::string& name, const std::string& where);

// Numeric datasets (float or integer classes; HDF5 converts to T, float or double). Throws for a
// missing dataset, another class, more than max_rank axes or more than the tensor limit.
DatasetInfo dataset_info(Id loc, const std::string& name, const std::string& where,
                         int max_rank = 32);
template <typename T>
std::vector<T> read_dataset(Id loc, const std::string& name, const std::string& where,
                            DatasetInfo* info = nullptr);
// A contiguous dataset of T (float or double) of the given dimensions (none: a scalar).
template <typename T>
void write_dataset(Id loc, const std::string& name, const std::vector<int64_t>& dims, const T* data,
                   const std::string& where);

// Scalars and strings as Caffe's hdf5_save_int / hdf5_save_string write them (H5LT's layout).
int64_t read_int(Id loc, const std::string& name, const std::string& where);
void write_int(Id loc, const std::string& name, int64_t value, const std::string& where);
std::string read_string(Id loc, const std::string& name, const std::string& where);
void write_string(Id loc, const std::string& name, const std::string& value,
                  const std::string& where);
// Opaque bytes as a one-dimensional dataset of unsigned 8-bit integers.
std::string read_bytes(Id loc, const std::string& name, const std::string& where);
void write_bytes(Id loc, const std::string& name, const std::string& value,
                 const std::string& where);

// A dataset that grows along its first axis (HDF5Output): created on the first append with the
// given per-row dimensions, extended by each append.
class RowAppender {
 public:
  RowAppender(Id loc, std::string name, std::string where)
      : loc_(loc), name_(std::move(name)), where_(std::move(where)) {}
  template <typename T>
  void append(const std::vector<int64_t>& dims, const T* data);
  int64_t rows() const { return rows_; }

 private:
  Id loc_;
  std::string name_, where_;
  std::vector<int64_t> row_dims_;
  int64_t rows_ = 0;
  Object dataset_;
};

}  // namespace crema::hdf5
