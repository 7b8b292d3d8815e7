// crop_images on CUDA against the CPU on every case of crop_images_cases.h: bit for bit.
#include <gtest/gtest.h>

#include <vector>

#include "crop_images_cases.h"
#include "cuda_test_util.h"
#include "primitives/crop_images.h"

namespace crema::prim {
namespace {

TEST(CropImagesCuda, MatchesCpu) {
  CREMA_SKIP_WITHOUT_GPU();
  for (const test::CropCase& c : test::crop_cases()) {
    SCOPED_TRACE(c.name);
    Handle cpu(Device::kCPU), gpu(Device::kCUDA);
    const std::vector<unsigned char> bytes = c.pixel_bytes();
    const DeviceBuffer gbytes = to_gpu(bytes);
    const DeviceBuffer gmean = to_gpu(c.mean_image.empty() ? c.mean_values : c.mean_image);
    CropImagesDesc d = c.desc, gd = c.desc;
    if (!c.mean_image.empty()) {
      d.mean_image = c.mean_image.data();
      gd.mean_image = static_cast<const float*>(gmean.get());
    } else if (!c.mean_values.empty()) {
      d.mean_values = c.mean_values.data();
      gd.mean_values = static_cast<const float*>(gmean.get());
    }
    const std::vector<ImageCrop> crops = c.at(bytes.data()), gcrops = c.at(gbytes.get());
    std::vector<float> want = test::poisoned<float>(c.out_count());
    DeviceBuffer got = to_gpu(test::poisoned<float>(c.out_count()));
    crop_images(cpu, d, int(crops.size()), crops.data(), want.data());
    crop_images(gpu, gd, int(gcrops.size()), gcrops.data(), static_cast<float*>(got.get()));
    EXPECT_EQ(from_gpu<float>(gpu, got, c.out_count()), want);
  }
}

}  // namespace
}  // namespace crema::prim
