// Image files -> Datum, through OpenCV when the build has it, else JPEG through libjpeg; encoded
// Datums' JPEGs through libjpeg in either build.
#include "data/image_io.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <vector>

#include "core/errors.h"
#include "core/tensor.h"
#include "data/jpeg_codec.h"

#ifdef CREMA_WITH_OPENCV
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#endif

namespace crema {

namespace {

// Largest image file read into memory; larger files are certainly not training images.
constexpr size_t kMaxImageFileBytes = size_t(1) << 30;

std::string lower_extension(const std::string& path) {
  const size_t dot = path.find_last_of('.');
  const size_t slash = path.find_last_of('/');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) return "";
  std::string ext = path.substr(dot + 1);
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return char(std::tolower(c)); });
  return ext == "jpeg" ? "jpg" : ext;
}

#ifdef CREMA_WITH_OPENCV
cv::Mat decode(const std::string& bytes, const std::string& path, int flags) {
  const cv::Mat buf(1, int(bytes.size()), CV_8UC1, const_cast<char*>(bytes.data()));
  cv::Mat img;
  try {
    img = cv::imdecode(buf, flags);
  } catch (const cv::Exception& e) {
    fail(path, ": cannot decode the image: ", e.what());
  }
  if (img.empty())
    fail(path, ": cannot decode the image (", bytes.size(), " bytes that are not a known format)");
  if (img.depth() != CV_8U) fail(path, ": only 8-bit images are supported");
  if (int64_t(img.channels()) * img.rows * img.cols > kMaxTensorElements)
    fail(path, ": image of ", img.cols, "x", img.rows, " pixels is too large");
  return img;
}

int imread_flags(ColorMode color) {
  return color == ColorMode::kColor  ? cv::IMREAD_COLOR
         : color == ColorMode::kGray ? cv::IMREAD_GRAYSCALE
                                     : cv::IMREAD_ANYCOLOR;
}

// OpenCV stores H-W-C interleaved; Datum and the network want planes.
template <typename T>
void to_planes(const cv::Mat& img, T* chw) {
  const int c = img.channels(), h = img.rows, w = img.cols;
  for (int y = 0; y < h; ++y) {
    const uint8_t* row = img.ptr<uint8_t>(y);
    for (int x = 0; x < w; ++x)
      for (int k = 0; k < c; ++k) chw[(size_t(k) * h + y) * w + x] = T(row[x * c + k]);
  }
}

std::string encode(const cv::Mat& img, const std::string& type, const std::string& path) {
  std::vector<uchar> buf;
  bool ok = false;
  try {
    ok = cv::imencode("." + type, img, buf);
  } catch (const cv::Exception&) {
    ok = false;
  }
  if (!ok) fail(path, ": cannot encode the image as '", type, "' (unsupported encode_type?)");
  return std::string(buf.begin(), buf.end());
}
#endif

}  // namespace

bool image_io_available() {
#ifdef CREMA_WITH_OPENCV
  return true;
#else
  return false;
#endif
}

std::string read_file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) fail(path, ": cannot open: ", std::strerror(errno));
  const std::streamoff size = in.tellg();
  if (size < 0) fail(path, ": cannot read (not a regular file?)");
  if (size_t(size) > kMaxImageFileBytes) fail(path, ": file of ", size, " bytes is too large");
  std::string bytes(size_t(size), '\0');
  in.seekg(0);
  if (!in.read(bytes.data(), size)) fail(path, ": read error");
  return bytes;
}

