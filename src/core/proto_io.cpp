// Protobuf file I/O with clear errors and atomic writes; see proto_io.h.
#include "core/proto_io.h"

#include <fcntl.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/text_format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cstring>
#include <string>

#include "core/errors.h"

namespace crema {
namespace {

namespace pb = google::protobuf;

// Owns a file descriptor so every early exit (exceptions included) closes it.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  // Closes now and reports close()'s result: on some file systems a failed write surfaces only
  // here, and a write we cannot trust must not be renamed into place.
  int close_checked() {
    const int rc = ::close(fd_);
    fd_ = -1;
    return rc;
  }

 private:
  int fd_;
};

// Keeps the first error of a text parse as the tokenizer reports it: 0-based line, column with
// tabs advancing to the next multiple of 8, and line -1 for errors that belong to no place in
// the text (missing required fields, found after the whole text was read).
class FirstErrorCollector : public pb::io::ErrorCollector {
 public:
  // protobuf before 22 calls AddError; later versions call RecordError.
#if GOOGLE_PROTOBUF_VERSION < 4022000
  void AddError(int line, pb::io::ColumnNumber column, const std::string& message) override {
    record(line, column, message);
  }
  void AddWarning(int, pb::io::ColumnNumber, const std::string&) override {}
#else
  void RecordError(int line, pb::io::ColumnNumber column, absl::string_view message) override {
    record(line, column, std::string(message));
  }
  void RecordWarning(int, pb::io::ColumnNumber, absl::string_view) override {}
#endif

  bool has_error = false;
  int line = -1;
  int column = 0;
  std::string message;

 private:
  void record(int l, int c, const std::string& m) {
    if (has_error) return;  // later errors are usually consequences of the first
    has_error = true;
    line = l;
    column = c;
    message = m;
  }
};

bool is_identifier_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.';
}

// Byte offset of the tokenizer position (line, tab-expanded column) in text, or npos.
size_t offset_of(const std::string& text, int line, int column) {
  size_t pos = 0;
  for (int l = 0; l < line; ++l) {
    pos = text.find('\n', pos);
    if (pos == std::string::npos) return pos;
    ++pos;
  }
  int col = 0;
  while (pos < text.size() && text[pos] != '\n' && col < column) {
    col = text[pos] == '\t' ? (col / 8 + 1) * 8 : col + 1;
    ++pos;
  }
  return pos;
}

// The parser reports some errors at the token after the offending one: an unknown field at its
// ':' and an unknown enum value at whatever follows it, often on the next line. For those, the
// named identifier is searched backwards from the reported place so the position points at it.
size_t offending_token(const std::string& text, size_t reported, const std::string& message) {
  static const char* const kQuotedTokenAfter[] = {
      "no field named \"", "Unknown enumeration value of \"", "Non-repeated field \""};
  for (const char* marker : kQuotedTokenAfter) {
    const size_t start = message.find(marker);
    if (start == std::string::npos) continue;
    const size_t begin = start + std::strlen(marker);
    const size_t end = message.find('"', begin);
    if (end == std::string::npos) break;
    const std::string token = message.substr(begin, end - begin);
    if (token.empty()) break;
    size_t from = std::min(reported, text.size());
    for (;;) {
      const size_t at = text.rfind(token, from);
      if (at == std::string::npos) break;
      const bool starts = at == 0 || !is_identifier_char(text[at - 1]);
      const size_t after = at + token.size();
      const bool ends = after >= text.size() || !is_identifier_char(text[after]);
      if (starts && ends) return at;
      if (at == 0) break;
      from = at - 1;
    }
    break;
  }
  return reported;
}

