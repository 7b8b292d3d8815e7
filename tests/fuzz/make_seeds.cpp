// Writes the binary seed inputs of the fuzz targets into a folder (scripts/fuzz.sh runs it; the
// text targets take the prototxt files of models/ and tests/ as they are):
//   make_seeds <out> <net.prototxt>...
// <out>/fuzz_net_binary/: each net as a binary NetParameter (the shape of a .caffemodel without
// weights); <out>/fuzz_datum/: uint8 and float Datums; <out>/fuzz_blobproto/: a mean image in
// the legacy 4-d form and in the N-d form; <out>/fuzz_lmdb/: an LMDB data file of those Datums;
// <out>/fuzz_leveldb/: a LevelDB of them, packed (fuzz_util.h), as written (records in the log)
// and once opened (records in a table); <out>/fuzz_idx/: IDX images and labels; <out>/fuzz_jpeg/:
// small color and gray JPEGs, one with an EXIF orientation (where the build has libjpeg);
// <out>/fuzz_hdf5/: HDF5 weights and solver state as snapshots write them, and an HDF5Data source
// file (where the build has libhdf5).
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "core/errors.h"
#include "core/hdf5_io.h"
#include "core/hdf5_weights.h"
#include "core/proto_io.h"
#include "crema.pb.h"
#include "data/jpeg_codec.h"
#include "data/leveldb_db.h"
#include "data/lmdb_db.h"
#include "fuzz_util.h"

