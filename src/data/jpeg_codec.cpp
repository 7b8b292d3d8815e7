// JPEG decode and encode through libjpeg's API (libjpeg-turbo on Debian). libjpeg reports errors
// by calling error_exit, which must not return: it longjmps back into the small functions below,
// whose frames hold only plain C data, and the C++ around them turns the failure into one
// crema::Error.
#include "data/jpeg_codec.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "core/errors.h"
#include "core/tensor.h"
#include "data/exif_orientation.h"

#ifdef CREMA_WITH_JPEG
#include <jpeglib.h>

#include <csetjmp>
#include <cstdio>  // jpeglib.h needs FILE and size_t first
#endif

namespace crema {

bool jpeg_codec_available() {
#ifdef CREMA_WITH_JPEG
  return true;
#else
  return false;
#endif
}

bool looks_like_jpeg(std::string_view bytes) {
  return bytes.size() >= 3 && uint8_t(bytes[0]) == 0xFF && uint8_t(bytes[1]) == 0xD8 &&
         uint8_t(bytes[2]) == 0xFF;
}

#ifdef CREMA_WITH_JPEG
namespace {

struct ErrorManager {
  jpeg_error_mgr pub;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

[[noreturn]] void on_error(j_common_ptr cinfo) {
  auto* err = reinterpret_cast<ErrorManager*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, err->message);
  std::longjmp(err->jump, 1);
}

// libjpeg only warns about corrupt data (a truncated file decodes with its missing part gray);
// training data that is corrupt is an error here, not a silently gray example.
void on_message(j_common_ptr cinfo, int level) {
  if (level < 0) on_error(cinfo);
}

// jpeg_create_* calls error_exit too, when the jpeglib.h crema was compiled with and the libjpeg
// it runs with disagree on the version or the structs' sizes (a jconfig.h of another libjpeg
// found first): the constructors below give it a jump target and make that one crema::Error.

// One decompressor over a memory buffer; each step returns false with the library's message in
// err.message when libjpeg fails.
class Decompressor {
 public:
  Decompressor() {
    cinfo_.err = jpeg_std_error(&err_.pub);
    err_.pub.error_exit = on_error;
    err_.pub.emit_message = on_message;
    err_.message[0] = '\0';
    if (setjmp(err_.jump)) fail("libjpeg: ", err_.message);
    jpeg_create_decompress(&cinfo_);
  }
  ~Decompressor() { jpeg_destroy_decompress(&cinfo_); }
  Decompressor(const Decompressor&) = delete;
  Decompressor& operator=(const Decompressor&) = delete;

  bool read_header(const unsigned char* data, size_t size) {
    if (setjmp(err_.jump)) return false;
    jpeg_mem_src(&cinfo_, data, static_cast<unsigned long>(size));
    jpeg_save_markers(&cinfo_, JPEG_APP0 + 1, 0xFFFF);  // APP1: EXIF
    jpeg_read_header(&cinfo_, TRUE);
    return true;
  }
  // The EXIF orientation of the header read, 1 when there is none.
  int orientation() const {
    for (jpeg_saved_marker_ptr m = cinfo_.marker_list; m != nullptr; m = m->next)
      if (m->marker == JPEG_APP0 + 1) return exif_orientation(m->data, m->data_length);
    return 1;
  }
  // Starts decompression to `channels` output channels (3: BGR, 1: gray).
  bool start(int channels) {
    if (setjmp(err_.jump)) return false;
    cinfo_.out_color_space = channels == 3 ? JCS_EXT_BGR : JCS_GRAYSCALE;
    cinfo_.dct_method = JDCT_ISLOW;  // libjpeg's default, and OpenCV's
    jpeg_start_decompress(&cinfo_);
    return true;
  }
  // Reads every scanline into hwc (output_height rows of output_width * channels bytes).
  bool read_rows(unsigned char* hwc, size_t row_bytes) {
    if (setjmp(err_.jump)) return false;
    while (cinfo_.output_scanline < cinfo_.output_height) {
      JSAMPROW row = hwc + size_t(cinfo_.output_scanline) * row_bytes;
      jpeg_read_scanlines(&cinfo_, &row, 1);
    }
    jpeg_finish_decompress(&cinfo_);
    return true;
  }

