// A LevelDB folder's manifest (its MANIFEST-n, named by CURRENT), read before LevelDB opens the
// folder. Debian's libleveldb keeps its assertions, and some hold on what the manifest says: a
// level above 0 listing files whose key ranges overlap, a table file numbered 0, a key shorter
// than its 8-byte tag, a log number past the next file number, a sequence number past 2^56 each
// abort the process inside DB::Open or on the first read. A manifest whose records are well formed
// but say such things is refused here, as the corruption it is, with one error naming the folder
// and the file. Anything LevelDB refuses itself (a record that does not parse, a bad checksum, a
// missing entry) is left to it: its own error names the problem.
#pragma once

#include <string>

namespace crema {

// Throws crema::Error where the manifest of the LevelDB at `folder` would trip an assertion of
// LevelDB's; returns quietly otherwise, and where there is no manifest to read.
void check_leveldb_manifest(const std::string& folder);

}  // namespace crema
