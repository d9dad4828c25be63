#include "acprof/cut_rules.h"

#include <algorithm>
#include <unordered_set>

#include <fmt/format.h>

namespace acprof {

CutRules::CutRules(const std::vector<ForwardNode>& nodes, const std::vector<GraphValue>& values,
                   const std::vector<int>& graph_outputs)
    : nodes_(nodes), values_(values) {
  const int node_count = static_cast<int>(nodes.size());
  barrier_before_.assign(node_count + 1, 0);
  compute_before_.assign(node_count + 1, 0);
  last_reader_.assign(values.size(), -1);
  last_writer_.assign(values.size(), -1);
  outputs_of_node_.assign(node_count, {});
  for (const GraphValue& v : values)
    if (v.producer_node >= 0) outputs_of_node_[v.producer_node].push_back(v.id);
  for (int n = 0; n < node_count; ++n) {
    const ForwardNode& node = nodes[n];
    barrier_before_[n + 1] = barrier_before_[n] + (node.role == CutRole::Barrier ? 1 : 0);
    compute_before_[n + 1] = compute_before_[n] + (node.role == CutRole::Compute ? 1 : 0);
    // A Duplicable node's reads are already folded into its readers' reads.
    if (node.role != CutRole::Duplicable)
      for (int v : node.reads) last_reader_[v] = std::max(last_reader_[v], n);
    for (int v : node.writes) last_writer_[v] = std::max(last_writer_[v], n);
  }
  for (int v : graph_outputs) last_reader_[v] = node_count;
}

bool CutRules::madeInside(int value, int first_node, int last_node) const {
  const int producer = values_[value].producer_node;
  return producer >= first_node && producer <= last_node && nodes_[producer].role == CutRole::Compute;
}

std::string CutRules::describeNode(int node) const {
  const ForwardNode& n = nodes_[node];
  return fmt::format("node {} ({}{})", node, n.kind, n.scope.empty() ? "" : " in " + n.scope);
}

CutRules::Violation CutRules::firstViolation(int first, int last) const {
  if (barrier_before_[last + 1] != barrier_before_[first]) {
    for (int n = first; n <= last; ++n)
      if (nodes_[n].role == CutRole::Barrier) return {"barrier", n, -1};
  }
  if (compute_before_[last + 1] == compute_before_[first]) return {"no-computation", -1, -1};
  bool has_output = false;
  for (int n = first; n <= last; ++n) {
    const ForwardNode& node = nodes_[n];
    if (node.role != CutRole::Compute) continue;
    for (int v : node.reads) {
      if (madeInside(v, first, last)) continue;
      if (values_[v].entry == ValueEntry::Blocked) return {"input-type", n, v};
      if (last_writer_[v] > last) return {"input-written-later", n, v};
    }
    for (int v : node.writes) {
      if (madeInside(v, first, last)) continue;
      if (!values_[v].is_tensor || values_[v].requires_grad) return {"write-outside", n, v};
    }
    for (int v : outputs_of_node_[n]) {
      if (last_reader_[v] <= last) continue;
      if (!values_[v].can_leave) return {"output-type", n, v};
      has_output = true;
    }
  }
  if (!has_output) return {"no-output", -1, -1};
  return {};
}

std::string CutRules::explain(const Violation& violation, int first, int last) const {
  const std::string rule = violation.rule;
  const GraphValue* value = violation.value >= 0 ? &values_[violation.value] : nullptr;
  if (rule == "barrier")
    return fmt::format("[barrier] {} cannot be recomputed: {}", describeNode(violation.node),
                       nodes_[violation.node].barrier_reason);
  if (rule == "no-computation")
    return fmt::format("[no-computation] [{}, {}] holds only constants, attribute reads and list/tuple constructs",
                       first, last);
  if (rule == "no-output")
    return fmt::format("[no-output] [{}, {}] makes nothing that a later node or the graph's return reads", first,
                       last);
  if (rule == "input-type")
    return fmt::format("[input-type] {} reads %{} of type {}, made before the range, which cannot be passed into a "
                       "checkpoint",
                       describeNode(violation.node), value->name, value->type);
  if (rule == "input-written-later")
    return fmt::format("[input-written-later] {} reads %{}, which {} writes in place after the range; the "
                       "recompute would read the changed values",
                       describeNode(violation.node), value->name, describeNode(last_writer_[violation.value]));
  if (rule == "write-outside")
    return fmt::format("[write-outside] {} writes in place to %{} ({}{}), made before the range; its recompute "
                       "would write it twice and lose the write's gradient",
                       describeNode(violation.node), value->name, value->type,
                       value->requires_grad ? ", requires grad" : "");
  return fmt::format("[output-type] {} makes %{} of type {}, which is read after the range but cannot be returned "
                     "from a checkpoint",
                     describeNode(violation.node), value->name, value->type);
}

std::string CutRules::problem(int first, int last) const {
  const int node_count = static_cast<int>(nodes_.size());
  if (first < 0 || last < first || last >= node_count)
    return fmt::format("[range] [{}, {}] is not a range of the graph's {} nodes", first, last, node_count);
  const Violation violation = firstViolation(first, last);
  return violation.rule ? explain(violation, first, last) : "";
}

bool CutRules::allows(int first, int last) const {
  const int node_count = static_cast<int>(nodes_.size());
  return first >= 0 && first <= last && last < node_count && !firstViolation(first, last).rule;
}

bool CutRules::grownToLegal(int& first, int& last, int max_nodes) const {
  const int node_count = static_cast<int>(nodes_.size());
  if (first < 0 || last < first || last >= node_count) return false;
  while (last - first + 1 <= max_nodes) {
    const Violation violation = firstViolation(first, last);
    if (!violation.rule) return true;
    const std::string rule = violation.rule;
    const int producer = violation.value >= 0 ? values_[violation.value].producer_node : -1;
    if ((rule == "input-type" || rule == "write-outside") && producer >= 0 && producer < first) {
      first = producer;
    } else if (rule == "output-type" && last_reader_[violation.value] < node_count) {
      last = last_reader_[violation.value];
    } else if (rule == "input-written-later") {
      last = last_writer_[violation.value];
    } else {
      return false;
    }
  }
  return false;
}

// The rules of firstViolation, node by node. A node reads only values made
// before it, so whether a read is of a value made inside depends on the first
// node only; a write may also reach a value made later (an alias).
void CutRules::GrowingRange::extendTo(int last_node) {
  const CutRules& rules = *rules_;
  while (last_ < last_node) {
    const int n = ++last_;
    const ForwardNode& node = rules.nodes_[n];
    if (node.role == CutRole::Barrier) broken_ = true;
    if (node.role != CutRole::Compute) continue;
    has_compute_ = true;
    for (int v : node.reads) {
      if (rules.madeInside(v, first_, n)) continue;
      if (rules.values_[v].entry == ValueEntry::Blocked) broken_ = true;
      latest_input_writer_ = std::max(latest_input_writer_, rules.last_writer_[v]);
    }
    for (int v : node.writes) {
      const GraphValue& value = rules.values_[v];
      if (value.is_tensor && !value.requires_grad) continue;
      // An in-place write also writes the values that alias its target, some
      // made by later nodes (`add_` then `relu_`): inside once those join.
      const int producer = value.producer_node;
      if (producer > n && rules.nodes_[producer].role == CutRole::Compute)
        earliest_legal_last_ = std::max(earliest_legal_last_, producer);
      else if (!rules.madeInside(v, first_, n))
        broken_ = true;
    }
    for (int v : rules.outputs_of_node_[n]) {
      latest_output_reader_ = std::max(latest_output_reader_, rules.last_reader_[v]);
      if (!rules.values_[v].can_leave) latest_kept_output_reader_ = std::max(latest_kept_output_reader_, rules.last_reader_[v]);
    }
  }
}

bool CutRules::GrowingRange::legal() const {
  return !broken_ && has_compute_ && latest_input_writer_ <= last_ && latest_kept_output_reader_ <= last_ &&
         earliest_legal_last_ <= last_ && latest_output_reader_ > last_;
}

SegmentBoundary CutRules::boundary(int first, int last) const {
  SegmentBoundary boundary;
  std::unordered_set<int> inputs, written;
  for (int n = first; n <= last; ++n) {
    const ForwardNode& node = nodes_[n];
    if (node.role != CutRole::Compute) continue;
    for (int v : node.reads)
      if (!madeInside(v, first, last) && inputs.insert(v).second) boundary.inputs.push_back(v);
    for (int v : node.writes) written.insert(v);
    for (int v : outputs_of_node_[n])
      if (last_reader_[v] > last) boundary.outputs.push_back(v);
  }
  for (int v : boundary.inputs)
    if (written.count(v)) boundary.replayed_inputs.push_back(v);
  return boundary;
}

}  // namespace acprof