  const jpeg_decompress_struct& info() const { return cinfo_; }
  const char* message() const { return err_.message; }

 private:
  jpeg_decompress_struct cinfo_{};
  ErrorManager err_{};
};

class Compressor {
 public:
  Compressor() {
    cinfo_.err = jpeg_std_error(&err_.pub);
    err_.pub.error_exit = on_error;
    err_.message[0] = '\0';
    if (setjmp(err_.jump)) fail("libjpeg: ", err_.message);
    jpeg_create_compress(&cinfo_);
  }
  ~Compressor() {
    jpeg_destroy_compress(&cinfo_);
    std::free(out_);
  }
  Compressor(const Compressor&) = delete;
  Compressor& operator=(const Compressor&) = delete;

  // hwc: height rows of width * channels bytes (BGR or gray).
  bool encode(const unsigned char* hwc, int channels, int height, int width, int quality) {
    if (setjmp(err_.jump)) return false;
    jpeg_mem_dest(&cinfo_, &out_, &out_size_);
    cinfo_.image_width = JDIMENSION(width);
    cinfo_.image_height = JDIMENSION(height);
    cinfo_.input_components = channels;
    cinfo_.in_color_space = channels == 3 ? JCS_EXT_BGR : JCS_GRAYSCALE;
    jpeg_set_defaults(&cinfo_);
    jpeg_set_quality(&cinfo_, quality, TRUE);
    jpeg_start_compress(&cinfo_, TRUE);
    while (cinfo_.next_scanline < cinfo_.image_height) {
      JSAMPROW row =
          const_cast<unsigned char*>(hwc) + size_t(cinfo_.next_scanline) * width * channels;
      jpeg_write_scanlines(&cinfo_, &row, 1);
    }
    jpeg_finish_compress(&cinfo_);
    return true;
  }
  std::string bytes() const { return std::string(reinterpret_cast<const char*>(out_), out_size_); }
  const char* message() const { return err_.message; }

