// check_in_child: every untrusted HDF5 file is read first by a checking process, forked from this
// one, so that a crash inside libhdf5 is an error naming the file instead of the end of crema.
//
// The checking process serves checks over a socket until it has been idle for kIdleSeconds, so
// that a run of checks (an HDF5Data list of files, a fuzzing campaign) forks once, not once per
// file: a fork copies the page tables of the whole process, and both processes then copy each
// page either writes. It shares the memory it was forked with until it exits; the idle limit
// bounds how long it keeps pages this process has since freed, and kMaxServed how much memory
// libhdf5 leaks on its error paths accumulates there.
//
// Each read there may map at most kOverheadBytes of memory beyond the data it returns
// (RLIMIT_DATA, raised by allow_data for each dataset): on damaged files libhdf5 asks for
// gigabytes (H5C_protect for hundreds of them; H5FL_blk_calloc zeroed 1.8 GB for a 5.6 KB file).
// A read that fails there, by a crema error or by that limit, is not repeated here: its error is
// this process's answer.
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <new>
#include <set>

#include "core/errors.h"
#include "core/hdf5_io.h"
#include "core/hdf5_lock.h"

// Present in sanitized builds only.
extern "C" void __sanitizer_set_death_callback(void (*callback)()) __attribute__((weak));

