// The one legality model on hand-written graph facts: what may be a segment,
// which rule refuses the rest, and what crosses the boundary.
#include "acprof/cut_rules.h"

#include <gtest/gtest.h>

namespace acprof {
namespace {

// Graph facts written by hand, one node at a time, as the legality library
// would give them.
class FactsBuilder {
 public:
  int input(const std::string& name) { return value(name, -1, "Tensor", ValueEntry::Input); }
  // A node making one value; `reads` are value ids.
  int node(const std::string& kind, CutRole role, std::vector<int> reads, const std::string& output,
           const std::string& type = "Tensor", ValueEntry entry = ValueEntry::Input) {
    ForwardNode n;
    n.id = static_cast<int>(nodes_.size());
    n.kind = kind;
    n.role = role;
    n.reads = std::move(reads);
    n.outputs = {output};
    nodes_.push_back(n);
    const int id = value(output, n.id, type, entry);
    if (kind == "prim::GetAttr") values_[id].requires_grad = false;  // a buffer
    return id;
  }
  void writes(int node, int value) { nodes_[node].writes.push_back(value); }
  void returns(int value) { graph_outputs_.push_back(value); }
  int producerOf(int value) const { return values_[value].producer_node; }
  CutRules rules() const { return CutRules(nodes_, values_, graph_outputs_); }
  std::vector<std::string> names(const std::vector<int>& ids) const {
    std::vector<std::string> out;
    for (int id : ids) out.push_back(values_[id].name);
    return out;
  }

 private:
  int value(const std::string& name, int producer, const std::string& type, ValueEntry entry) {
    GraphValue v;
    v.id = static_cast<int>(values_.size());
    v.name = name;
    v.producer_node = producer;
    v.type = type;
    v.entry = entry;
    v.is_tensor = type == "Tensor";
    v.can_leave = type == "Tensor" || type == "int";
    v.requires_grad = v.is_tensor && producer >= 0;
    values_.push_back(v);
    return v.id;
  }

