// splitBranches (profiler/graph/src/passes/split_branches.h).
#include "passes/split_branches.h"

#include <gtest/gtest.h>

#include "graph_pass_test_support.h"

namespace acprof {
namespace {

using testing::countNodes;
using testing::inlinedGraphOf;
using testing::runGraph;

// An early return leaves the training path inside one branch: it becomes one branch on the same
// condition per tensor it makes, and the graph computes what it did on either side.
TEST(SplitBranches, ABranchWhoseOtherSideMakesNoTensorBecomesOneBranchPerTensor) {
  torch::jit::Module module("acprof_test.EarlyReturn");
  module.define(R"(
    def forward(self, x, early: bool):
        if early:
            out = x
        else:
            a = torch.relu(x)
            b = a * 2
            out = b + 1
        return out
  )");
  auto graph = inlinedGraphOf(module);
  const at::Tensor x = at::randn({4});
  const at::Tensor taken = runGraph(graph, module, {x, false}), early = runGraph(graph, module, {x, true});
  ASSERT_EQ(countNodes(graph->block(), torch::jit::prim::If, false), 1);
  splitBranches(*graph);
  EXPECT_GE(countNodes(graph->block(), torch::jit::prim::If, false), 3) << *graph;
  EXPECT_TRUE(at::equal(runGraph(graph, module, {x, false}), taken));
  EXPECT_TRUE(at::equal(runGraph(graph, module, {x, true}), early));
}

// Both sides compute (a ShuffleNet block's stride test): splitting would give the planner one
// side's pieces that never run, so the branch stays whole.
TEST(SplitBranches, ABranchWhoseSidesBothComputeStaysWhole) {
  torch::jit::Module module("acprof_test.TwoSided");
  module.define(R"(
    def forward(self, x, wide: bool):
        if wide:
            out = torch.relu(x) * 2
        else:
            out = torch.tanh(x) * 3
        return out
  )");
  auto graph = inlinedGraphOf(module);
  splitBranches(*graph);
  EXPECT_EQ(countNodes(graph->block(), torch::jit::prim::If, false), 1) << *graph;
}

}  // namespace
}  // namespace acprof
