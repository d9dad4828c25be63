#include <algorithm>
#include <cmath>

#include "acprof/solver.h"
#include "memory_rules.h"
#include "profile_index.h"

namespace acprof {
namespace {

// Activation bytes each node's step leaves for backward: what a segment boundary balances.
std::vector<int64_t> activationBytesPerNode(const ProfileIndex& index) {
  std::vector<int64_t> bytes(index.node_count, 0);
  for (const TensorRecord& t : index.profile.tensors)
    if (t.category == Category::Activation && t.producer_node >= 0) bytes[t.producer_node] += t.bytes;
  return bytes;
}

}  // namespace

int activationProducerCount(const Simulator& simulator) {
  const std::vector<int64_t> activation_bytes = activationBytesPerNode(simulator.index());
  return static_cast<int>(std::count_if(activation_bytes.begin(), activation_bytes.end(), [](int64_t b) { return b > 0; }));
}

int mostEvenSegments(const Simulator& simulator) {
  const int producers = activationProducerCount(simulator);
  return std::min(producers, 2 * static_cast<int>(std::ceil(std::sqrt(static_cast<double>(producers)))));
}

SolverResult solveChen(const Simulator& simulator, int64_t budget_bytes) {
  const SolverResult none{{}, simulator.baseline(), {}, "chen"};
  if (none.simulation.peak_bytes <= budget_bytes) return none;
  const int producers = activationProducerCount(simulator);
  if (producers == 0) return none;
  return segmentEvenly(simulator, std::max(1, static_cast<int>(std::lround(std::sqrt(static_cast<double>(producers))))));
}

SolverResult segmentEvenly(const Simulator& simulator, int segment_count) {
  const ProfileIndex& index = simulator.index();
  SolverResult result;
  const std::vector<int64_t> activation_bytes = activationBytesPerNode(index);
  int64_t total_bytes = 0;
  for (int64_t b : activation_bytes) total_bytes += b;
  const int64_t bytes_per_segment = std::max<int64_t>(1, (total_bytes + segment_count - 1) / segment_count);

  // Walk the forward nodes, closing a segment when it holds its share of bytes;
  // a node that cannot join the open segment closes it, and starts the next one
  // if it can be a segment's first node at all. The open segment's legality
  // grows with it (CutRules::GrowingRange): asking the rules of every prefix
  // anew made this walk quadratic, 2.6 s at 10k nodes for the 141 segment
  // counts mu-two's fallback tries. A closed range none of whose nodes has a
  // backward is no segment: it would recompute and free nothing, and the
  // refinement that starts from this plan only moves what it is given (on
  // lraspp_mobilenet_v3_large scripted, six such ranges after the decoder's
  // last backward; the rewritten archive of one, __isnot__ of two constants,
  // did not load back).
  const CutRules& rules = index.rules;
  RecomputeDecision decision;
  int open_first = -1;
  int64_t open_bytes = 0;
  CutRules::GrowingRange open_range(rules, 0);
  auto close = [&](int last, bool legal) {
    if (open_first >= 0 && last >= open_first && legal && segmentSpan(index, {open_first, last}).has_backward)
      decision.push_back({open_first, last});
    open_first = -1;
    open_bytes = 0;
  };
  for (int n = 0; n < index.node_count; ++n) {
    if (open_first >= 0) {
      const bool legal_before = open_range.legal();
      open_range.extendTo(n);
      if (!open_range.legal()) close(n - 1, legal_before);
    }
    if (open_first < 0) {
      if (!rules.problem(n, n).empty() && index.profile.nodes[n].forward_step >= 0) continue;
      if (index.profile.nodes[n].role == CutRole::Barrier) continue;
      open_first = n;
      open_range = CutRules::GrowingRange(rules, n);
      open_range.extendTo(n);
    }
    open_bytes += activation_bytes[n];
    if (open_bytes >= bytes_per_segment) close(n, open_range.legal());
  }
  if (open_first >= 0) close(index.node_count - 1, open_range.legal());
  result.decision = std::move(decision);
  result.simulation = simulator.simulate(result.decision);
  return result;
}

}  // namespace acprof