// "<name>:<line>:<column>: <message>" with a 1-based line and a 1-based column in characters.
std::string format_text_error(const std::string& text, const std::string& name,
                              const FirstErrorCollector& e) {
  std::string message = e.message;
  // At the end of the input the parser says "got: " with nothing after it.
  if (message.size() >= 5 && message.compare(message.size() - 5, 5, "got: ") == 0) {
    message += "end of file";
  }
  if (e.line < 0) return detail::make_message(name, ": ", message);
  size_t at = offset_of(text, e.line, e.column);
  if (at == std::string::npos) {
    return detail::make_message(name, ":", e.line + 1, ":", e.column + 1, ": ", message);
  }
  at = offending_token(text, at, message);
  // A negative number for an unsigned field: the parser stops at the sign ("Expected integer,
  // got: -"). Say which field and what it got, pointing at the field.
  if (message == "Expected integer, got: -" && at + 1 < text.size() &&
      std::isdigit(static_cast<unsigned char>(text[at + 1]))) {
    size_t end = at + 1;
    while (end < text.size() && (is_identifier_char(text[end]) || text[end] == '.')) ++end;
    size_t name_end = at;
    while (name_end > 0 && std::isspace(static_cast<unsigned char>(text[name_end - 1]))) --name_end;
    if (name_end > 0 && text[name_end - 1] == ':') --name_end;
    while (name_end > 0 && std::isspace(static_cast<unsigned char>(text[name_end - 1]))) --name_end;
    size_t name_start = name_end;
    while (name_start > 0 && is_identifier_char(text[name_start - 1])) --name_start;
    if (name_start < name_end) {
      message = text.substr(name_start, name_end - name_start) +
                " takes a non-negative integer, got " + text.substr(at, end - at);
      at = name_start;
    }
  }
  const size_t newline = at == 0 ? std::string::npos : text.rfind('\n', at - 1);
  const size_t column = newline == std::string::npos ? at : at - newline - 1;
  const long line = std::count(text.begin(), text.begin() + static_cast<long>(at), '\n');
  return detail::make_message(name, ":", line + 1, ":", column + 1, ": ", message);
}

std::string errno_text(int err) { return std::strerror(err); }

// Reads a whole file; the Error names the path and the reason.
std::string read_file(const std::string& path) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) fail("cannot open ", path, ": ", errno_text(errno));
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) fail("cannot read ", path, ": ", errno_text(errno));
  if (S_ISDIR(st.st_mode)) fail("cannot read ", path, ": it is a directory");
  std::string text;
  char buffer[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd.get(), buffer, sizeof(buffer));
    if (n < 0) {
      if (errno == EINTR) continue;
      fail("cannot read ", path, ": ", errno_text(errno));
    }
    if (n == 0) break;
    text.append(buffer, static_cast<size_t>(n));
    // The text parser takes an int-sized buffer.
    if (text.size() > static_cast<size_t>(INT_MAX)) fail(path, ": text file larger than 2 GiB");
  }
  return text;
}

// Writes all bytes, retrying short writes and interrupted calls; returns 0 or an errno value.
int write_all(int fd, const std::string& bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    done += static_cast<size_t>(n);
  }
  return 0;
}

}  // namespace

void write_file_atomic(const std::string& bytes, const std::string& path) {
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  int err = 0;
  {
    Fd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
    // The temp file was not created: nothing to clean up, and path is untouched.
    if (fd.get() < 0) fail("cannot write ", path, ": ", errno_text(errno));
    err = write_all(fd.get(), bytes);
    if (err == 0 && ::fsync(fd.get()) != 0) err = errno;
    if (fd.close_checked() != 0 && err == 0) err = errno;
  }
  if (err == 0 && ::rename(tmp.c_str(), path.c_str()) != 0) err = errno;
  if (err != 0) {
    ::unlink(tmp.c_str());
    fail("cannot write ", path, ": ", errno_text(err));
  }
  // Make the rename itself durable. Best effort: the data is already safe in the file, and some
  // file systems refuse fsync on a directory.
  const size_t slash = path.find_last_of('/');
  const std::string dir = slash == std::string::npos ? "." : path.substr(0, slash + 1);
  Fd dir_fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dir_fd.get() >= 0) ::fsync(dir_fd.get());
}

