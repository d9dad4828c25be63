#include "downsample.h"

#include <algorithm>
#include <stdexcept>

namespace acprof::viz {

std::vector<int> peakPreservingSampleIndices(const std::vector<int64_t>& totals, int max_samples) {
  if (max_samples < 2) throw std::invalid_argument("downsampling needs at least 2 samples per chart");
  const int64_t n = static_cast<int64_t>(totals.size());
  std::vector<int> kept;
  if (n <= max_samples) {
    kept.resize(n);
    for (int64_t i = 0; i < n; ++i) kept[i] = static_cast<int>(i);
    return kept;
  }
  const int64_t buckets = max_samples / 2;
  kept.push_back(0);
  for (int64_t b = 0; b < buckets; ++b) {
    // Integer bucket edges cover [0, n) exactly, with sizes differing by at most one.
    const int64_t first = b * n / buckets, end = (b + 1) * n / buckets;
    if (first >= end) continue;
    int64_t max_at = first, min_at = first;
    for (int64_t i = first + 1; i < end; ++i) {
      if (totals[i] > totals[max_at]) max_at = i;
      if (totals[i] < totals[min_at]) min_at = i;
    }
    kept.push_back(static_cast<int>(std::min(max_at, min_at)));
    kept.push_back(static_cast<int>(std::max(max_at, min_at)));
  }
  // The global peak is the maximum of its own bucket, hence already kept; the
  // sort and dedupe only merge index 0 and buckets whose max and min coincide.
  std::sort(kept.begin(), kept.end());
  kept.erase(std::unique(kept.begin(), kept.end()), kept.end());
  return kept;
}

}  // namespace acprof::viz
