// Internal: the log of the implementation tables' choices. Under CREMA_VERBOSE=1 (read once;
// crema --verbose sets it before the first primitive runs) a primitive that chooses among rows
// writes each choice, with the rows it passed over and why, to stderr: once per distinct line
// and thread, not at every call of every iteration.
#pragma once

#include <string>

namespace crema::prim {

bool choice_log_on();
// Callers build the line only when choice_log_on().
void log_choice_once(const std::string& line);

}  // namespace crema::prim