void read_image_to_datum(const std::string& path, int label, const ImageReadOptions& options,
                         Datum* datum) {
  if ((options.new_height > 0) != (options.new_width > 0) || options.new_height < 0 ||
      options.new_width < 0)
    fail("resize needs both a positive height and a positive width; got ", options.new_height, "x",
         options.new_width);
#ifdef CREMA_WITH_OPENCV
  datum->Clear();
  const std::string bytes = read_file_bytes(path);
  cv::Mat img = decode(bytes, path, imread_flags(options.color));
  const bool resize = options.new_height > 0;
  if (resize && (img.rows != options.new_height || img.cols != options.new_width)) {
    cv::Mat resized;
    cv::resize(img, resized, cv::Size(options.new_width, options.new_height), 0, 0,
               cv::INTER_LINEAR);
    img = resized;
  }
  datum->set_label(label);
  if (options.encoded) {
    const std::string ext = lower_extension(path);
    const std::string type =
        options.encode_type.empty() ? ext : lower_extension("." + options.encode_type);
    if (type.empty()) fail(path, ": no file extension to take the encode_type from; set one");
    // The file's own bytes serve when decoding them gives exactly these pixels.
    bool as_is = !resize && type == ext && options.color == ColorMode::kNative;
    if (!resize && type == ext && options.color != ColorMode::kNative)
      as_is = decode(bytes, path, cv::IMREAD_ANYCOLOR).channels() == img.channels();
    datum->set_data(as_is ? bytes : encode(img, type, path));
    datum->set_encoded(true);
    return;
  }
  const int c = img.channels(), h = img.rows, w = img.cols;
  datum->set_channels(c);
  datum->set_height(h);
  datum->set_width(w);
  std::string* data = datum->mutable_data();
  data->resize(size_t(c) * h * w);
  to_planes(img, data->data());
#else
  datum->Clear();
  const std::string bytes = read_file_bytes(path);
  if (!looks_like_jpeg(bytes) || !jpeg_codec_available())
    fail(path, ": cannot read this image: crema was built without OpenCV, which decodes ",
         jpeg_codec_available() ? "formats other than JPEG" : "images");
  if (options.new_height > 0)
    fail(path, ": resizing images needs OpenCV (crema was built without it)");
  datum->set_label(label);
  if (options.encoded) {
    const std::string type =
        options.encode_type.empty() ? "jpg" : lower_extension("." + options.encode_type);
    const int wanted = options.color == ColorMode::kColor ? 3 : 1;
    if (type != "jpg" ||
        (options.color != ColorMode::kNative && jpeg_channels(bytes, path) != wanted))
      fail(path, ": re-encoding images needs OpenCV (crema was built without it)");
    // The file's own bytes decode to exactly these pixels.
    datum->set_data(bytes);
    datum->set_encoded(true);
    return;
  }
  ChwImage image;
  decode_jpeg(bytes, path, options.color, &image);
  datum->set_channels(image.channels);
  datum->set_height(image.height);
  datum->set_width(image.width);
  std::string* data = datum->mutable_data();
  data->resize(image.data.size());
  for (size_t i = 0; i < image.data.size(); ++i) (*data)[i] = char(uint8_t(image.data[i]));
#endif
}

void check_encode_type(const std::string& type) {
  const std::string t = lower_extension("." + type);
#ifdef CREMA_WITH_OPENCV
  const cv::Mat one(1, 1, CV_8UC3, cv::Scalar(0, 0, 0));
  encode(one, t, "encode_type");
#else
  if (t != "jpg" || !jpeg_codec_available())
    fail("encode_type '", type, "': crema was built without OpenCV, which encodes it");
#endif
}

void decode_image(const std::string& bytes, const std::string& where, ColorMode color,
                  ChwImage* image) {
#ifdef CREMA_WITH_OPENCV
  // A JPEG goes to libjpeg directly (data/jpeg_codec.h), which gives OpenCV's pixels without
  // OpenCV's copies of them; what it refuses (CMYK; truncated or corrupt data, which OpenCV may
  // still decode with a warning) is OpenCV's to decide, as in Caffe.
  if (jpeg_codec_available() && looks_like_jpeg(bytes)) {
    try {
      decode_jpeg(bytes, where, color, image);
      return;
    } catch (const Error&) {
    }
  }
  const cv::Mat img = decode(bytes, where, imread_flags(color));
  image->channels = img.channels();
  image->height = img.rows;
  image->width = img.cols;
  image->data.resize(size_t(img.channels()) * img.rows * img.cols);
  to_planes(img, image->data.data());
#else
  if (!looks_like_jpeg(bytes) || !jpeg_codec_available())
    fail(where, ": cannot decode this image: crema was built without OpenCV, which decodes ",
         jpeg_codec_available() ? "formats other than JPEG" : "images");
  decode_jpeg(bytes, where, color, image);
#endif
}

void write_image_file(const std::string& path, const unsigned char* chw, int channels, int height,
                      int width, int jpeg_quality) {
  if (channels != 1 && channels != 3) fail(path, ": only 1 or 3 channels can be written");
  if (jpeg_quality < 1 || jpeg_quality > 100)
    fail(path, ": JPEG quality must be in 1..100; got ", jpeg_quality);
#ifdef CREMA_WITH_OPENCV
  cv::Mat img(height, width, channels == 1 ? CV_8UC1 : CV_8UC3);
  for (int y = 0; y < height; ++y) {
    uint8_t* row = img.ptr<uint8_t>(y);
    for (int x = 0; x < width; ++x)
      for (int k = 0; k < channels; ++k)
        row[x * channels + k] = chw[(size_t(k) * height + y) * width + x];
  }
  bool ok = false;
  try {
    ok = cv::imwrite(path, img, {cv::IMWRITE_JPEG_QUALITY, jpeg_quality});
  } catch (const cv::Exception&) {
    ok = false;
  }
  if (!ok) fail(path, ": cannot write the image");
#else
  if (lower_extension(path) != "jpg" || !jpeg_codec_available())
    fail(path, ": cannot write this image: crema was built without OpenCV, which writes ",
         jpeg_codec_available() ? "formats other than JPEG" : "images");
  const std::string bytes = encode_jpeg(chw, channels, height, width, jpeg_quality);
  std::ofstream out(path, std::ios::binary);
  if (!out.write(bytes.data(), std::streamsize(bytes.size())) || !out.flush())
    fail(path, ": cannot write the image");
#endif
}

}  // namespace crema
