// The exact solver: every segment set, searched depth first with the peak
// tracker (segment_set_search.h), pruned by extra time once a plan fits.
// Exponential in the number of compute nodes: it is the ruler the greedy is
// measured against on small graphs, and on large ones it stops at its time
// limit and says so.
#include <algorithm>
#include <chrono>
#include <fmt/format.h>

#include "acprof/solver.h"
#include "peak_tracker.h"
#include "profile_index.h"
#include "segment_set_search.h"

namespace acprof {
namespace {

using Clock = SegmentSetSearch::Clock;

// The peak no decision can go below: static tensors and tensors made outside
// the forward graph (gradients, loss, optimizer temporaries). The memory
// rules (docs/memory-model.md) only ever lengthen the latter (a checkpoint holds the gradients it
// received), and a recompute copy of a forward tensor adds to them, so their
// live bytes under no recompute are below any decision's at every leaf.
int64_t peakLowerBound(const ProfileIndex& index) {
  const int E = index.event_count;
  std::vector<int64_t> delta(leafCount(E) + 1, 0);
  for (const TensorRecord& t : index.profile.tensors) {
    if (t.producer_node >= 0) continue;
    const int begin = t.alloc_event < 0 ? 0 : eventLeaf(t.alloc_event);
    const int end = t.free_event >= E ? leafCount(E) : eventLeaf(t.free_event);
    delta[begin] += t.bytes;
    delta[end] -= t.bytes;
  }
  int64_t live = 0, most = 0;
  for (int leaf = 0; leaf < leafCount(E); ++leaf) most = std::max(most, live += delta[leaf]);
  return most;
}

}  // namespace

SolverResult solveOptimal(const Simulator& simulator, int64_t budget_bytes, double time_limit_s) {
  const Clock::time_point start = Clock::now();
  // The refined plan is the first incumbent: the search then only looks for better ones.
  const SolverResult incumbent = solveRefined(simulator, budget_bytes);
  UsableSegments usable(simulator, SegmentChoice::EveryEarlierFree);
  SegmentSetSearch search(simulator, budget_bytes, incumbent.decision, usable);
  search.stopAt(start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(time_limit_s)));
  const bool complete = search.improveWindow(0, search.computeNodeCount());
  SolverResult result;
  result.decision = search.decision();
  result.simulation = simulator.simulate(result.decision);
  result.search.searched = true;
  result.search.proven_optimal = complete;
  result.search.decisions_evaluated = search.plansJudged();
  result.search.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  result.search.peak_lower_bound_bytes = peakLowerBound(simulator.index());
  return result;
}

std::string searchReportText(const SearchReport& report, int64_t peak_bytes) {
  if (!report.searched) return "";
  if (report.proven_optimal)
    return fmt::format("optimal: every segment set searched ({} plans in {:.2f} s)", report.decisions_evaluated,
                       report.seconds);
  const double gap = peak_bytes > 0 ? 100.0 * static_cast<double>(peak_bytes - report.peak_lower_bound_bytes) /
                                          static_cast<double>(peak_bytes)
                                    : 0.0;
  return fmt::format(
      "not proven optimal: stopped at the time limit after {} plans in {:.2f} s; no plan can peak below {} "
      "({} B, {:.1f} % under this one); raise --time-limit to search longer",
      report.decisions_evaluated, report.seconds, formatBytes(report.peak_lower_bound_bytes),
      report.peak_lower_bound_bytes, gap);
}

}  // namespace acprof
