#include <cmath>

#include "acprof/solver.h"
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

SolverResult solveChen(const Simulator& simulator, int64_t budget_bytes) {
  const ProfileIndex& index = simulator.index();
  SolverResult result;
  result.simulation = simulator.simulate(result.decision);
  if (result.simulation.peak_bytes <= budget_bytes) return result;

  const std::vector<int64_t> activation_bytes = activationBytesPerNode(index);
  int producers = 0;
  int64_t total_bytes = 0;
  for (int64_t b : activation_bytes) {
    producers += b > 0 ? 1 : 0;
    total_bytes += b;
  }
  if (producers == 0) return result;
  const int segment_count = std::max(1, static_cast<int>(std::lround(std::sqrt(static_cast<double>(producers)))));
  const int64_t bytes_per_segment = (total_bytes + segment_count - 1) / segment_count;

  // Walk the forward nodes, closing a segment when it holds its share of bytes;
  // a node that cannot join the open segment closes it, and starts the next one
  // if it can be a segment's first node at all.
  RecomputeDecision decision;
  int open_first = -1;
  int64_t open_bytes = 0;
  auto close = [&](int last) {
    if (open_first >= 0 && last >= open_first && simulator.segmentProblem({open_first, last}).empty())
      decision.push_back({open_first, last});
    open_first = -1;
    open_bytes = 0;
  };
  for (int n = 0; n < index.node_count; ++n) {
    if (open_first >= 0 && !simulator.segmentProblem({open_first, n}).empty()) close(n - 1);
    if (open_first < 0) {
      if (!simulator.segmentProblem({n, n}).empty() && index.profile.nodes[n].forward_step >= 0) continue;
      if (!index.profile.nodes[n].cuttable) continue;
      open_first = n;
    }
    open_bytes += activation_bytes[n];
    if (open_bytes >= bytes_per_segment) close(n);
  }
  close(index.node_count - 1);
  result.decision = std::move(decision);
  result.simulation = simulator.simulate(result.decision);
  return result;
}

}  // namespace acprof
