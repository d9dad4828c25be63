// Peak-preserving downsampling of a memory timeline, so that very long
// timelines stay responsive in a browser and small in a trace.
#pragma once

#include <cstdint>
#include <vector>

namespace acprof::viz {

// Indices (ascending) of the samples of `totals` to keep. With at most
// `max_samples` values everything is kept. Otherwise the series is cut into
// max_samples / 2 equal buckets and each bucket keeps its maximum and its
// minimum (first occurrence of each), so every local peak and every dip that
// dominates a bucket survives, and the global peak (the first occurrence of
// the maximum) is kept exactly. Index 0 is always kept so a chart starts at
// the beginning. The result has at most max_samples + 1 indices.
std::vector<int> peakPreservingSampleIndices(const std::vector<int64_t>& totals, int max_samples);

}  // namespace acprof::viz
