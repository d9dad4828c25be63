#include "acprof/peak_composition.h"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

namespace acprof {
namespace {

PeakContributor contributorOf(const Profile& profile, const RecomputeDecision& decision, const PeakHolder& holder) {
  PeakContributor out;
  out.bytes = holder.bytes;
  if (holder.tensor < 0) {
    // What a segment's checkpoint keeps or its recompute makes: named by the
    // segment's first node, where the rewritten model's checkpoint sits.
    const NodeRange& range = decision[holder.segment];
    out.op = fmt::format("checkpoint of nodes {}-{}", range.first_node, range.last_node);
    out.scope = profile.nodes[range.first_node].scope;
    return out;
  }
  const TensorRecord& tensor = profile.tensors[holder.tensor];
  out.shape = tensor.shape;
  if (tensor.alloc_step < 0) {
    out.op = tensor.name.empty() ? "before the iteration" : tensor.name;
    return out;
  }
  const Step& step = profile.steps[tensor.alloc_step];
  out.op = step.op;
  out.scope = step.scope;
  out.step = step.index;
  out.phase = phaseName(step.phase);
  return out;
}

// "4.88 KiB ConvolutionBackward0 in layer1 at backward step 7"
std::string contributorText(const PeakContributor& c) {
  std::string text = formatBytes(c.bytes) + " " + c.op;
  if (!c.scope.empty()) text += " in " + c.scope;
  if (c.step >= 0) text += fmt::format(" at {} step {}", c.phase, c.step);
  return text;
}

}  // namespace

PeakComposition peakComposition(const Simulator& simulator, const RecomputeDecision& decision) {
  const Profile& profile = simulator.profile();
  const SimulationResult result = simulator.simulate(decision);
  PeakComposition out;
  out.peak_bytes = result.peak_bytes;
  out.peak_step = result.peak_step;
  out.peak_in_recompute = result.peak_in_recompute;
  std::vector<PeakShare> by_category(kCategoryCount);
  for (int c = 0; c < kCategoryCount; ++c) by_category[c].category = static_cast<Category>(c);
  // Holders come largest first, so each share's first few are its largest.
  for (const PeakHolder& holder : simulator.peakHolders(decision)) {
    PeakShare& share = by_category[static_cast<int>(holder.category)];
    share.bytes += holder.bytes;
    if (static_cast<int>(share.largest.size()) < kLargestPerShare)
      share.largest.push_back(contributorOf(profile, decision, holder));
    else
      ++share.more;
  }
  for (PeakShare& share : by_category)
    if (share.bytes > 0) out.shares.push_back(std::move(share));
  std::stable_sort(out.shares.begin(), out.shares.end(),
                   [](const PeakShare& a, const PeakShare& b) { return a.bytes > b.bytes; });
  return out;
}

std::string peakCompositionTable(const PeakComposition& composition, const Profile& profile) {
  std::string where = "before the iteration";
  if (composition.peak_step >= 0 && composition.peak_step < static_cast<int>(profile.steps.size())) {
    const Step& step = profile.steps[composition.peak_step];
    where = fmt::format("{} {} step {} ({})", composition.peak_in_recompute ? "in the recompute before" : "at",
                        phaseName(step.phase), step.index, step.op);
  }
  std::string text = fmt::format("the floor, {}, {}, is made of\n", formatBytes(composition.peak_bytes), where);
  for (const PeakShare& share : composition.shares) {
    CategoryBytes only{};
    only[static_cast<int>(share.category)] = share.bytes;
    std::vector<std::string> notes;
    if (unremovableBytes(only) == share.bytes) notes.push_back("no recompute removes it");
    // Weights, optimizer state, inputs and a wrapper's communication buffers
    // are the model's and the user's own: their total says all. The rest is
    // named by what made it.
    const bool named = share.category != Category::Weight && share.category != Category::OptimizerState &&
                       share.category != Category::Input && share.category != Category::Communication;
    if (named && !share.largest.empty()) {
      std::string largest = "largest " + contributorText(share.largest.front());
      const int more = static_cast<int>(share.largest.size()) - 1 + share.more;
      if (more > 0) largest += fmt::format(", {} more", more);
      notes.push_back(std::move(largest));
    }
    text += fmt::format("  {:<16}{:>10}  {}\n", categoryName(share.category), formatBytes(share.bytes),
                        fmt::join(notes, "; "));
  }
  return text;
}

void to_json(nlohmann::json& j, const PeakComposition& composition) {
  nlohmann::json shares = nlohmann::json::array();
  for (const PeakShare& share : composition.shares) {
    nlohmann::json largest = nlohmann::json::array();
    for (const PeakContributor& c : share.largest)
      largest.push_back({{"bytes", c.bytes}, {"op", c.op}, {"scope", c.scope}, {"step", c.step},
                         {"phase", c.phase}, {"shape", c.shape}});
    shares.push_back({{"category", categoryName(share.category)}, {"bytes", share.bytes},
                      {"largest", std::move(largest)}, {"more", share.more}});
  }
  j = {{"peak_bytes", composition.peak_bytes}, {"peak_step", composition.peak_step},
       {"peak_in_recompute", composition.peak_in_recompute}, {"shares", std::move(shares)}};
}

}  // namespace acprof
