// The EXIF orientation of a photo (TIFF tag 0x0112 in a JPEG's APP1 "Exif" segment), which
// OpenCV's decoder applies to the pixels, so the libjpeg decoder does the same: 1 (as stored) to
// 8, each a flip and/or a transpose. Segments are untrusted bytes: anything malformed reads as 1.
#pragma once

#include <cstddef>
#include <cstdint>

namespace crema {

// The orientation in an APP1 segment's payload (starting "Exif\0\0"), or 1.
int exif_orientation(const uint8_t* payload, size_t size);

// Where output pixel (y, x) of an image shown with `orientation` comes from in the stored image
// of height x width; the output is width x height for orientations 5 to 8 (transposed).
inline void exif_source_pixel(int orientation, int height, int width, int y, int x, int* sy,
                              int* sx) {
  switch (orientation) {
    case 2:
      *sy = y, *sx = width - 1 - x;
      break;
    case 3:
      *sy = height - 1 - y, *sx = width - 1 - x;
      break;
    case 4:
      *sy = height - 1 - y, *sx = x;
      break;
    case 5:
      *sy = x, *sx = y;
      break;
    case 6:
      *sy = height - 1 - x, *sx = y;
      break;
    case 7:
      *sy = height - 1 - x, *sx = width - 1 - y;
      break;
    case 8:
      *sy = x, *sx = width - 1 - y;
      break;
    default:
      *sy = y, *sx = x;
  }
}

}  // namespace crema