namespace {

void write(const google::protobuf::Message& msg, const std::filesystem::path& path) {
  crema::write_binary_proto_atomic(msg, path.string());
}

void write_bytes(const std::string& bytes, const std::filesystem::path& path) {
  std::FILE* f = std::fopen(path.string().c_str(), "wb");
  if (!f || std::fwrite(bytes.data(), 1, bytes.size(), f) != bytes.size() || std::fclose(f) != 0)
    crema::fail("cannot write ", path.string());
}

// A database folder's files packed as fuzz_leveldb reads them, but its lock and info logs.
std::string packed(const std::filesystem::path& dir) {
  std::vector<std::pair<std::string, std::string>> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (name == "LOCK" || name.rfind("LOG", 0) == 0) continue;
    std::ifstream in(entry.path(), std::ios::binary);
    files.emplace_back(name, std::string(std::istreambuf_iterator<char>(in), {}));
    if (!in) crema::fail("cannot read ", entry.path().string());
  }
  std::sort(files.begin(), files.end());
  return crema::fuzz::pack_folder(files);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s <out> <net.prototxt>...\n", argv[0]);
    return 2;
  }
  try {
    const std::filesystem::path out = argv[1];
    for (const char* dir : {"fuzz_net_binary", "fuzz_datum", "fuzz_blobproto", "fuzz_lmdb",
                            "fuzz_leveldb", "fuzz_idx", "fuzz_jpeg", "fuzz_hdf5"})
      std::filesystem::create_directories(out / dir);
    for (int i = 2; i < argc; ++i) {
      crema::NetParameter net;
      crema::read_text_proto(argv[i], &net);
      write(net, out / "fuzz_net_binary" / (std::to_string(i - 1) + ".caffemodel"));
    }
    crema::Datum bytes;
    bytes.set_channels(1);
    bytes.set_height(2);
    bytes.set_width(3);
    bytes.set_data(std::string("\x01\x02\x03\x04\x05\x06", 6));
    bytes.set_label(7);
    write(bytes, out / "fuzz_datum" / "uint8.datum");
    crema::Datum floats;
    floats.set_channels(2);
    floats.set_height(1);
    floats.set_width(2);
    for (float v : {0.5f, -1.f, 2.f, 3.5f}) floats.add_float_data(v);
    write(floats, out / "fuzz_datum" / "float.datum");
    crema::BlobProto legacy;
    legacy.set_num(1);
    legacy.set_channels(1);
    legacy.set_height(2);
    legacy.set_width(2);
    for (float v : {1.f, 2.f, 3.f, 4.f}) legacy.add_data(v);
    write(legacy, out / "fuzz_blobproto" / "legacy.binaryproto");
    crema::BlobProto nd;
    for (int d : {2, 3}) nd.mutable_shape()->add_dim(d);
    for (int k = 0; k < 6; ++k) nd.add_double_data(k * 0.25);
    write(nd, out / "fuzz_blobproto" / "nd.binaryproto");
    // An LMDB in Caffe's folder layout; its data file alone is the seed (a single-file LMDB).
    const std::filesystem::path db = out / "lmdb_folder";
    std::filesystem::remove_all(db);
    {
      crema::LmdbWriter writer(db.string());
      writer.put("00000000", bytes.SerializeAsString());
      writer.put("00000001", floats.SerializeAsString());
      writer.commit();
    }
    std::filesystem::copy_file(db / "data.mdb", out / "fuzz_lmdb" / "two_records.mdb",
                               std::filesystem::copy_options::overwrite_existing);
    std::filesystem::remove_all(db);
    if (crema::leveldb_available()) {
      const std::filesystem::path ldb = out / "leveldb_folder";
      std::filesystem::remove_all(ldb);
      {
        const auto writer = crema::create_leveldb_writer(ldb.string());
        writer->put("00000000", bytes.SerializeAsString());
        writer->put("00000001", floats.SerializeAsString());
        writer->commit();
      }
      write_bytes(packed(ldb), out / "fuzz_leveldb" / "two_records_logged.pack");
      crema::open_leveldb_reader(ldb.string());  // recovery moves the log into a table
      write_bytes(packed(ldb), out / "fuzz_leveldb" / "two_records_table.pack");
      std::filesystem::remove_all(ldb);
    }
    // IDX: 2 images of 3 x 3 bytes, and 2 labels (big-endian magic and sizes).
    write_bytes(
        std::string("\0\0\x08\x03\0\0\0\x02\0\0\0\x03\0\0\0\x03", 16) + std::string(18, '\x7f'),
        out / "fuzz_idx" / "images.idx");
    write_bytes(std::string("\0\0\x08\x01\0\0\0\x02\x01\x09", 10), out / "fuzz_idx" / "labels.idx");
    if (crema::jpeg_codec_available()) {
      // A gradient with an edge, so the 8x8 blocks carry AC coefficients; 13 x 11 leaves partial
      // blocks and, in color, partial 4:2:0 chroma blocks.
      const int h = 11, w = 13;
      std::vector<unsigned char> pixels(size_t(3) * h * w);
      for (size_t i = 0; i < pixels.size(); ++i)
        pixels[i] = static_cast<unsigned char>((i * 37 + (i % w > 6 ? 120 : 0)) % 256);
      const std::string color = crema::encode_jpeg(pixels.data(), 3, h, w, 90);
      write_bytes(color, out / "fuzz_jpeg" / "color.jpg");
      write_bytes(crema::encode_jpeg(pixels.data(), 1, h, w, 75), out / "fuzz_jpeg" / "gray.jpg");
      // The color file with an EXIF block after SOI asking for a quarter turn (orientation 6):
      // APP1, "Exif\0\0", a little-endian TIFF header and one IFD entry (0x0112, SHORT, 6).
      const std::string exif(
          "\xff\xe1\x00\x22"
          "Exif\0\0"
          "II\x2a\x00\x08\x00\x00\x00"
          "\x01\x00"
          "\x12\x01\x03\x00\x01\x00\x00\x00\x06\x00\x00\x00"
          "\x00\x00\x00\x00",
          36);
      write_bytes(color.substr(0, 2) + exif + color.substr(2),
                  out / "fuzz_jpeg" / "exif_rotated.jpg");
    }
    if (crema::hdf5::hdf5_available()) {
      // A layer with a 2 x 1 x 2 x 2 filter and 2 biases, its history, and 2 rows of data.
      crema::BlobProto filter, bias;
      for (int d : {2, 1, 2, 2}) filter.mutable_shape()->add_dim(d);
      for (int k = 0; k < 8; ++k) filter.add_data(0.125f * float(k) - 0.5f);
      bias.mutable_shape()->add_dim(2);
      for (float v : {0.1f, -0.2f}) bias.add_data(v);
      crema::NetParameter weights;
      crema::LayerParameter* conv = weights.add_layer();
      conv->set_name("conv1");
      conv->set_type("Convolution");
      *conv->add_blobs() = filter;
      *conv->add_blobs() = bias;
      crema::write_net_hdf5(weights, (out / "fuzz_hdf5" / "weights.caffemodel.h5").string());
      crema::SolverState state;
      state.set_iter(10);
      state.set_current_step(1);
      state.set_learned_net("weights.caffemodel.h5");
      *state.add_history() = filter;
      *state.add_history() = bias;
      crema::write_solver_state_hdf5(state, (out / "fuzz_hdf5" / "state.solverstate.h5").string());
      const std::string source = (out / "fuzz_hdf5" / "data.h5").string();
      crema::hdf5::File f = crema::hdf5::File::create(source);
      const float rows[] = {1, 2, 3, 4, 5, 6}, labels[] = {0, 1};
      crema::hdf5::write_dataset<float>(f.id(), "data", {2, 3}, rows, source);
      crema::hdf5::write_dataset<float>(f.id(), "label", {2}, labels, source);
      f.flush();
    }
  } catch (const crema::Error& e) {
    std::fprintf(stderr, "make_seeds: %s\n", e.what());
    return 1;
  }
  return 0;
}