 private:
  jpeg_compress_struct cinfo_{};
  ErrorManager err_{};
  unsigned char* out_ = nullptr;
  unsigned long out_size_ = 0;
};

const unsigned char* as_bytes(std::string_view s) {
  return reinterpret_cast<const unsigned char*>(s.data());
}

}  // namespace
#endif

int jpeg_channels(std::string_view bytes, const std::string& where) {
#ifdef CREMA_WITH_JPEG
  Decompressor d;
  if (!d.read_header(as_bytes(bytes), bytes.size()))
    fail(where, ": corrupt JPEG (", d.message(), ")");
  return d.info().num_components;
#else
  (void)bytes;
  fail(where, ": cannot decode JPEG: crema was built without libjpeg");
#endif
}

#ifdef CREMA_WITH_JPEG
namespace {

// The checks every decode makes on a header libjpeg has read, and what it says.
JpegHeader check_header(const Decompressor& d, size_t bytes, const std::string& where,
                        ColorMode color) {
  const jpeg_decompress_struct& info = d.info();
  if (info.num_components == 4 || info.jpeg_color_space == JCS_CMYK ||
      info.jpeg_color_space == JCS_YCCK)
    fail(where, ": CMYK JPEG is not supported without OpenCV; convert it to RGB");
  if (info.num_components != 1 && info.num_components != 3)
    fail(where, ": JPEG with ", info.num_components, " components is not supported");
  JpegHeader hd;
  hd.channels = color == ColorMode::kColor  ? 3
                : color == ColorMode::kGray ? 1
                                            : info.num_components;
  const int64_t h = info.image_height, w = info.image_width;
  if (h <= 0 || w <= 0 || hd.channels * h * w > kMaxTensorElements)
    fail(where, ": JPEG of ", w, "x", h, " pixels is too large");
  uint64_t blocks = 0;
  for (int c = 0; c < info.num_components; ++c)
    blocks += uint64_t(info.comp_info[c].width_in_blocks) * info.comp_info[c].height_in_blocks;
  // Huffman coding spends at least one bit on every 8x8 block's DC term: a file with fewer bits
  // than blocks is truncated, refused before the image its header claims is allocated (a
  // 517-byte file claiming 17477 x 14915 pixels took seconds to fail).
  if (!info.arith_code && blocks > uint64_t(bytes) * 8)
    fail(where, ": corrupt JPEG (truncated: ", bytes, " bytes cannot hold the ", blocks,
         " blocks of ", w, "x", h, " pixels)");
  // Arithmetic coding can spend far less than a bit a block, so the file's size bounds nothing
  // there: what decoding allocates is bounded instead. That is the float image and its 8-bit
  // rows, and where the file has several scans (progressive, or components in separate scans)
  // libjpeg's whole-image coefficients, 128 bytes a block (a 489-byte progressive file claiming
  // 65496 x 10968 pixels asked for 2.2 GB of them).
  const bool scans = info.progressive_mode || info.comps_in_scan < info.num_components;
  const uint64_t need = uint64_t(hd.channels) * uint64_t(h) * uint64_t(w) * (sizeof(float) + 1) +
                        (scans ? blocks * 64 * sizeof(JCOEF) : 0);
  if (need > kJpegDecodeBytes)
    fail(where, ": JPEG of ", w, "x", h, " pixels needs ", need >> 20, " MiB to decode (at most ",
         kJpegDecodeBytes >> 20, " MiB)");
  hd.components = info.num_components;
  hd.height = int(h);
  hd.width = int(w);
  hd.orientation = d.orientation();
  // Every component's sampling factor divides the largest: 4:4:4, 4:2:2, 4:2:0, 4:4:0 and gray
  // (4:1:1 and 4:1:0 are the rest).
  bool common_sampling = true;
  for (int c = 1; c < info.num_components; ++c)
    common_sampling = common_sampling && info.comp_info[c].h_samp_factor == 1 &&
                      info.comp_info[c].v_samp_factor == 1 &&
                      info.comp_info[0].h_samp_factor <= 2 && info.comp_info[0].v_samp_factor <= 2;
  hd.baseline = !info.progressive_mode && !info.arith_code && !scans && info.data_precision == 8 &&
                common_sampling && (info.num_components == 1 || info.jpeg_color_space == JCS_YCbCr);
  return hd;
}

}  // namespace
#endif

JpegHeader read_jpeg_header(std::string_view bytes, const std::string& where, ColorMode color) {
#ifdef CREMA_WITH_JPEG
  Decompressor d;
  if (!d.read_header(as_bytes(bytes), bytes.size()))
    fail(where, ": corrupt JPEG (", d.message(), ")");
  return check_header(d, bytes.size(), where, color);
#else
  (void)bytes;
  (void)color;
  fail(where, ": cannot decode JPEG: crema was built without libjpeg");
#endif
}

namespace {

// What a thread keeps of its last image's buffers for the next.
constexpr size_t kKeptPixelBytes = size_t(16) << 20;

#ifdef CREMA_WITH_JPEG
// Interleaved BGR pixels into three planes. The byte shuffles of SSSE3 make this vector code, 7x
// the scalar loop that plain x86-64 gets; the default clone serves a CPU without them.
#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target_clones("ssse3", "default")))
#endif
void split_bgr(const unsigned char* hwc, size_t plane, uint8_t* chw) {
  uint8_t* b = chw;
  uint8_t* g = chw + plane;
  uint8_t* r = chw + 2 * plane;
  for (size_t p = 0; p < plane; ++p) {
    b[p] = hwc[3 * p];
    g[p] = hwc[3 * p + 1];
    r[p] = hwc[3 * p + 2];
  }
}
#endif

}  // namespace

void decode_jpeg_pixels(std::string_view bytes, const std::string& where, ColorMode color,
                        ChwPixels* image) {
#ifdef CREMA_WITH_JPEG
  Decompressor d;
  if (!d.read_header(as_bytes(bytes), bytes.size()))
    fail(where, ": corrupt JPEG (", d.message(), ")");
  const JpegHeader hd = check_header(d, bytes.size(), where, color);
  const int channels = hd.channels;
  const int64_t h = hd.height, w = hd.width;
  const int orientation = hd.orientation;
  if (!d.start(channels)) fail(where, ": corrupt JPEG (", d.message(), ")");
  const size_t row_bytes = size_t(w) * channels;
  // The interleaved rows stay with the thread for its next image: a fresh buffer of a training
  // image's size comes from mmap, and the kernel's zeroing of its pages cost a third of the
  // decode. Images past kKeptPixelBytes get a buffer of their own.
  thread_local std::vector<unsigned char> kept;
  std::vector<unsigned char> own;
  std::vector<unsigned char>& hwc = row_bytes * size_t(h) <= kKeptPixelBytes ? kept : own;
  hwc.resize(row_bytes * size_t(h));
  if (!d.read_rows(hwc.data(), row_bytes)) fail(where, ": corrupt JPEG (", d.message(), ")");
  // As OpenCV, the pixels are turned as the photo's EXIF orientation says.
  const bool transposed = orientation >= 5;
  const int out_h = int(transposed ? w : h), out_w = int(transposed ? h : w);
  image->channels = channels;
  image->height = out_h;
  image->width = out_w;
  const size_t plane = size_t(h) * size_t(w);
  image->data.resize(size_t(channels) * plane);
  if (orientation == 1) {
    if (channels == 3)
      split_bgr(hwc.data(), plane, image->data.data());
    else
      std::memcpy(image->data.data(), hwc.data(), plane);
    return;
  }
  // In tiles of output pixels: turned by 90 degrees (orientations 5 to 8), an output row reads a
  // stored column, and whole rows missed the cache at every pixel (10200 x 10968 pixels: 7.7 s
  // under the sanitizers).
  constexpr int kTile = 64;
  for (int y0 = 0; y0 < out_h; y0 += kTile)
    for (int x0 = 0; x0 < out_w; x0 += kTile)
      for (int y = y0; y < std::min(y0 + kTile, out_h); ++y)
        for (int x = x0; x < std::min(x0 + kTile, out_w); ++x) {
          int sy = 0, sx = 0;
          exif_source_pixel(orientation, int(h), int(w), y, x, &sy, &sx);
          const unsigned char* src = &hwc[(size_t(sy) * size_t(w) + size_t(sx)) * channels];
          for (int k = 0; k < channels; ++k)
            image->data[size_t(k) * plane + size_t(y) * out_w + x] = src[k];
        }
#else
  (void)bytes;
  (void)color;
  (void)image;
  fail(where, ": cannot decode JPEG: crema was built without libjpeg");
#endif
}

void decode_jpeg(std::string_view bytes, const std::string& where, ColorMode color,
                 ChwImage* image) {
  thread_local ChwPixels pixels;
  decode_jpeg_pixels(bytes, where, color, &pixels);
  image->channels = pixels.channels;
  image->height = pixels.height;
  image->width = pixels.width;
  image->data.assign(pixels.data.begin(), pixels.data.end());
  // As the rows: a huge image's pixels are not kept for the thread's life.
  if (pixels.data.capacity() > kKeptPixelBytes) std::vector<uint8_t>().swap(pixels.data);
}

std::string encode_jpeg(const unsigned char* chw, int channels, int height, int width,
                        int quality) {
#ifdef CREMA_WITH_JPEG
  if ((channels != 1 && channels != 3) || height <= 0 || width <= 0 || quality < 1 || quality > 100)
    fail("encode_jpeg: needs 1 or 3 channels, a positive size and a quality in 1..100");
  const size_t plane = size_t(height) * size_t(width);
  std::vector<unsigned char> hwc(plane * size_t(channels));
  for (size_t p = 0; p < plane; ++p)
    for (int k = 0; k < channels; ++k) hwc[p * channels + size_t(k)] = chw[size_t(k) * plane + p];
  Compressor c;
  if (!c.encode(hwc.data(), channels, height, width, quality))
    fail("cannot encode JPEG: ", c.message());
  return c.bytes();
#else
  (void)chw;
  (void)channels;
  (void)height;
  (void)width;
  (void)quality;
  fail("cannot encode JPEG: crema was built without libjpeg");
#endif
}

}  // namespace crema
