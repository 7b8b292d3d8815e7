// HDF5 files through the C API: opening (disk or memory), datasets, scalars, strings, groups.
#include "core/hdf5_io.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <filesystem>
#include <utility>

#include "core/errors.h"
#include "core/hdf5_lock.h"
#include "core/tensor.h"

#ifdef CREMA_WITH_HDF5
#include <hdf5.h>
#endif

namespace crema::hdf5 {

[[noreturn]] void fail_unavailable(const std::string& what) {
  fail(what, ": crema was built without HDF5 (Debian: install libhdf5-dev and rebuild)");
}

int64_t DatasetInfo::count() const {
  int64_t n = 1;
  for (const int64_t d : dims) n *= d;
  return n;
}

#ifdef CREMA_WITH_HDF5

static_assert(sizeof(hid_t) == sizeof(Id), "HDF5 1.10 or later: hid_t is 64 bits");

bool hdf5_available() { return true; }

namespace {

// HDF5 prints its error stack to stderr by default; crema reports errors itself. The setting is
// per thread in a thread-safe libhdf5 (Debian's).
void quiet() {
  thread_local bool done = false;
  if (done) return;
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  done = true;
}

// Sets quiet() under crema's lock: every entry point holds one.
struct Entry {
  internal::ApiLock lock;
  Entry() { quiet(); }
};

herr_t take_innermost(unsigned, const H5E_error2_t* err, void* out) {
  auto* text = static_cast<std::string*>(out);
  if (text->empty() && err && err->desc) *text = err->desc;
  return 0;
}

// HDF5's most specific reason for the last failure ("truncated file: eof = ..."), then cleared.
std::string reason() {
  std::string text;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, take_innermost, &text);
  H5Eclear2(H5E_DEFAULT);
  return text;
}

template <typename... Parts>
[[noreturn]] void h5fail(const Parts&... parts) {
  const std::string why = reason();
  fail(parts..., why.empty() ? std::string() : " (HDF5: " + why + ")");
}

template <typename T>
hid_t native();
template <>
hid_t native<float>() {
  return H5T_NATIVE_FLOAT;
}
template <>
hid_t native<double>() {
  return H5T_NATIVE_DOUBLE;
}
template <>
hid_t native<uint8_t>() {
  return H5T_NATIVE_UCHAR;
}

std::vector<hsize_t> to_hsize(const std::vector<int64_t>& dims) {
  return std::vector<hsize_t>(dims.begin(), dims.end());
}

// In-memory files are told apart by name, so each gets one of its own.
std::string unique_memory_name(const std::string& name) {
  static std::atomic<uint64_t> counter{0};
  return "crema-memory-" + std::to_string(counter++) + "-" + name;
}

Object memory_access(size_t increment) {
  Object fapl(H5Pcreate(H5P_FILE_ACCESS));
  if (fapl.id() < 0 || H5Pset_fapl_core(fapl.id(), increment, 0) < 0)
    h5fail("cannot set up an in-memory HDF5 file");
  return fapl;
}

Object open_dataset(Id loc, const std::string& name, const std::string& where) {
  const Entry entry;
  if (!has_link(loc, name)) fail(where, ": no dataset \"", name, "\"");
  Object ds(H5Dopen2(loc, name.c_str(), H5P_DEFAULT));
  if (ds.id() < 0) h5fail(where, ": cannot open dataset \"", name, "\"");
  return ds;
}

}  // namespace

Object::~Object() {
  if (id_ >= 0) {
    const Entry entry;
    H5Idec_ref(id_);
  }
}

Object& Object::operator=(Object&& other) noexcept {
  if (this != &other) {
    Object old(std::exchange(id_, std::exchange(other.id_, -1)));
  }
  return *this;
}

File File::open(const std::string& path) {
  const Entry entry;
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) fail(path, ": no such file");
  Object file(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT));
  if (file.id() < 0) h5fail(path, ": cannot open as HDF5 (not an HDF5 file, truncated or damaged)");
  return File(std::move(file), path);
}

