// Reading image files into Datum records, as Caffe's ReadImageToDatum: the one path from an image
// file to a Datum, shared by the ImageData layer and convert_imageset. The file is decoded with
// OpenCV (channels in BGR order), forced to 3 channels (color) or 1 (gray), optionally resized
// with bilinear interpolation, and stored either as raw uint8 pixels in C-H-W order or, encoded,
// as the original file bytes when they already are what was asked for (same channel count, no
// resize, same format), else re-encoded. Builds without OpenCV decode JPEG only, through libjpeg
// (data/jpeg_codec.h: the same pixels as OpenCV's), without resizing or re-encoding; anything
// else is a clear error there.
#pragma once

#include <string>

#include "crema.pb.h"
#include "data/datum.h"

namespace crema {

struct ImageReadOptions {
  ColorMode color = ColorMode::kColor;  // kColor or kGray (kNative keeps the file's channels)
  int new_height = 0;                   // resize when both are > 0
  int new_width = 0;
  bool encoded = false;     // store the encoded image instead of raw pixels
  std::string encode_type;  // "jpg", "png", ...; empty: the file's own format
};

// True when this build decodes and encodes images of every format through OpenCV.
bool image_io_available();

// Reads a whole file. Throws crema::Error "<path>: cannot open: <reason>".
std::string read_file_bytes(const std::string& path);

// Fills *datum (cleared first) with the image at path and label. Throws crema::Error naming the
// path when the file cannot be read or decoded, when only one of new_height / new_width is set,
// for an unsupported encode_type, and in a build without OpenCV for what needs it (see above).
void read_image_to_datum(const std::string& path, int label, const ImageReadOptions& options,
                         Datum* datum);

// Throws crema::Error when images cannot be encoded as `type` ("jpg", "png", ...) in this build.
void check_encode_type(const std::string& type);

// Decodes the bytes of an image file (an encoded Datum's data) into C-H-W values, with the
// channels `color` asks for: a JPEG through libjpeg (data/jpeg_codec.h, OpenCV's pixels without
// OpenCV's copies of them), anything else, and a JPEG that libjpeg refuses, through OpenCV.
// Throws crema::Error naming `where` when the bytes are not an 8-bit image of a known format or
// too large, and in a build without OpenCV for what decode_jpeg refuses and formats other than
// JPEG. Safe on several threads at once.
void decode_image(const std::string& bytes, const std::string& where, ColorMode color,
                  ChwImage* image);

// Writes 8-bit pixels given in C-H-W order (1 or 3 channels, BGR) to an image file whose format
// the extension names (.jpg, .png, ...; JPEG at jpeg_quality, 1-100, OpenCV's default 95). Builds
// without OpenCV write JPEG only (libjpeg). Throws crema::Error naming the path on failure.
void write_image_file(const std::string& path, const unsigned char* chw, int channels, int height,
                      int width, int jpeg_quality = 95);

}  // namespace crema