namespace {

// A message with unset required fields cannot be read back, so it is refused before writing.
void require_initialized(const pb::Message& msg, const std::string& path) {
  if (!msg.IsInitialized()) {
    fail("cannot write ", path, ": ", msg.GetDescriptor()->name(),
         " is missing required fields: ", msg.InitializationErrorString());
  }
}

// Clears msg and parses the whole stream into it; false when it is truncated or corrupt.
bool parse_binary(pb::io::ZeroCopyInputStream* raw, pb::Message* msg) {
  msg->Clear();
  pb::io::CodedInputStream coded(raw);
  // The default limit (64 MiB in older releases) rejects large .caffemodel files (VGG is
  // ~550 MB).
  coded.SetTotalBytesLimit(INT_MAX);
  return msg->ParseFromCodedStream(&coded) && coded.ConsumedEntireMessage();
}

}  // namespace

void read_text_proto_string(const std::string& text, const std::string& name_for_errors,
                            pb::Message* msg, pb::TextFormat::ParseInfoTree* where) {
  CREMA_REQUIRE(text.size() <= static_cast<size_t>(INT_MAX), name_for_errors,
                ": text larger than 2 GiB");
  FirstErrorCollector errors;
  pb::TextFormat::Parser parser;
  parser.RecordErrorsTo(&errors);
  if (where) parser.WriteLocationsTo(where);
  pb::io::ArrayInputStream input(text.data(), static_cast<int>(text.size()));
  msg->Clear();
  if (!parser.Parse(&input, msg)) {
    if (errors.has_error) throw Error(format_text_error(text, name_for_errors, errors));
    fail(name_for_errors, ": not a valid ", msg->GetDescriptor()->name(), " text file");
  }
}

void read_text_proto(const std::string& path, pb::Message* msg) {
  read_text_proto_string(read_file(path), path, msg);
}

void read_text_proto(const std::string& path, pb::Message* msg,
                     pb::TextFormat::ParseInfoTree* where) {
  read_text_proto_string(read_file(path), path, msg, where);
}

void read_binary_proto(const std::string& path, pb::Message* msg) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) fail("cannot open ", path, ": ", errno_text(errno));
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) fail("cannot read ", path, ": ", errno_text(errno));
  if (S_ISDIR(st.st_mode)) fail("cannot read ", path, ": it is a directory");
  // The wire format addresses at most INT_MAX bytes; say so instead of failing mid-parse.
  if (st.st_size > static_cast<off_t>(INT_MAX)) {
    fail(path, ": file of ", st.st_size, " bytes is over the 2 GiB limit of the protobuf format");
  }
  bool ok = false;
  int read_errno = 0;
  {
    pb::io::FileInputStream raw(fd.get());
    ok = parse_binary(&raw, msg);
    read_errno = raw.GetErrno();
  }
  if (read_errno != 0) fail("cannot read ", path, ": ", errno_text(read_errno));
  if (!ok) fail(path, ": not a valid ", msg->GetDescriptor()->name(), " (truncated or corrupt)");
}

void read_binary_proto_bytes(std::string_view bytes, const std::string& name_for_errors,
                             pb::Message* msg) {
  if (bytes.size() > size_t(INT_MAX))
    fail(name_for_errors, ": ", bytes.size(),
         " bytes is over the 2 GiB limit of the protobuf format");
  pb::io::ArrayInputStream raw(bytes.data(), int(bytes.size()));
  if (!parse_binary(&raw, msg))
    fail(name_for_errors, ": not a valid ", msg->GetDescriptor()->name(),
         " (truncated or corrupt)");
}

void write_binary_proto_atomic(const pb::Message& msg, const std::string& path) {
  require_initialized(msg, path);
  std::string bytes;
  if (!msg.SerializeToString(&bytes)) {
    fail("cannot write ", path, ": ", msg.GetDescriptor()->name(),
         " does not serialize (over the 2 GiB limit of the protobuf format?)");
  }
  write_file_atomic(bytes, path);
}

void write_text_proto_atomic(const pb::Message& msg, const std::string& path) {
  require_initialized(msg, path);
  std::string text;
  if (!pb::TextFormat::PrintToString(msg, &text)) {
    fail("cannot write ", path, ": ", msg.GetDescriptor()->name(), " does not print as text");
  }
  write_file_atomic(text, path);
}

}  // namespace crema
