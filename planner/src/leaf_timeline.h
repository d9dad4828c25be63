// The row of leaves every memory rule places intervals on (docs/memory-model.md,
// [leaf-timeline]): four leaves per event of the profile.
#pragma once

#include <cstdint>

namespace acprof {

inline int returnLeaf(int event) { return 4 * event; }
inline int blockLeaf(int event) { return 4 * event + 1; }
inline int gapLeaf(int event) { return 4 * event + 2; }
inline int eventLeaf(int event) { return 4 * event + 3; }
inline int leafCount(int event_count) { return 4 * event_count + 3; }

struct LeafInterval {
  int64_t bytes = 0;
  int category = 0;
  int begin_leaf = 0;  // inclusive
  int end_leaf = 0;    // exclusive
  // Who holds it, for explaining a peak (Simulator::peakHolders): a profile
  // tensor, or else the decision's segment whose checkpoint keeps or makes it.
  int tensor = -1;
  int segment = -1;
};

}  // namespace acprof
