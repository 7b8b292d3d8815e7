// Reading and writing protobuf messages (prototxt text, binary .caffemodel / .solverstate /
// .binaryproto) with errors a user can act on: text errors name file:line:column, binary errors
// name the file and the expected message type, and writes are atomic (temp file, fsync, rename)
// so a failure or a kill never damages the previous file.
#pragma once

#include <google/protobuf/message.h>
#include <google/protobuf/text_format.h>

#include <string>
#include <string_view>

namespace crema {

// Parses a text-format file into *msg (cleared first). Syntax errors and unknown fields throw
// crema::Error("<path>:<line>:<column>: <message>"), 1-based; an unreadable file throws an Error
// naming the path.
void read_text_proto(const std::string& path, google::protobuf::Message* msg);
// The same, also recording in *where the line and column each field was read from (nested
// messages' fields too), for errors that point into the file.
void read_text_proto(const std::string& path, google::protobuf::Message* msg,
                     google::protobuf::TextFormat::ParseInfoTree* where);

// As read_text_proto, for text held in memory; name_for_errors stands in for the path.
void read_text_proto_string(const std::string& text, const std::string& name_for_errors,
                            google::protobuf::Message* msg,
                            google::protobuf::TextFormat::ParseInfoTree* where = nullptr);

// Parses a binary-format file into *msg (cleared first). Files up to 2 GiB - 1 are accepted (the
// protobuf wire format's limit); larger, truncated or corrupt files throw crema::Error.
void read_binary_proto(const std::string& path, google::protobuf::Message* msg);

// As read_binary_proto, for bytes held in memory; name_for_errors stands in for the path.
void read_binary_proto_bytes(std::string_view bytes, const std::string& name_for_errors,
                             google::protobuf::Message* msg);

// Writes msg to path atomically: "<path>.tmp.<pid>" is written, flushed, fsync'ed and renamed
// over path. On any failure the temp file is removed, an existing file at path is left as it
// was, and crema::Error names the path and the system's reason.
void write_binary_proto_atomic(const google::protobuf::Message& msg, const std::string& path);
void write_text_proto_atomic(const google::protobuf::Message& msg, const std::string& path);
// The atomic write under both: bytes to a temporary file beside path, synced, renamed over it.
void write_file_atomic(const std::string& bytes, const std::string& path);

}  // namespace crema
