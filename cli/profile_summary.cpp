#include "profile_summary.h"

#include <fmt/format.h>

#include "acprof/segment_names.h"

namespace acprof::cli {

std::string threadsNote(const RunConfig& run) {
  if (run.intra_op_threads <= 0) return "";
  return fmt::format("measured at {} intra-op thread(s): train at the same count (OMP_NUM_THREADS={}), as CPU "
                     "workspaces grow with it",
                     run.intra_op_threads, run.intra_op_threads);
}

std::string profileSummaryText(const Profile& p) {
  std::string out;
  const PeakSummary& s = p.summary;
  const std::string where = s.peak_step >= 0 ? fmt::format("step {} ({}, {} {})", s.peak_step,
                                                           phaseName(p.steps[s.peak_step].phase),
                                                           p.steps[s.peak_step].op, p.steps[s.peak_step].scope)
                                             : "before the first step";
  out += fmt::format("peak {} at {}\n", formatBytes(s.peak_bytes), where);
  for (int c = 0; c < kCategoryCount; ++c)
    if (s.peak_breakdown[c] > 0)
      out += fmt::format("  {:<16} {:>12}\n", categoryName(static_cast<Category>(c)), formatBytes(s.peak_breakdown[c]));

  const std::vector<const TensorRecord*> activations = largestActivations(p, 10);
  if (!activations.empty()) out += "largest activations:\n";
  for (const TensorRecord* t : activations) {
    const ForwardNode* node = p.findNode(t->producer_node);
    out += fmt::format("  {:>12}  {:<24} {}\n", formatBytes(t->bytes), node ? node->kind : "?",
                       node && !node->scope.empty() ? node->scope : "(top level)");
  }
  const auto& times = s.phase_time_us;
  out += fmt::format("time: forward {:.2f} ms, loss {:.2f} ms, backward {:.2f} ms, optimizer {:.2f} ms\n",
                     times[static_cast<int>(Phase::Forward)] / 1000, times[static_cast<int>(Phase::Loss)] / 1000,
                     times[static_cast<int>(Phase::Backward)] / 1000, times[static_cast<int>(Phase::Optimizer)] / 1000);
  const std::string threads = threadsNote(p.meta.run);
  if (!threads.empty()) out += "threads: " + threads + "\n";
  const int64_t other = p.meta.other_executor_mode_peak_bytes;
  if (other >= 0) {
    const char* other_mode = p.meta.run.executor_optimize ? "off" : "on";
    if (other < s.peak_bytes)
      out += fmt::format("note: with --jit-optimize {} this model peaks at {} ({} less)\n", other_mode,
                         formatBytes(other), formatBytes(s.peak_bytes - other));
    else
      out += fmt::format("executor optimization {} would peak at {} (not less)\n", other_mode, formatBytes(other));
  }
  return out;
}

std::string planSegmentsText(const Profile& profile, const Plan& plan) {
  if (plan.segments.empty()) return "";
  std::string text = fmt::format("  {:>3}  {:<11}  {:>10}  {:>10}  {}\n", "#", "nodes", "saves", "recompute",
                                 "module path and ops");
  for (size_t i = 0; i < plan.segments.size(); ++i) {
    const SegmentCut& s = plan.segments[i];
    text += fmt::format("  {:>3}  {:<11}  {:>10}  {:>7.2f} ms  {}\n", i + 1,
                        fmt::format("{}-{}", s.first_node, s.last_node), formatBytes(s.dropped_bytes),
                        s.recompute_time_us / 1000.0, segmentDescription(profile, s));
  }
  return text;
}

}  // namespace acprof::cli
