// check_in_child: every untrusted HDF5 file is read first by a checking process, forked from this
// one, so that a crash inside libhdf5 is an error naming the file instead of the end of crema.
//
// The checking process serves checks over a socket until it has been idle for kIdleSeconds, so
// that a run of checks (an HDF5Data list of files, a fuzzing campaign) forks once, not once per
// file: a fork copies the page tables of the whole process, and both processes then copy each
// page either writes. It shares the memory it was forked with until it exits; the idle limit
// bounds how long it keeps pages this process has since freed.
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <set>

#include "core/errors.h"
#include "core/hdf5_io.h"
#include "core/hdf5_lock.h"

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

}  // namespace internal

namespace {

constexpr int kIdleSeconds = 5;

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

// A request: the read's address, the number of args, then the path and the args.
bool send_request(int fd, CheckedRead read, const std::string& path,
                  const std::vector<std::string>& args) {
  const auto address = reinterpret_cast<uintptr_t>(read);
  const uint64_t count = args.size();
  if (!send_all(fd, &address, sizeof address) || !send_all(fd, &count, sizeof count) ||
      !send_string(fd, path))
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

// The checking process: answers each request with one byte once its read has ended, normally or
// by an exception (this process's own read reports that). A crash ends it without an answer.
[[noreturn]] void serve(int fd) {
  internal::become_checking_process();
  // A crash must end the process by its signal, not run a handler the parent installed.
  for (const int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) std::signal(sig, SIG_DFL);
  for (;;) {
    pollfd ready{fd, POLLIN, 0};
    // _exit, never exit: no exit handlers, no flush of the stdio buffers copied from the parent.
    if (::poll(&ready, 1, kIdleSeconds * 1000) <= 0) ::_exit(0);
    uintptr_t address = 0;
    uint64_t count = 0;
    std::string path;
    if (!receive_all(fd, &address, sizeof address) || !receive_all(fd, &count, sizeof count) ||
        !receive_string(fd, &path))
      ::_exit(0);  // the parent closed its end
    std::vector<std::string> args(count);
    for (std::string& arg : args)
      if (!receive_string(fd, &arg)) ::_exit(0);
    try {
      reinterpret_cast<CheckedRead>(address)(path, args);
    } catch (...) {
    }
    const char done = 0;
    if (!send_all(fd, &done, 1)) ::_exit(0);
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

  // Whether the checking process read path to the end. If it died: its wait status in *status,
  // and in *suspect whether the death may not be path's (the process had served earlier files,
  // whose damage it may carry, or ended cleanly, idle as the request came).
  bool check(const std::string& path, CheckedRead read, const std::vector<std::string>& args,
             int* status, bool* suspect) {
    if (pid >= 0 && owner != ::getpid()) stop();  // this process is a fork of its owner
    if (pid < 0) start(path);
    char done = 1;
    if (send_request(fd, read, path, args) && receive_all(fd, &done, 1)) {
      ++served;
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
  std::string key = std::string(kind) + "\n" + path + "\n" + std::to_string(st.st_size) + "\n" +
                    std::to_string(st.st_mtim.tv_sec) + "." + std::to_string(st.st_mtim.tv_nsec);
  for (const std::string& arg : args) key += "\n" + arg;
  static std::set<std::string> read_cleanly;
  static Checker checker;
  const internal::ApiLock lock;
  if (read_cleanly.count(key)) return;
  if (read_cleanly.size() >= 4096) read_cleanly.clear();  // bounded, for long-lived processes
  // A death that may not be this file's is checked again by a new process.
  int status = -1;
  bool suspect = false;
  if (!checker.check(path, read, args, &status, &suspect) &&
      (!suspect || !checker.check(path, read, args, &status, &suspect))) {
    if (status >= 0 && WIFSIGNALED(status))
      fail(path, ": damaged HDF5 file: libhdf5 crashed reading it as ", kind, " (",
           strsignal(WTERMSIG(status)), ")");
    fail(path, ": damaged HDF5 file: reading it as ", kind, " stopped the process",
         status >= 0 && WIFEXITED(status)
             ? " (exit status " + std::to_string(WEXITSTATUS(status)) + ")"
             : std::string());
  }
  read_cleanly.insert(key);
}

#else  // no HDF5

void check_in_child(const std::string&, const char*, CheckedRead, const std::vector<std::string>&) {
}

#endif

}  // namespace crema::hdf5
