// A LevelDB folder's files, read before LevelDB opens the folder. Debian's libleveldb keeps its
// assertions, and some hold on what the files are named or say: a file numbered 0
// ("000000.log", "MANIFEST-000000"), a manifest (the MANIFEST-n that CURRENT names) whose level
// above 0 lists files with overlapping key ranges, a table file numbered 0, a key shorter than its
// 8-byte tag, a log number past the next file number, a sequence number past 2^56 in the
// manifest or a log's write batch: each aborts the process inside DB::Open or on the first read.
// Such a folder is refused here, as the corruption it is, with one error naming the folder and
// the file. Anything LevelDB refuses itself (a record that does not parse, a bad checksum, a
// missing entry) is left to it: its own error names the problem.
#pragma once

#include <string>

namespace crema {

// Throws crema::Error where the files of the LevelDB at `folder` would trip an assertion of
// LevelDB's; returns quietly otherwise, and where there is nothing to read.
void check_leveldb_folder(const std::string& folder);

}  // namespace crema
