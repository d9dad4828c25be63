// hoistAttributeReads (profiler/graph/src/passes/hoist_attribute_reads.h).
#include "passes/hoist_attribute_reads.h"

#include <gtest/gtest.h>

#include "graph_pass_test_support.h"

namespace acprof {
namespace {

using testing::countNodes;
using testing::inlinedGraphOf;
using testing::runGraph;

torch::jit::Node* getAttrNamed(torch::jit::Block* block, const std::string& name) {
  for (torch::jit::Node* node : block->nodes()) {
    if (node->kind() == torch::jit::prim::GetAttr && node->s(torch::jit::attr::name) == name) return node;
    for (torch::jit::Block* inner : node->blocks())
      if (torch::jit::Node* found = getAttrNamed(inner, name)) return found;
  }
  return nullptr;
}

// A layer's weight read inside `if self.norm_first:` moves before the branch, so the branch reads
// the tensor, not the module; a read of an attribute the graph assigns stays where it is.
TEST(HoistAttributeReads, AReadNoAssignmentChangesMovesBeforeItsTopLevelNode) {
  torch::jit::Module module("acprof_test.Branchy");
  module.register_parameter("w", at::randn({3, 3}), false);
  module.register_attribute("flag", c10::BoolType::get(), true);
  module.register_buffer("count", at::zeros({1}));
  module.define(R"(
    def forward(self, x):
        if self.flag:
            y = torch.mm(x, self.w)
            self.count = self.count + 1
        else:
            y = x
        return y
  )");
  auto graph = inlinedGraphOf(module);
  const at::Tensor x = at::randn({2, 3});
  const at::Tensor before = runGraph(graph, module, {x});
  ASSERT_NE(getAttrNamed(graph->block(), "w")->owningBlock(), graph->block());
  hoistAttributeReads(*graph);
  EXPECT_EQ(getAttrNamed(graph->block(), "w")->owningBlock(), graph->block()) << *graph;
  EXPECT_NE(getAttrNamed(graph->block(), "count")->owningBlock(), graph->block()) << *graph;
  EXPECT_TRUE(at::equal(runGraph(graph, module, {x}), before));
}

}  // namespace
}  // namespace acprof
