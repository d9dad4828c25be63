// foldConstantIndexReads (profiler/graph/src/passes/fold_constant_index_reads.h).
#include "passes/fold_constant_index_reads.h"

#include <gtest/gtest.h>

#include "graph_pass_test_support.h"

namespace acprof {
namespace {

using testing::countNodes;
using testing::inlinedGraphOf;
using testing::runGraph;

// hs[1] and hs[-2] of a list nothing writes are its elements: the adds read b and a, and the
// list's other tensor is no longer one of their reads.
TEST(FoldConstantIndexReads, AReadAtAConstantIndexOfAnUnwrittenListIsTheElement) {
  torch::jit::Module module("acprof_test.ListIndex");
  module.define(R"(
    def forward(self, x):
        a = x * 2
        b = x * 3
        hs = [a, b]
        return hs[1] + hs[-2]
  )");
  auto graph = inlinedGraphOf(module);
  const at::Tensor x = at::randn({4});
  const at::Tensor before = runGraph(graph, module, {x});
  ASSERT_EQ(countNodes(graph->block(), torch::jit::aten::__getitem__), 2);
  foldConstantIndexReads(graph);
  EXPECT_EQ(countNodes(graph->block(), torch::jit::aten::__getitem__), 0) << *graph;
  torch::jit::Node* add = nullptr;
  for (torch::jit::Node* node : graph->nodes())
    if (node->kind() == torch::jit::aten::add) add = node;
  ASSERT_NE(add, nullptr);
  EXPECT_EQ(add->input(0)->node()->kind(), torch::jit::aten::mul) << *graph;
  EXPECT_EQ(add->input(1)->node()->kind(), torch::jit::aten::mul) << *graph;
  EXPECT_TRUE(at::equal(runGraph(graph, module, {x}), before));
}

// A list that is written (appended to) between the read and its construction keeps its read.
TEST(FoldConstantIndexReads, AReadOfAListThatIsWrittenStays) {
  torch::jit::Module module("acprof_test.WrittenList");
  module.define(R"(
    def forward(self, x):
        hs = [x * 2]
        hs.insert(0, x * 3)
        return hs[0] + 1
  )");
  auto graph = inlinedGraphOf(module);
  foldConstantIndexReads(graph);
  EXPECT_EQ(countNodes(graph->block(), torch::jit::aten::__getitem__), 1) << *graph;
}

}  // namespace
}  // namespace acprof