File File::open_image(const void* data, size_t size, const std::string& name) {
  const Entry entry;
  Object fapl = memory_access(64 * 1024);
  if (H5Pset_file_image(fapl.id(), const_cast<void*>(data), size) < 0)
    h5fail(name, ": cannot hand the file's bytes to HDF5");
  Object file(H5Fopen(unique_memory_name(name).c_str(), H5F_ACC_RDONLY, fapl.id()));
  if (file.id() < 0) h5fail(name, ": cannot open as HDF5 (not an HDF5 file, truncated or damaged)");
  return File(std::move(file), name);
}

File File::create_in_memory(const std::string& name) {
  const Entry entry;
  Object fapl = memory_access(1 << 20);
  Object file(H5Fcreate(unique_memory_name(name).c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl.id()));
  if (file.id() < 0) h5fail("cannot write ", name, ": cannot create an HDF5 file in memory");
  return File(std::move(file), name);
}

File File::create(const std::string& path) {
  const Entry entry;
  Object file(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT));
  if (file.id() < 0) h5fail("cannot create HDF5 file ", path);
  return File(std::move(file), path);
}

void File::flush() {
  const Entry entry;
  if (H5Fflush(id(), H5F_SCOPE_GLOBAL) < 0) h5fail("cannot write ", name_);
}

std::string File::image() {
  const Entry entry;
  flush();
  const ssize_t size = H5Fget_file_image(id(), nullptr, 0);
  if (size < 0) h5fail("cannot write ", name_, ": cannot take the file's bytes");
  std::string bytes(size_t(size), '\0');
  if (H5Fget_file_image(id(), bytes.data(), bytes.size()) != size)
    h5fail("cannot write ", name_, ": cannot take the file's bytes");
  return bytes;
}

bool has_link(Id loc, const std::string& name) {
  const Entry entry;
  const htri_t exists = H5Lexists(loc, name.c_str(), H5P_DEFAULT);
  if (exists < 0) H5Eclear2(H5E_DEFAULT);  // a missing intermediate group of "a/b"
  return exists > 0;
}

std::vector<std::string> link_names(Id group, const std::string& where) {
  const Entry entry;
  H5G_info_t info;
  if (H5Gget_info(group, &info) < 0) h5fail(where, ": cannot list the group");
  std::vector<std::string> names;
  for (hsize_t i = 0; i < info.nlinks; ++i) {
    const ssize_t size =
        H5Lget_name_by_idx(group, ".", H5_INDEX_NAME, H5_ITER_INC, i, nullptr, 0, H5P_DEFAULT);
    if (size < 0) h5fail(where, ": cannot read the name of link ", i);
    std::string name(size_t(size) + 1, '\0');
    if (H5Lget_name_by_idx(group, ".", H5_INDEX_NAME, H5_ITER_INC, i, name.data(), name.size(),
                           H5P_DEFAULT) < 0)
      h5fail(where, ": cannot read the name of link ", i);
    name.resize(size_t(size));
    names.push_back(std::move(name));
  }
  return names;
}

bool is_group(Id loc, const std::string& name) {
  const Entry entry;
  H5L_info_t link;
  if (!has_link(loc, name) || H5Lget_info(loc, name.c_str(), &link, H5P_DEFAULT) < 0 ||
      link.type != H5L_TYPE_HARD) {
    H5Eclear2(H5E_DEFAULT);
    return false;
  }
  Object object(H5Oopen(loc, name.c_str(), H5P_DEFAULT));
  if (object.id() < 0) {
    H5Eclear2(H5E_DEFAULT);
    return false;
  }
  return H5Iget_type(object.id()) == H5I_GROUP;
}

Object open_group(Id loc, const std::string& name, const std::string& where) {
  const Entry entry;
  if (!is_group(loc, name)) fail(where, ": no group \"", name, "\"");
  Object group(H5Gopen2(loc, name.c_str(), H5P_DEFAULT));
  if (group.id() < 0) h5fail(where, ": cannot open group \"", name, "\"");
  return group;
}

