// Internal: the implementation tables of the primitives whose kernels are chosen per call
// (pooling, softmax, LRN; convolution has its own, with workspaces and timed find: conv_impl.h).
// A row is one algorithm on one device: a support rule that says why it cannot run a call
// (nullptr when it can; no rule: it runs every call), a preference rule that says why kAuto
// passes it over although it could (a measured loss to a later row; ignored when the row is
// forced; no rule: never), and its launch. A table lists every device's rows, each device's in
// kAuto's order; a backend file defines its rows, so a new kernel is one file plus one row.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "primitives/common/choice_log.h"
#include "primitives/handle.h"
#include "primitives/types.h"

namespace crema::prim {

template <typename Args, typename Algo>
struct ImplRow {
  Algo algo;
  Device device;
  const char* (*unsupported)(const Args& a);
  const char* (*slower)(const Args& a);
  void (*run)(Handle& h, const Args& a);
};

// An algorithm enum's names: {{Algo::kAuto, "auto"}, ...}, and the two lookups.
template <typename Algo, size_t N>
const char* name_in(const std::pair<Algo, const char*> (&names)[N], Algo a) {
  for (const auto& [algo, name] : names)
    if (algo == a) return name;
  return "unknown";
}

template <typename Algo, size_t N>
Algo algo_in(const std::pair<Algo, const char*> (&names)[N], const std::string& name,
             const char* op) {
  for (const auto& [algo, n] : names)
    if (name == n) return algo;
  throw PrimError(std::string(op) + ": unknown algorithm '" + name + "'");
}

template <typename Row, size_t N>
auto table_algos(const Row* const (&table)[N], Device d) {
  std::vector<decltype(Row::algo)> algos;
  for (const Row* row : table)
    if (row->device == d) algos.push_back(row->algo);
  return algos;
}

template <typename Row, size_t N, typename Algo>
const Row* table_row(const Row* const (&table)[N], Device d, Algo algo) {
  for (const Row* row : table)
    if (row->device == d && row->algo == algo) return row;
  return nullptr;
}

// Why a row cannot run a, or nullptr.
template <typename Row, typename Args>
const char* unsupported_by(const Row& row, const Args& a) {
  return row.unsupported ? row.unsupported(a) : nullptr;
}

// Why `algo` cannot run a on device d, or nullptr (always for kAuto, which picks a row that can).
template <typename Row, size_t N, typename Algo, typename Args>
const char* forced_unsupported(const Row* const (&table)[N], Device d, Algo algo, const Args& a) {
  if (algo == Algo::kAuto) return nullptr;
  const Row* row = table_row(table, d, algo);
  if (!row) return d == Device::kCPU ? "not a cpu algorithm" : "not a cuda algorithm";
  return unsupported_by(*row, a);
}

// The row that runs a on h's device: `algo` itself unless it is Algo::kAuto, else the first row
// that runs a and is not slower on it. `op` names the call in errors and in the choice log
// (CREMA_VERBOSE=1), `name` the algorithms; key() describes a for the log and is called only
// when the log is on. Throws PrimError for a forced row that cannot run a, or when none can.
template <typename Row, size_t N, typename Algo, typename Args, typename Key>
const Row& choose_row(const Row* const (&table)[N], Handle& h, Algo algo, const Args& a,
                      const char* op, const char* (*name)(Algo), Key key) {
  const Device d = h.device();
  if (algo != Algo::kAuto) {
    if (const char* why = forced_unsupported(table, d, algo, a))
      throw PrimError(std::string(op) + ": algorithm " + name(algo) + " on " + device_name(d) +
                      ": " + why);
    return *table_row(table, d, algo);
  }
  std::string skipped;
  for (const Row* row : table) {
    if (row->device != d) continue;
    const char* why = unsupported_by(*row, a);
    if (!why && row->slower) why = row->slower(a);
    if (!why) {
      if (choice_log_on())
        log_choice_once(std::string("crema: ") + op + " " + device_name(d) + " " + key() + " -> " +
                        name(row->algo) + skipped);
      return *row;
    }
    if (choice_log_on()) skipped += std::string("; skipped ") + name(row->algo) + ": " + why;
  }
  throw PrimError(std::string(op) + ": no " + device_name(d) + " algorithm runs " + key());
}

}  // namespace crema::prim
