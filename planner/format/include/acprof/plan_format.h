// The plan format: plan.json, what the planner decided and what it predicts.
//
// Owned by the planner, read by the rewriter and viz. Torch-free and versioned
// like the profile format. A plan is a list of segments: contiguous ranges of
// top-level nodes of the inlined forward graph, each of which the rewriter
// turns into one acprof::checkpoint call whose internal tensors are not kept
// for backward but recomputed from the segment's inputs.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "acprof/profile_format.h"

namespace acprof {

inline constexpr int kPlanSchemaVersion = 2;

struct SegmentCut {
  int first_node = 0;  // inclusive, forward node ids of the profile
  int last_node = 0;   // inclusive
  // The boundary as acprof/cut_rules.h draws it; the rewriter cuts only this one.
  std::vector<std::string> input_values;     // checkpoint inputs: read inside, made outside
  std::vector<std::string> output_values;    // made inside, read after last_node
  std::vector<std::string> replayed_inputs;  // inputs written in place inside, snapshotted by the checkpoint
  // Tensor outputs that needed no grad in the profiled run although the graph
  // cannot tell (a mask new_zeros made from an input that needs grad): the
  // rewriter passes them on without autograd history, as the original had
  // none, so nothing after the segment differentiates towards them.
  std::vector<std::string> outputs_without_grad;
  int64_t kept_state_bytes = 0;              // snapshots + generator state the checkpoint keeps until its backward
  int recompute_step = -1;                   // the profile step before which the recompute runs, -1 if never
  std::vector<int> dropped_tensors;        // profile tensor ids not kept for backward
  int64_t dropped_bytes = 0;               // sum of the dropped tensors' bytes
  double recompute_time_us = 0;            // forward time of the segment's nodes
};

// One point of the predicted memory timeline: the peak inside a step of the
// profile, or inside a recompute that the plan adds before that step.
struct TimelinePoint {
  int step = 0;               // step index of the profile
  bool recompute = false;     // true: the recompute of a segment that runs before `step`
  int64_t peak_bytes = 0;
};

// One point of the trade-off between predicted peak and extra time
// ('acprof plan --sweep'): the solver's plan at one budget, or a fixed
// strategy marked for comparison.
struct FrontierPoint {
  std::string label;           // the solver's name | none | chen (sqrt(n) segments) | per-block (one segment per container child)
  int64_t budget_bytes = 0;    // the budget the solver was given; 0 for none and the fixed strategies
  int64_t peak_bytes = 0;      // predicted
  double extra_time_us = 0;    // predicted
  int segment_count = 0;
};

struct Plan {
  std::string model_sha256;   // the profile's; the rewriter refuses any other model
  std::string model_path;     // the profile's, the default model for 'acprof rewrite'
  std::string profile_path;
  std::string solver;         // the strategy that made the plan: mu-two | refined | optimal | chen | none
                              // (auto names the one it ran, refined)
  std::string solver_report;  // how a searching solver ended (proven optimal or not), "" for the others
  std::string budget_text;    // as the user typed it
  int64_t budget_bytes = 0;
  int64_t baseline_peak_bytes = 0;   // simulated with no recompute (equals the profile's peak)
  int64_t predicted_peak_bytes = 0;
  int predicted_peak_step = -1;
  // Live bytes per category at the predicted peak: what is left that recompute
  // did not remove (absent in plans written before acprof recorded it).
  std::optional<CategoryBytes> predicted_peak_breakdown;
  double baseline_iteration_time_us = 0;
  double extra_time_us = 0;
  std::vector<SegmentCut> segments;
  std::vector<TimelinePoint> predicted_timeline;
  // With --sweep: no recompute and the Pareto points of the solver asked for
  // (auto by default), each labelled by the strategy that made it, then chen
  // and per-block.
  std::vector<FrontierPoint> frontier;
};

std::string planToJson(const Plan& plan);
Plan planFromJson(const std::string& json_text, const std::string& source_name);  // throws FormatError
// A plan names nodes, steps and tensors of the profile it was made from; read
// with that profile, it must be for the same model and every index must point
// into it, so that viz and the rewrite's report can index without checking.
// Throws FormatError naming what does not match and the fix.
void checkPlanMatchesProfile(const Plan& plan, const Profile& profile);
Plan readPlanFile(const std::string& path);
void writePlanFile(const Plan& plan, const std::string& path);  // whole or nothing

}  // namespace acprof
