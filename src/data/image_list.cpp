// Parsing of "<path> <label>" image list files.
#include "data/image_list.h"

#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>

#include "core/errors.h"

namespace crema {

namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f'; }

// Quotes a line for an error message, shortened so that a binary file gives one readable line.
std::string quoted(const std::string& line) {
  constexpr size_t kMax = 80;
  return "'" + (line.size() > kMax ? line.substr(0, kMax) + "..." : line) + "'";
}

}  // namespace

std::vector<ImageListEntry> read_image_list(const std::string& list_path) {
  std::ifstream in(list_path, std::ios::binary);
  if (!in) fail(list_path, ": cannot open image list: ", std::strerror(errno));
  std::vector<ImageListEntry> entries;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    size_t end = line.size();
    while (end > 0 && is_space(line[end - 1])) --end;
    size_t begin = 0;
    while (begin < end && is_space(line[begin])) ++begin;
    if (begin == end) continue;  // blank line
    size_t split = end;
    while (split > begin && !is_space(line[split - 1])) --split;
    const std::string expected = ": expected '<path> <label>', got ";
    if (split == begin) fail(list_path, ":", number, expected, quoted(line), " (no label)");
    const char* label_begin = line.data() + split;
    const char* label_end = line.data() + end;
    ImageListEntry e;
    const auto [ptr, ec] = std::from_chars(label_begin, label_end, e.label);
    if (ec != std::errc() || ptr != label_end)
      fail(list_path, ":", number, expected, quoted(line), " (the label '",
           std::string(label_begin, label_end), "' is not an integer)");
    size_t path_end = split;
    while (path_end > begin && is_space(line[path_end - 1])) --path_end;
    e.path = line.substr(begin, path_end - begin);
    e.line = number;
    entries.push_back(std::move(e));
  }
  if (in.bad()) fail(list_path, ": read error");
  if (entries.empty())
    fail(list_path, ": lists no images (the file is empty; expected lines of '<path> <label>')");
  return entries;
}

}  // namespace crema