Object create_group(Id loc, const std::string& name, const std::string& where) {
  const Entry entry;
  // A layer named "a/b" is the group b inside a; a may exist already (the layer a's own group).
  if (is_group(loc, name)) return open_group(loc, name, where);
  Object lcpl(H5Pcreate(H5P_LINK_CREATE));
  if (lcpl.id() < 0 || H5Pset_create_intermediate_group(lcpl.id(), 1) < 0)
    h5fail(where, ": cannot create group \"", name, "\"");
  Object group(H5Gcreate2(loc, name.c_str(), lcpl.id(), H5P_DEFAULT, H5P_DEFAULT));
  if (group.id() < 0) h5fail(where, ": cannot create group \"", name, "\"");
  return group;
}

// How many values a dataset may claim beyond what the file stores for it (dataset_info).
constexpr uint64_t kUnbackedValues = uint64_t(1) << 18;
constexpr uint64_t kMaxValuesPerByte = 4096;

DatasetInfo dataset_info(Id loc, const std::string& name, const std::string& where, int max_rank) {
  Object ds = open_dataset(loc, name, where);
  Object type(H5Dget_type(ds.id()));
  if (type.id() < 0) h5fail(where, ": dataset \"", name, "\": cannot read its type");
  const H5T_class_t cls = H5Tget_class(type.id());
  if (cls != H5T_FLOAT && cls != H5T_INTEGER)
    fail(where, ": dataset \"", name, "\" does not hold numbers (float or integer)");
  DatasetInfo info;
  info.is_double = cls == H5T_FLOAT && H5Tget_size(type.id()) > 4;
  Object space(H5Dget_space(ds.id()));
  const int rank = space.id() < 0 ? -1 : H5Sget_simple_extent_ndims(space.id());
  if (rank < 0) h5fail(where, ": dataset \"", name, "\": cannot read its dimensions");
  if (rank > max_rank)
    fail(where, ": dataset \"", name, "\" has ", rank, " axes; at most ", max_rank, " are allowed");
  std::vector<hsize_t> dims(size_t(rank), 0);
  if (rank > 0 && H5Sget_simple_extent_dims(space.id(), dims.data(), nullptr) < 0)
    h5fail(where, ": dataset \"", name, "\": cannot read its dimensions");
  uint64_t count = 1;
  for (const hsize_t d : dims) {
    // Checked one factor at a time, so the product never overflows.
    if (d > uint64_t(kMaxTensorElements) || (d > 0 && count > uint64_t(kMaxTensorElements) / d))
      fail(where, ": dataset \"", name, "\" holds more than the tensor limit of ",
           kMaxTensorElements, " values");
    count *= d;
    info.dims.push_back(int64_t(d));
  }
  // The values come from the bytes the file stores for the dataset (no more than the file holds),
  // which deflate expands at most about 1032 times, so at most that many 1-byte values a byte: a
  // claim far past that (a damaged header, or chunks never written, which read as the fill
  // value) would have crema allocate memory the file cannot back.
  const Object file(H5Iget_file_id(ds.id()));
  hsize_t file_bytes = 0;
  if (file.id() < 0 || H5Fget_filesize(file.id(), &file_bytes) < 0)
    h5fail(where, ": dataset \"", name, "\": cannot read the file's size");
  const uint64_t stored = std::min<uint64_t>(H5Dget_storage_size(ds.id()), file_bytes);
  if (count > kUnbackedValues && count / kMaxValuesPerByte > stored)
    fail(where, ": dataset \"", name, "\" claims ", count, " values but the file stores ", stored,
         " bytes of them (damaged?)");
  return info;
}