  std::vector<ForwardNode> nodes_;
  std::vector<GraphValue> values_;
  std::vector<int> graph_outputs_;
};

// CutRules::GrowingRange gives problem()'s answer for every range of a graph.
void expectGrowingRangesAgree(const CutRules& rules, int node_count) {
  for (int first = 0; first < node_count; ++first) {
    CutRules::GrowingRange range(rules, first);
    for (int last = first; last < node_count; ++last) {
      range.extendTo(last);
      EXPECT_EQ(range.legal(), rules.problem(first, last).empty())
          << "[" << first << ", " << last << "]: " << rules.problem(first, last);
    }
  }
}

// y = cat([relu(x), sigmoid(x)]); the list construct is Duplicable, so cat
// reads the list's elements, and a segment that ends at the construct returns
// the elements, not the list.
TEST(CutRules, ListElementsCrossTheBoundaryNotTheList) {
  FactsBuilder f;
  const int x = f.input("x");
  const int a = f.node("aten::relu", CutRole::Compute, {x}, "a");
  const int b = f.node("aten::sigmoid", CutRole::Compute, {x}, "b");
  f.node("prim::ListConstruct", CutRole::Duplicable, {a, b}, "list", "List[Tensor]", ValueEntry::Clone);
  const int y = f.node("aten::cat", CutRole::Compute, {a, b}, "y");
  f.returns(y);
  const CutRules rules = f.rules();
  EXPECT_EQ(rules.problem(0, 2), "");
  EXPECT_EQ(f.names(rules.boundary(0, 2).outputs), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(rules.problem(2, 3), "");
  EXPECT_EQ(f.names(rules.boundary(2, 3).inputs), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(f.names(rules.boundary(0, 3).inputs), std::vector<std::string>{"x"});
  EXPECT_EQ(f.names(rules.boundary(0, 3).outputs), std::vector<std::string>{"y"});
  EXPECT_NE(rules.problem(2, 2).find("[no-computation]"), std::string::npos);
  expectGrowingRangesAgree(rules, 4);
}

// RAFT's `if fmap1.shape != fmap2.shape: raise ValueError(...)`: a branch that
// makes nothing any later node reads. A checkpoint of it would return nothing,
// which the rewriter cannot make; the plan must not ask for one.
TEST(CutRules, ARangeThatMakesNothingReadLaterIsRefused) {
  FactsBuilder f;
  const int x = f.input("x");
  const int differs = f.node("aten::ne", CutRole::Compute, {x}, "differs", "bool");
  f.node("prim::If", CutRole::Compute, {differs}, "unread");
  const int y = f.node("aten::relu", CutRole::Compute, {x}, "y");
  f.returns(y);
  const CutRules rules = f.rules();
  EXPECT_EQ(rules.problem(0, 1), "[no-output] [0, 1] makes nothing that a later node or the graph's return reads");
  EXPECT_NE(rules.problem(1, 1).find("[no-output]"), std::string::npos) << rules.problem(1, 1);
  EXPECT_EQ(rules.problem(1, 2), "");
  EXPECT_EQ(rules.problem(0, 2), "");
  EXPECT_EQ(f.names(rules.boundary(0, 2).outputs), std::vector<std::string>{"y"});
  expectGrowingRangesAgree(rules, 3);
}

// chunks = split(h); u = chunks[0]: a list made by an op cannot cross.
TEST(CutRules, ListsMadeByOpsCannotCross) {
  FactsBuilder f;
  const int x = f.input("x");
  const int h = f.node("aten::linear", CutRole::Compute, {x}, "h");
  const int chunks = f.node("aten::split", CutRole::Compute, {h}, "chunks", "List[Tensor]", ValueEntry::Blocked);
  const int u = f.node("prim::ListUnpack", CutRole::Compute, {chunks}, "u");
  f.returns(u);
  const CutRules rules = f.rules();
  EXPECT_NE(rules.problem(0, 1).find("[output-type] node 1 (aten::split) makes %chunks of type List[Tensor]"),
            std::string::npos)
      << rules.problem(0, 1);
  EXPECT_NE(rules.problem(2, 2).find("[input-type] node 2 (prim::ListUnpack) reads %chunks"), std::string::npos)
      << rules.problem(2, 2);
  EXPECT_EQ(rules.problem(1, 2), "");
  EXPECT_EQ(f.names(rules.boundary(1, 2).inputs), std::vector<std::string>{"h"});
  expectGrowingRangesAgree(rules, 3);
}

// A buffer (no grad) written inside is replayed from a snapshot; an activation
// (grad) written inside, or an input written after the range, is refused.
TEST(CutRules, WritesToOutsideMemoryOnlyForTensorsWithoutGrad) {
  FactsBuilder f;
  const int x = f.input("x");
  const int stat = f.node("prim::GetAttr", CutRole::Duplicable, {}, "running_mean");
  const int h = f.node("aten::linear", CutRole::Compute, {x}, "h");
  const int bn = f.node("aten::batch_norm", CutRole::Compute, {h, stat}, "bn");
  f.writes(f.producerOf(bn), stat);
  const int relu = f.node("aten::relu_", CutRole::Compute, {h}, "r");
  f.writes(f.producerOf(relu), h);
  f.returns(bn);
  f.returns(relu);
  const CutRules rules = f.rules();
  EXPECT_EQ(rules.problem(1, 3), "");
  EXPECT_EQ(f.names(rules.boundary(2, 2).replayed_inputs), std::vector<std::string>{"running_mean"});
  EXPECT_NE(rules.problem(3, 3).find("[write-outside] node 3 (aten::relu_) writes in place to %h"), std::string::npos)
      << rules.problem(3, 3);
  EXPECT_NE(rules.problem(2, 2).find("[input-written-later] node 2 (aten::batch_norm) reads %h"), std::string::npos)
      << rules.problem(2, 2);
  expectGrowingRangesAgree(rules, 4);
}

TEST(CutRules, BarriersNameTheirReason) {
  FactsBuilder f;
  const int x = f.input("x");
  const int h = f.node("aten::linear", CutRole::Compute, {x}, "h");
  f.node("prim::SetAttr", CutRole::Barrier, {h}, "unused");
  const CutRules rules = f.rules();
  EXPECT_NE(rules.problem(0, 1).find("[barrier] node 1 (prim::SetAttr)"), std::string::npos) << rules.problem(0, 1);
  EXPECT_NE(rules.problem(0, 5).find("[range]"), std::string::npos);
  expectGrowingRangesAgree(rules, 2);
}

}  // namespace
}  // namespace acprof
