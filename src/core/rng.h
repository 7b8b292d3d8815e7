// The framework's random generator, as Caffe's: one generator per thread, seeded from
// SolverParameter.random_seed (or from entropy when no seed is given), used by fillers and data
// shuffling. Dropout draws from the primitives' counter-based generator instead (Handle seed).
#pragma once

#include <cstdint>
#include <random>
#include <string>

namespace crema {

using Rng = std::mt19937_64;

// The calling thread's generator.
Rng& thread_rng();
// Reseeds the calling thread's generator; a negative seed draws one from std::random_device.
void seed_thread_rng(int64_t seed);

// A generator's whole state as text (the standard's stream form), and back: what snapshots keep
// so that a resumed run draws the same numbers. random_from_text throws crema::Error, naming
// what, when the text is not such a state.
std::string random_to_text(const Rng& rng);
Rng random_from_text(const std::string& text, const std::string& what);

}  // namespace crema
