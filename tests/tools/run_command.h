// Running a command line from a test: its exit status and everything it printed (stdout and
// stderr together), with the last line apart, where the tools put their one-line errors.
#pragma once

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <string>

namespace crema::test {

struct CommandResult {
  int status = -1;  // the exit status; 128 + the signal's number when a signal ended it
  std::string output;
  std::string last_line;
};

inline CommandResult run_command(const std::string& command) {
  const std::string cmd = command + " 2>&1";
  CommandResult r;
  FILE* pipe = popen(cmd.c_str(), "r");
  if (!pipe) return r;
  std::array<char, 4096> buf{};
  while (fgets(buf.data(), int(buf.size()), pipe)) r.output += buf.data();
  const int raw = pclose(pipe);
  r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : 128 + WTERMSIG(raw);
  std::string trimmed = r.output;
  while (!trimmed.empty() && trimmed.back() == '\n') trimmed.pop_back();
  const size_t nl = trimmed.rfind('\n');
  r.last_line = trimmed.substr(nl == std::string::npos ? 0 : nl + 1);
  return r;
}

}  // namespace crema::test