template <typename T>
std::vector<T> read_dataset(Id loc, const std::string& name, const std::string& where,
                            DatasetInfo* info_out) {
  const DatasetInfo info = dataset_info(loc, name, where);
  // The values, and the copy the caller makes of them (a weights blob, an HDF5Data batch).
  internal::allow_data(2 * uint64_t(info.count()) * sizeof(T));
  std::vector<T> values(size_t(info.count()));
  if (!values.empty()) {
    Object ds = open_dataset(loc, name, where);
    if (H5Dread(ds.id(), native<T>(), H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()) < 0)
      h5fail(where, ": cannot read dataset \"", name, "\" (truncated or damaged?)");
  }
  if (info_out) *info_out = info;
  return values;
}

template <typename T>
void write_dataset(Id loc, const std::string& name, const std::vector<int64_t>& dims, const T* data,
                   const std::string& where) {
  const Entry entry;
  const std::vector<hsize_t> h = to_hsize(dims);
  Object space(dims.empty() ? H5Screate(H5S_SCALAR)
                            : H5Screate_simple(int(h.size()), h.data(), nullptr));
  if (space.id() < 0) h5fail(where, ": cannot create dataset \"", name, "\"");
  Object ds(H5Dcreate2(loc, name.c_str(), native<T>(), space.id(), H5P_DEFAULT, H5P_DEFAULT,
                       H5P_DEFAULT));
  if (ds.id() < 0) h5fail(where, ": cannot create dataset \"", name, "\"");
  int64_t count = 1;
  for (const int64_t d : dims) count *= d;
  if (count > 0 && H5Dwrite(ds.id(), native<T>(), H5S_ALL, H5S_ALL, H5P_DEFAULT, data) < 0)
    h5fail(where, ": cannot write dataset \"", name, "\"");
}

int64_t read_int(Id loc, const std::string& name, const std::string& where) {
  const DatasetInfo info = dataset_info(loc, name, where);
  if (info.count() != 1) fail(where, ": dataset \"", name, "\" must hold one number");
  Object ds = open_dataset(loc, name, where);
  long long value = 0;
  if (H5Dread(ds.id(), H5T_NATIVE_LLONG, H5S_ALL, H5S_ALL, H5P_DEFAULT, &value) < 0)
    h5fail(where, ": cannot read dataset \"", name, "\"");
  return int64_t(value);
}

void write_int(Id loc, const std::string& name, int64_t value, const std::string& where) {
  const Entry entry;
  // As H5LTmake_dataset_int: a scalar of the native int.
  if (value < INT32_MIN || value > INT32_MAX)
    fail(where, ": ", name, " = ", value, " does not fit a 32-bit integer");
  const int v = int(value);
  Object space(H5Screate(H5S_SCALAR));
  Object ds(H5Dcreate2(loc, name.c_str(), H5T_NATIVE_INT, space.id(), H5P_DEFAULT, H5P_DEFAULT,
                       H5P_DEFAULT));
  if (ds.id() < 0 || H5Dwrite(ds.id(), H5T_NATIVE_INT, H5S_ALL, H5S_ALL, H5P_DEFAULT, &v) < 0)
    h5fail(where, ": cannot write dataset \"", name, "\"");
}

std::string read_string(Id loc, const std::string& name, const std::string& where) {
  constexpr size_t kMaxString = 1 << 20;
  Object ds = open_dataset(loc, name, where);
  Object type(H5Dget_type(ds.id()));
  Object space(H5Dget_space(ds.id()));
  if (type.id() < 0 || space.id() < 0 || H5Tget_class(type.id()) != H5T_STRING ||
      H5Sget_simple_extent_npoints(space.id()) != 1)
    fail(where, ": dataset \"", name, "\" must hold one string");
  Object memory(H5Tcopy(H5T_C_S1));
  if (H5Tis_variable_str(type.id()) > 0) {
    char* text = nullptr;
    if (H5Tset_size(memory.id(), H5T_VARIABLE) < 0 ||
        H5Dread(ds.id(), memory.id(), H5S_ALL, H5S_ALL, H5P_DEFAULT, &text) < 0)
      h5fail(where, ": cannot read dataset \"", name, "\"");
    std::string value = text ? std::string(text, strnlen(text, kMaxString)) : std::string();
    H5free_memory(text);
    return value;
  }
  const size_t size = H5Tget_size(type.id());
  if (size == 0 || size > kMaxString)
    fail(where, ": dataset \"", name, "\" holds a string of ", size, " bytes");
  std::string value(size + 1, '\0');
  if (H5Tset_size(memory.id(), size + 1) < 0 ||
      H5Dread(ds.id(), memory.id(), H5S_ALL, H5S_ALL, H5P_DEFAULT, value.data()) < 0)
    h5fail(where, ": cannot read dataset \"", name, "\"");
  value.resize(strnlen(value.c_str(), size));
  return value;
}

