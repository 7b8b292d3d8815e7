// make_synthetic_images: writes a synthetic ImageNet-style set of class-dependent images of
// varied sizes, with train.txt and val.txt list files (data/synthetic_images.h describes the
// images). Used by data/make_synthetic_imagenet.sh.
#include "backends/synthetic_images.h"
#include "tool_main.h"

DEFINE_int32(classes, 20, "Number of classes");
DEFINE_int32(train_per_class, 20, "Training images per class");
DEFINE_int32(val_per_class, 5, "Validation images per class");
DEFINE_int32(min_size, 64, "Smallest image side in pixels");
DEFINE_int32(max_size, 160, "Largest image side in pixels");
DEFINE_string(format, "jpg", "Image format: jpg or png");
DEFINE_int32(jpeg_quality, 95, "JPEG quality, 1-100");
DEFINE_double(noise, 12, "Standard deviation of the per-pixel noise (larger: larger JPEGs)");
DEFINE_uint64(seed, 1, "Seed: the same seed writes the same files");

int main(int argc, char** argv) {
  return crema::tools::run_tool(
      argc, argv, "make_synthetic_images",
      "make_synthetic_images [FLAGS] OUTPUT_DIR\n"
      "Writes OUTPUT_DIR/class<k>/img<i>.<format> and OUTPUT_DIR/{train,val}.txt.",
      1, 1, [](const std::vector<std::string>& args) {
        crema::SyntheticImageSetOptions o;
        o.classes = FLAGS_classes;
        o.train_per_class = FLAGS_train_per_class;
        o.val_per_class = FLAGS_val_per_class;
        o.min_size = FLAGS_min_size;
        o.max_size = FLAGS_max_size;
        o.format = FLAGS_format;
        o.jpeg_quality = FLAGS_jpeg_quality;
        o.noise = FLAGS_noise;
        o.seed = FLAGS_seed;
        const crema::SyntheticImageSet set = crema::write_synthetic_image_set(args[0], o);
        std::printf("make_synthetic_images: wrote %d images, %s and %s\n", set.images,
                    set.train_list.c_str(), set.val_list.c_str());
        return 0;
      });
}
