// JPEG decoding through libjpeg-turbo's libjpeg API: encoded Datum records in every build
// (decode_image, data/image_io.h), and ImageData lists of JPEG files in builds without OpenCV
// (the GPU machine). The settings are OpenCV's (imgcodecs' JPEG decoder calls the same library
// the same way: the default accurate integer IDCT, fancy upsampling, BGR output through
// libjpeg-turbo's JCS_EXT_BGR, Y for gray), so both decoders give the same pixels for the same
// file (tests/data/jpeg_codec_test.cpp), including the turn that a photo's EXIF orientation asks
// for (data/exif_orientation.h). Unlike OpenCV, corrupt data that libjpeg only warns about (a
// truncated file, which it would finish in gray) is an error, and CMYK JPEGs are refused.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "data/datum.h"

namespace crema {

// True when this build has libjpeg (CREMA_WITH_JPEG).
bool jpeg_codec_available();

// Whether bytes start like a JPEG file (SOI and a marker).
bool looks_like_jpeg(std::string_view bytes);

// The channels a JPEG holds (1 or 3; 4 for CMYK). Throws crema::Error naming `where` when the
// header is corrupt.
int jpeg_channels(std::string_view bytes, const std::string& where);

// What decoding one JPEG may allocate: 512 MiB (about 35 megapixels in color).
inline constexpr uint64_t kJpegDecodeBytes = uint64_t(512) << 20;

// What a JPEG's header says, once it passed every check decode_jpeg makes.
struct JpegHeader {
  int components = 0;         // stored: 1 or 3
  int channels = 0;           // decoded, as the ColorMode asks
  int height = 0, width = 0;  // stored, before the EXIF orientation's turn
  int orientation = 1;        // EXIF, 1 to 8
  // Baseline Huffman-coded 8-bit gray or YCbCr in one interleaved scan, chroma subsampled 4:4:4,
  // 4:2:2, 4:2:0 or 4:4:0: what a GPU's hardware JPEG decoder takes.
  bool baseline = false;
};

// Reads and checks a JPEG's header as decode_jpeg does, throwing the same errors, without
// decoding the image.
JpegHeader read_jpeg_header(std::string_view bytes, const std::string& where, ColorMode color);

// Decodes a JPEG into C-H-W pixels with the channels `color` asks for (kNative: the file's).
// Throws crema::Error naming `where` for corrupt or truncated data, CMYK, an image that would
// need more than kJpegDecodeBytes to decode, and in a build without libjpeg. Safe on several
// threads at once. The data layers transform these pixels as they are (a quarter of the bytes
// of floats).
void decode_jpeg_pixels(std::string_view bytes, const std::string& where, ColorMode color,
                        ChwPixels* image);

// decode_jpeg_pixels' pixels as floats.
void decode_jpeg(std::string_view bytes, const std::string& where, ColorMode color,
                 ChwImage* image);

// Encodes 8-bit C-H-W pixels (1 channel, or 3 in BGR order) as a baseline JPEG of the given
// quality (1-100), 4:2:0 for color. Throws crema::Error in a build without libjpeg.
std::string encode_jpeg(const unsigned char* chw, int channels, int height, int width, int quality);

}  // namespace crema
