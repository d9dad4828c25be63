// Summaries of repeated measurements (torch-free, header-only): the profile's
// step times and the rewrite's timed pairs are medians, which one slow
// iteration on a shared machine does not move.
#pragma once

#include <algorithm>
#include <vector>

namespace acprof {

// The middle value, or the mean of the two middle ones; 0 for no values.
inline double median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const size_t mid = values.size() / 2;
  return values.size() % 2 ? values[mid] : 0.5 * (values[mid - 1] + values[mid]);
}

}  // namespace acprof
