// The one legality model: which ranges of forward nodes may become a
// checkpoint segment, and what crosses the boundary of those that may.
//
// The facts it reads (each node's role, reads and writes; each value's entry,
// type and whether it needs grad) are computed once from the TorchScript graph
// by the legality library (profiler/graph, cut_facts.h) and carried in
// profile.json. The planner asks these rules before it forms a segment; the
// rewriter asks the same rules, over facts it computes from the same graph, and
// cuts only a boundary equal to the one the plan names. Torch-free.
//
// A range [first, last] may be a segment when (rule names in brackets):
//   [barrier]        none of its nodes is a Barrier;
//   [no-computation] at least one node is a Compute node;
//   [no-output]      a later node (or the graph's return) reads a value one of
//                    its Compute nodes makes: a checkpoint that returns nothing
//                    (a shape check that raises, say) is not one to make;
//   [input-type]     every value its Compute nodes read and it does not make can
//                    enter a checkpoint (a tensor or a scalar; list and tuple
//                    constructs are looked through, to their elements);
//   [output-type]    every value its Compute nodes make and a later node (or the
//                    graph's return) reads can leave a checkpoint;
//   [write-outside]  it writes in place only to memory made inside it, or to
//                    tensors that need no grad (module buffers such as running
//                    statistics), which the checkpoint snapshots before its
//                    forward so that the recompute writes to a copy of what
//                    forward saw;
//   [input-written-later] no node after it writes in place to one of its
//                    inputs: the recompute would read the changed values.
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include "acprof/profile_format.h"

namespace acprof {

// What crosses a segment's boundary (value ids of the profile's values).
struct SegmentBoundary {
  std::vector<int> inputs;           // checkpoint inputs, in the order the range first reads them
  std::vector<int> outputs;          // values made inside and read after the range, in graph order
  std::vector<int> replayed_inputs;  // inputs the range writes in place (snapshotted by the checkpoint)
};

class CutRules {
 public:
  // Keeps references: keep the vectors alive.
  CutRules(const std::vector<ForwardNode>& nodes, const std::vector<GraphValue>& values,
           const std::vector<int>& graph_outputs);

  // "" if [first, last] may be a segment; otherwise "[rule] what and why",
  // naming the node (id, kind, scope) or value that breaks the rule.
  std::string problem(int first_node, int last_node) const;
  // Whether problem() is "", without composing the explanation (a search
  // judges hundreds of thousands of ranges, most of them refused).
  bool allows(int first_node, int last_node) const;

  // The smallest range around [first, last] that the rules accept, found by
  // growing over what blocks it: back to the producer of a value that cannot
  // enter, forward to the last reader of a value that cannot leave or to the
  // node that writes an input later. Returns false if it reaches a barrier,
  // the graph's inputs or outputs, or `max_nodes` nodes.
  bool grownToLegal(int& first_node, int& last_node, int max_nodes) const;

  // The boundary of a range (meaningful when problem() is "").
  SegmentBoundary boundary(int first_node, int last_node) const;

  // Whether a value is made inside [first, last] (by one of its Compute nodes).
  bool madeInside(int value, int first_node, int last_node) const;

  // The last node that reads a value (node_count for the graph's return, -1 if none).
  int lastReader(int value) const { return last_reader_[value]; }

  // Whether [first, last] may be a segment while `last` grows one node at a
  // time from a fixed first node: the same answer as problem(first, last)
  // being "", at a cost per added node instead of per node of the range (a
  // walk that asks it of every prefix of a range is then linear, not
  // quadratic). Rules that depend on `first` only are settled as each node
  // joins; those that depend on `last` keep the furthest node they reach.
  class GrowingRange {
   public:
    GrowingRange(const CutRules& rules, int first_node)
        : rules_(&rules), first_(first_node), last_(first_node - 1) {}
    // Adds the nodes after the current last one, up to and including last_node.
    void extendTo(int last_node);
    bool legal() const;

   private:
    const CutRules* rules_;
    int first_;
    int last_;
    bool broken_ = false;  // a barrier, an input that cannot enter or a write outside: no later node mends it
    bool has_compute_ = false;
    int latest_input_writer_ = -1;        // the last node that writes in place to an input read so far
    int latest_kept_output_reader_ = -1;  // the last reader of an output made so far that cannot leave
    int latest_output_reader_ = -1;       // the last reader of any value made so far
    int earliest_legal_last_ = -1;        // the last maker of a later value written in place so far
  };

 private:
  std::string describeNode(int node) const;

  // The first rule a range breaks, with what it names; rule == nullptr if none.
  struct Violation {
    const char* rule = nullptr;
    int node = -1;   // the node that breaks it
    int value = -1;  // the value it is about
  };
  Violation firstViolation(int first_node, int last_node) const;
  std::string explain(const Violation& violation, int first_node, int last_node) const;

  const std::vector<ForwardNode>& nodes_;
  const std::vector<GraphValue>& values_;
  std::vector<int> barrier_before_;     // prefix counts of Barrier nodes
  std::vector<int> compute_before_;     // prefix counts of Compute nodes
  std::vector<int> last_reader_;        // per value
  std::vector<int> last_writer_;        // per value, -1 if never written
  std::vector<std::vector<int>> outputs_of_node_;  // value ids
};

// The CutRules of a profile's facts.
inline CutRules cutRulesOf(const Profile& profile) {
  return CutRules(profile.nodes, profile.values, profile.graph_outputs);
}

}  // namespace acprof
