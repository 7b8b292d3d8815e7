#include "primitives/common/choice_log.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>

namespace crema::prim {

bool choice_log_on() {
  static const bool on = [] {
    const char* v = std::getenv("CREMA_VERBOSE");
    return v && std::strcmp(v, "1") == 0;
  }();
  return on;
}

void log_choice_once(const std::string& line) {
  thread_local std::set<std::string> logged;
  if (logged.insert(line).second) std::fprintf(stderr, "%s\n", line.c_str());
}

}  // namespace crema::prim