void write_string(Id loc, const std::string& name, const std::string& value,
                  const std::string& where) {
  const Entry entry;
  // As H5LTmake_dataset_string: a scalar, fixed-size, NUL-terminated C string.
  Object type(H5Tcopy(H5T_C_S1));
  Object space(H5Screate(H5S_SCALAR));
  if (type.id() < 0 || H5Tset_size(type.id(), value.size() + 1) < 0 ||
      H5Tset_strpad(type.id(), H5T_STR_NULLTERM) < 0)
    h5fail(where, ": cannot write dataset \"", name, "\"");
  Object ds(
      H5Dcreate2(loc, name.c_str(), type.id(), space.id(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
  if (ds.id() < 0 || H5Dwrite(ds.id(), type.id(), H5S_ALL, H5S_ALL, H5P_DEFAULT, value.c_str()) < 0)
    h5fail(where, ": cannot write dataset \"", name, "\"");
}

std::string read_bytes(Id loc, const std::string& name, const std::string& where) {
  DatasetInfo info;
  const std::vector<uint8_t> bytes = read_dataset<uint8_t>(loc, name, where, &info);
  if (info.dims.size() != 1) fail(where, ": dataset \"", name, "\" must have one axis");
  return std::string(bytes.begin(), bytes.end());
}

void write_bytes(Id loc, const std::string& name, const std::string& value,
                 const std::string& where) {
  write_dataset(loc, name, {int64_t(value.size())}, reinterpret_cast<const uint8_t*>(value.data()),
                where);
}

template <typename T>
void RowAppender::append(const std::vector<int64_t>& dims, const T* data) {
  const Entry entry;
  if (dims.empty()) fail(where_, ": dataset \"", name_, "\": a value without rows");
  const std::vector<int64_t> row(dims.begin() + 1, dims.end());
  int64_t row_values = 1;
  for (const int64_t d : row) row_values *= d;
  if (dataset_.id() < 0) {
    // Chunks of about 1 MiB (at least one row): reads of a few rows stay cheap.
    const int64_t row_bytes = std::max<int64_t>(1, row_values * int64_t(sizeof(T)));
    std::vector<hsize_t> chunk = to_hsize(dims), zero = to_hsize(dims), max = to_hsize(dims);
    chunk[0] = hsize_t(std::max<int64_t>(1, std::min<int64_t>(dims[0], (1 << 20) / row_bytes)));
    for (hsize_t& c : chunk) c = std::max<hsize_t>(c, 1);
    zero[0] = 0;
    max[0] = H5S_UNLIMITED;
    Object space(H5Screate_simple(int(dims.size()), zero.data(), max.data()));
    Object dcpl(H5Pcreate(H5P_DATASET_CREATE));
    if (space.id() < 0 || dcpl.id() < 0 ||
        H5Pset_chunk(dcpl.id(), int(chunk.size()), chunk.data()) < 0)
      h5fail(where_, ": cannot create dataset \"", name_, "\"");
    dataset_ = Object(H5Dcreate2(loc_, name_.c_str(), native<T>(), space.id(), H5P_DEFAULT,
                                 dcpl.id(), H5P_DEFAULT));
    if (dataset_.id() < 0) h5fail(where_, ": cannot create dataset \"", name_, "\"");
    row_dims_ = row;
  }
  if (row != row_dims_)
    fail(where_, ": dataset \"", name_, "\": rows of ", row.size(),
         " axes and another shape than the first batch's");
  if (dims[0] == 0) return;
  std::vector<hsize_t> total = to_hsize(dims), start(dims.size(), 0);
  total[0] = hsize_t(rows_ + dims[0]);
  start[0] = hsize_t(rows_);
  const std::vector<hsize_t> count = to_hsize(dims);
  if (H5Dset_extent(dataset_.id(), total.data()) < 0)
    h5fail(where_, ": cannot extend dataset \"", name_, "\"");
  Object file_space(H5Dget_space(dataset_.id()));
  Object memory_space(H5Screate_simple(int(count.size()), count.data(), nullptr));
  if (file_space.id() < 0 || memory_space.id() < 0 ||
      H5Sselect_hyperslab(file_space.id(), H5S_SELECT_SET, start.data(), nullptr, count.data(),
                          nullptr) < 0 ||
      H5Dwrite(dataset_.id(), native<T>(), memory_space.id(), file_space.id(), H5P_DEFAULT, data) <
          0)
    h5fail(where_, ": cannot write dataset \"", name_, "\"");
  rows_ += dims[0];
}

#else  // no HDF5

bool hdf5_available() { return false; }
Object::~Object() {}
Object& Object::operator=(Object&& other) noexcept {
  id_ = std::exchange(other.id_, -1);
  return *this;
}
File File::open(const std::string& path) { fail_unavailable(path); }
File File::open_image(const void*, size_t, const std::string& name) { fail_unavailable(name); }
File File::create_in_memory(const std::string& name) { fail_unavailable(name); }
File File::create(const std::string& path) { fail_unavailable(path); }
void File::flush() { fail_unavailable(name_); }
std::string File::image() { fail_unavailable(name_); }
bool has_link(Id, const std::string&) { return false; }
std::vector<std::string> link_names(Id, const std::string& where) { fail_unavailable(where); }
bool is_group(Id, const std::string&) { return false; }
Object open_group(Id, const std::string&, const std::string& where) { fail_unavailable(where); }
Object create_group(Id, const std::string&, const std::string& where) { fail_unavailable(where); }
DatasetInfo dataset_info(Id, const std::string&, const std::string& where, int) {
  fail_unavailable(where);
}
template <typename T>
std::vector<T> read_dataset(Id, const std::string&, const std::string& where, DatasetInfo*) {
  fail_unavailable(where);
}
template <typename T>
void write_dataset(Id, const std::string&, const std::vector<int64_t>&, const T*,
                   const std::string& where) {
  fail_unavailable(where);
}
int64_t read_int(Id, const std::string&, const std::string& where) { fail_unavailable(where); }
void write_int(Id, const std::string&, int64_t, const std::string& where) {
  fail_unavailable(where);
}
std::string read_string(Id, const std::string&, const std::string& where) {
  fail_unavailable(where);
}
void write_string(Id, const std::string&, const std::string&, const std::string& where) {
  fail_unavailable(where);
}
std::string read_bytes(Id, const std::string&, const std::string& where) {
  fail_unavailable(where);
}
void write_bytes(Id, const std::string&, const std::string&, const std::string& where) {
  fail_unavailable(where);
}
template <typename T>
void RowAppender::append(const std::vector<int64_t>&, const T*) {
  fail_unavailable(where_);
}

#endif

template std::vector<float> read_dataset<float>(Id, const std::string&, const std::string&,
                                                DatasetInfo*);
template std::vector<double> read_dataset<double>(Id, const std::string&, const std::string&,
                                                  DatasetInfo*);
template void write_dataset<float>(Id, const std::string&, const std::vector<int64_t>&,
                                   const float*, const std::string&);
template void write_dataset<double>(Id, const std::string&, const std::vector<int64_t>&,
                                    const double*, const std::string&);
template void RowAppender::append<float>(const std::vector<int64_t>&, const float*);
template void RowAppender::append<double>(const std::vector<int64_t>&, const double*);

}  // namespace crema::hdf5
