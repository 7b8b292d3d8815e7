// Image list files, the input of the ImageData layer and of convert_imageset: one "<path> <label>"
// per line, as Caffe reads them. The label is the last whitespace-separated token (an integer),
// the path is everything before it (so paths may contain spaces); blank lines are skipped.
#pragma once

#include <string>
#include <vector>

namespace crema {

struct ImageListEntry {
  std::string path;  // as written in the list, relative to the root folder
  int label = 0;
  int line = 0;  // 1-based line number in the list file, for error messages
};

// Reads and validates a list file. Throws crema::Error "<list>: cannot open ..." for an unreadable
// file, "<list>:<line>: ..." for a malformed line (no label, a label that is not an integer) and
// "<list>: lists no images ..." for a list without entries.
std::vector<ImageListEntry> read_image_list(const std::string& list_path);

}  // namespace crema