namespace crema::hdf5 {

#ifdef CREMA_WITH_HDF5

namespace internal {

namespace {
std::recursive_mutex& api_mutex() {
  static std::recursive_mutex m;
  return m;
}
bool checking_process = false;
}  // namespace

ApiLock::ApiLock() : lock_(api_mutex(), std::defer_lock) {
  if (!checking_process) lock_.lock();
}

void become_checking_process() { checking_process = true; }
bool is_checking_process() { return checking_process; }

void allow_data(uint64_t bytes) {
  if (!checking_process) return;
  rlimit limit{};
  if (::getrlimit(RLIMIT_DATA, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return;
  limit.rlim_cur =
      bytes >= limit.rlim_max - limit.rlim_cur ? limit.rlim_max : limit.rlim_cur + bytes;
  ::setrlimit(RLIMIT_DATA, &limit);
}

}  // namespace internal

namespace {

constexpr int kIdleSeconds = 5;
constexpr int kMaxServed = 256;
constexpr uint64_t kOverheadBytes = uint64_t(1) << 30;

// Sets RLIMIT_DATA to the private writable memory this process maps now (VmData, the quantity the
// limit counts: under AddressSanitizer it includes the shadow's terabytes) plus kOverheadBytes.
void limit_data_from_now() {
  std::ifstream status("/proc/self/status");
  std::string line;
  uint64_t kib = 0;
  while (std::getline(status, line))
    if (line.rfind("VmData:", 0) == 0) kib = std::strtoull(line.c_str() + 7, nullptr, 10);
  rlimit limit{};
  if (kib == 0 || ::getrlimit(RLIMIT_DATA, &limit) != 0) return;
  const uint64_t wanted = kib * 1024 + kOverheadBytes;
  if (limit.rlim_max != RLIM_INFINITY && wanted > limit.rlim_max) return;  // a tighter one holds
  limit.rlim_cur = wanted;
  ::setrlimit(RLIMIT_DATA, &limit);
}

// A checking process's answer to a request.
enum Answer : char {
  kReadToTheEnd = 0,
  kCremaError = 1,  // then the message
  kOutOfMemory = 2,
  kOtherError = 3,  // then the exception's what()
};

bool send_all(int fd, const void* data, size_t size) {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t n = ::send(fd, p, size, MSG_NOSIGNAL);  // a dead peer is an error, not SIGPIPE
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    size -= size_t(n);
  }
  return true;
}

bool receive_all(int fd, void* data, size_t size) {
  char* p = static_cast<char*>(data);
  while (size > 0) {
    const ssize_t n = ::recv(fd, p, size, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    size -= size_t(n);
  }
  return true;
}

bool send_string(int fd, const std::string& s) {
  const uint64_t size = s.size();
  return send_all(fd, &size, sizeof size) && send_all(fd, s.data(), s.size());
}

// A request: the read's address, the number of args, then this process's working directory (a
// relative path means what it means here, though this process may have changed directory since
// the fork), the path and the args.
bool send_request(int fd, CheckedRead read, const std::string& path,
                  const std::vector<std::string>& args) {
  const auto address = reinterpret_cast<uintptr_t>(read);
  const uint64_t count = args.size();
  std::error_code ec;
  const std::string cwd = std::filesystem::current_path(ec).string();
  if (!send_all(fd, &address, sizeof address) || !send_all(fd, &count, sizeof count) ||
      !send_string(fd, cwd) || !send_string(fd, path))
    return false;
  for (const std::string& arg : args)
    if (!send_string(fd, arg)) return false;
  return true;
}

bool receive_string(int fd, std::string* s) {
  uint64_t size = 0;
  if (!receive_all(fd, &size, sizeof size)) return false;
  s->resize(size);
  return receive_all(fd, s->data(), size);
}

// The checking process: answers each request once its read has ended, normally or by an
// exception (an Answer, then the message where it has one). A crash ends it without an answer.
[[noreturn]] void serve(int fd) {
  internal::become_checking_process();
  // A crash must end the process by its signal, not run a handler the parent installed; nor a
  // sanitizer's death callback (a fuzzer's would report this process's death as its own).
  for (const int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) std::signal(sig, SIG_DFL);
  if (__sanitizer_set_death_callback) __sanitizer_set_death_callback(nullptr);
  for (;;) {
    pollfd ready{fd, POLLIN, 0};
    // _exit, never exit: no exit handlers, no flush of the stdio buffers copied from the parent.
    if (::poll(&ready, 1, kIdleSeconds * 1000) <= 0) ::_exit(0);
    uintptr_t address = 0;
    uint64_t count = 0;
    std::string cwd, path;
    if (!receive_all(fd, &address, sizeof address) || !receive_all(fd, &count, sizeof count) ||
        !receive_string(fd, &cwd) || !receive_string(fd, &path))
      ::_exit(0);  // the parent closed its end
    if (!cwd.empty() && ::chdir(cwd.c_str()) != 0) ::_exit(0);
    std::vector<std::string> args(count);
    for (std::string& arg : args)
      if (!receive_string(fd, &arg)) ::_exit(0);
    limit_data_from_now();
    Answer answer = kReadToTheEnd;
    std::string message;
    try {
      reinterpret_cast<CheckedRead>(address)(path, args);
    } catch (const Error& e) {
      answer = kCremaError;
      message = e.what();
    } catch (const std::bad_alloc&) {
      answer = kOutOfMemory;
    } catch (const std::exception& e) {
      answer = kOtherError;
      message = e.what();
    } catch (...) {
      answer = kOtherError;
      message = "an exception of unknown type";
    }
    const char code = answer;
    if (!send_all(fd, &code, 1) || (answer != kReadToTheEnd && !send_string(fd, message)))
      ::_exit(0);
  }
}

struct Checker {
  pid_t pid = -1;
  int fd = -1;
  pid_t owner = -1;  // the process that forked it: a fork of that one needs its own
  int served = 0;    // requests the process has answered

  void start(const std::string& path) {
    int fds[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0)
      fail(path, ": cannot start a process to check the HDF5 file: ", std::strerror(errno));
    const pid_t child = ::fork();
    if (child < 0) {
      const int err = errno;
      ::close(fds[0]);
      ::close(fds[1]);
      fail(path, ": cannot start a process to check the HDF5 file: ", std::strerror(err));
    }
    if (child == 0) {
      ::close(fds[0]);
      serve(fds[1]);
    }
    ::close(fds[1]);
    pid = child;
    fd = fds[0];
    owner = ::getpid();
    served = 0;
  }

  // Closes this end and waits for the process: its wait status, or -1 if none can be had.
  int stop() {
    ::close(fd);
    int status = -1;
    if (owner == ::getpid())
      while (::waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) {
          status = -1;
          break;
        }
    pid = fd = -1;
    return status;
  }

  // Whether the checking process answered; its answer in *answer and *message. If it died: its
  // wait status in *status, and in *suspect whether the death may not be path's (the process had
  // served earlier files, whose damage it may carry, or ended cleanly, idle as the request came).
  bool check(const std::string& path, CheckedRead read, const std::vector<std::string>& args,
             Answer* answer, std::string* message, int* status, bool* suspect) {
    // A fork of its owner needs its own; one that served many has what libhdf5 leaked there.
    if (pid >= 0 && (owner != ::getpid() || served >= kMaxServed)) stop();
    if (pid < 0) start(path);
    char code = kReadToTheEnd;
    if (send_request(fd, read, path, args) && receive_all(fd, &code, 1) &&
        (code == kReadToTheEnd || receive_string(fd, message))) {
      ++served;
      *answer = Answer(code);
      return true;
    }
    const bool was_serving = served > 0;
    *status = stop();
    *suspect = was_serving || (WIFEXITED(*status) && WEXITSTATUS(*status) == 0);
    return false;
  }
};

}  // namespace

void check_in_child(const std::string& path, const char* kind, CheckedRead read,
                    const std::vector<std::string>& args) {
  if (internal::is_checking_process()) return;
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return;  // the read itself reports a missing file
  // The name and the file it names: this process may change directory between reads.
  std::string key = std::string(kind) + "\n" + path + "\n" + std::to_string(st.st_dev) + ":" +
                    std::to_string(st.st_ino) + "\n" + std::to_string(st.st_size) + "\n" +
                    std::to_string(st.st_mtim.tv_sec) + "." + std::to_string(st.st_mtim.tv_nsec);
  for (const std::string& arg : args) key += "\n" + arg;
  static std::set<std::string> read_cleanly;
  static Checker checker;
  const internal::ApiLock lock;
  if (read_cleanly.count(key)) return;
  if (read_cleanly.size() >= 4096) read_cleanly.clear();  // bounded, for long-lived processes
  // A death that may not be this file's is checked again by a new process.
  Answer answer = kReadToTheEnd;
  std::string message;
  int status = -1;
  bool suspect = false;
  if (!checker.check(path, read, args, &answer, &message, &status, &suspect) &&
      (!suspect || !checker.check(path, read, args, &answer, &message, &status, &suspect))) {
    if (status >= 0 && WIFSIGNALED(status))
      fail(path, ": damaged HDF5 file: libhdf5 crashed reading it as ", kind, " (",
           strsignal(WTERMSIG(status)), ")");
    fail(path, ": damaged HDF5 file: reading it as ", kind, " stopped the process",
         status >= 0 && WIFEXITED(status)
             ? " (exit status " + std::to_string(WEXITSTATUS(status)) + ")"
             : std::string());
  }
  if (answer == kCremaError) throw Error(message);
  if (answer == kOutOfMemory)
    fail(path, ": damaged HDF5 file: reading it as ", kind, " needs more than ",
         kOverheadBytes >> 20, " MiB of memory beyond its data");
  if (answer == kOtherError) fail(path, ": reading it as ", kind, " failed: ", message);
  read_cleanly.insert(key);
}

#else  // no HDF5

void check_in_child(const std::string&, const char*, CheckedRead, const std::vector<std::string>&) {
}

#endif

}  // namespace crema::hdf5
