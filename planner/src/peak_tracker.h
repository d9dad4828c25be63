// The peak under a decision that changes one segment at a time: what the
// greedy solvers ask after every trial. A max segment tree over the leaves of
// [leaf-timeline] (leaf_timeline.h) holds live bytes; changing a segment re-applies only the
// intervals of the tensors it produces or reads and its recompute block, so a
// trial costs O(segment size * log leaves) instead of a full replay.
#pragma once

#include <array>
#include <map>
#include <vector>

#include "memory_rules.h"

namespace acprof {

// Range add, global max with its leftmost leaf, point value.
class MaxSegmentTree {
 public:
  explicit MaxSegmentTree(const std::vector<int64_t>& leaf_values);
  void add(int begin, int end, int64_t delta) {  // [begin, end)
    addPending(begin, end, delta);
    updateMaxima();
  }
  // Many additions at once: the maxima (max, leftmostMaxLeaf, maxIn) are
  // right again after updateMaxima, which visits each ancestor of the changed
  // ranges once instead of once per range.
  void addPending(int begin, int end, int64_t delta);
  void updateMaxima();
  int64_t max() const { return max_[1]; }
  int64_t maxIn(int begin, int end) const;  // over [begin, end); the padding minimum if empty
  int leftmostMaxLeaf() const;
  int64_t valueAt(int leaf) const;
  // The sum over leaves of how far each rises above `threshold`; visits only
  // the subtrees that rise above it.
  int64_t excessAbove(int64_t threshold) const { return excessAbove(1, 0, threshold); }

 private:
  void markAncestors(int node);  // of a changed node, for updateMaxima
  int64_t maxIn(int node, int node_begin, int node_end, int begin, int end) const;
  int64_t excessAbove(int node, int64_t ancestors_add, int64_t threshold) const;
  int size_ = 1;
  std::vector<int64_t> max_;    // max of the subtree, including add_ of this node
  std::vector<int64_t> add_;    // pending addition to the whole subtree
  int leaf_level_ = 0;          // the leaves' depth: size_ is 2^leaf_level_
  std::vector<std::vector<int>> stale_by_level_;  // ancestors whose maximum updateMaxima recomputes
  std::vector<int> stale_stamp_;                   // == stamp_: already in stale_by_level_
  int stamp_ = 1;
};

class PeakTracker : public DecisionView {
 public:
  explicit PeakTracker(const ProfileIndex& index);  // starts from the empty decision
  // Not copied: segment_of_node_ points into segments_.
  PeakTracker(const PeakTracker&) = delete;
  PeakTracker& operator=(const PeakTracker&) = delete;

  int64_t peakBytes() const { return tree_.max(); }
  int peakLeaf() const { return tree_.leftmostMaxLeaf(); }
  int64_t liveBytesAt(int leaf) const { return tree_.valueAt(leaf); }
  int64_t peakBytesIn(int begin_leaf, int end_leaf) const { return tree_.maxIn(begin_leaf, end_leaf); }
  // Live bytes above `threshold`, summed over the leaves: how much of the
  // timeline stands near the peak, which a move may lower without lowering the peak.
  int64_t excessAbove(int64_t threshold) const { return tree_.excessAbove(threshold); }

  // Takes `removed` (segments of the current decision) out and puts `added` in.
  void replace(const std::vector<NodeRange>& removed, const std::vector<NodeRange>& added);
  // Puts back the decision before the last replace, from what that replace
  // changed: cheaper than the opposite replace, which works its tensors' intervals out again.
  void undoLastReplace();

  const std::map<int, SegmentTiming>& segments() const { return segments_; }
  RecomputeDecision decision() const;
  const SegmentTiming* segmentContaining(int node) const override {
    return node >= 0 && node < static_cast<int>(segment_of_node_.size()) ? segment_of_node_[node] : nullptr;
  }

  bool isDropped(int tensor) const { return dropped_[tensor]; }
  const LeafInterval& forwardLife(int tensor) const { return intervals_[tensor][interval_count_[tensor] - 1]; }

 private:
  struct TensorState {
    int tensor = 0;
    std::array<LeafInterval, 2> intervals;
    int interval_count = 0;
    char dropped = 0;
  };
  struct RangeAdd {
    int begin_leaf = 0;
    int end_leaf = 0;
    int64_t delta = 0;
  };
  struct SegmentState {
    SegmentTiming timing;
    RecomputeBlock block;
  };
  // What the last replace changed, for undoLastReplace.
  struct ReplaceLog {
    bool undoable = false;
    std::vector<NodeRange> added;
    std::vector<SegmentState> removed;
    std::vector<TensorState> tensors;  // as they were, where they changed
    std::vector<RangeAdd> tree_adds;
  };

  void addToTree(int begin_leaf, int end_leaf, int64_t delta);
  void applyTensor(int tensor, int sign);
  void moveIntervals(int tensor, const std::array<LeafInterval, 2>& now, int now_count);
  void applyBlock(const SegmentTiming& timing, const RecomputeBlock& block, int sign);
  void setSegmentOf(const NodeRange& range, const SegmentTiming* segment);

  const ProfileIndex& index_;
  std::map<int, SegmentTiming> segments_;    // by first node
  std::map<int, RecomputeBlock> blocks_;     // by the segment's first node
  std::vector<const SegmentTiming*> segment_of_node_;  // into segments_; null outside every segment
  std::vector<std::array<LeafInterval, 2>> intervals_;
  std::vector<int> interval_count_;
  std::vector<char> dropped_;
  std::vector<int> touched_stamp_;
  int stamp_ = 0;
  std::vector<int> touched_;
  ReplaceLog log_;
  MaxSegmentTree tree_;
};

}  // namespace acprof
