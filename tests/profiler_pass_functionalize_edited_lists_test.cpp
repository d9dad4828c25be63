// functionalizeEditedLists (profiler/graph/src/passes/functionalize_edited_lists.h).
#include "passes/functionalize_edited_lists.h"

#include <gtest/gtest.h>

#include "graph_pass_test_support.h"

namespace acprof {
namespace {

using testing::countNodes;
using testing::inlinedGraphOf;
using testing::runGraph;

// DenseNet's features.append(layer(features)) and a U-Net's skips.pop(): each reader gets a fresh
// list of what the list holds at that point, a pop is the element it removes, and the edits go.
TEST(FunctionalizeEditedLists, AppendsAndAPopBecomeFreshListsOfWhatTheListHolds) {
  torch::jit::Module module("acprof_test.EditedList");
  module.define(R"(
    def forward(self, x):
        features = [x]
        features.append(torch.cat(features, 0) * 2)
        features.append(torch.cat(features, 0) * 3)
        last = features.pop(-1)
        return torch.cat(features, 0).sum() + last.sum()
  )");
  auto graph = inlinedGraphOf(module);
  const at::Tensor x = at::randn({2, 3});
  const at::Tensor before = runGraph(graph, module, {x});
  ASSERT_EQ(countNodes(graph->block(), torch::jit::aten::append), 2);
  functionalizeEditedLists(graph);
  EXPECT_EQ(countNodes(graph->block(), torch::jit::aten::append), 0) << *graph;
  EXPECT_EQ(countNodes(graph->block(), torch::jit::aten::pop), 0) << *graph;
  // One list construct per reader of the list (three cats), each of the elements it held then.
  std::vector<size_t> sizes;
  for (torch::jit::Node* node : graph->nodes())
    if (node->kind() == torch::jit::aten::cat) sizes.push_back(node->input(0)->node()->inputs().size());
  EXPECT_EQ(sizes, (std::vector<size_t>{1, 2, 2})) << *graph;
  EXPECT_TRUE(at::equal(runGraph(graph, module, {x}), before));
}

// A list that leaves the graph (returned) can be observed, so it is left as it is.
TEST(FunctionalizeEditedLists, AListTheGraphReturnsKeepsItsEdits) {
  torch::jit::Module module("acprof_test.ReturnedList");
  module.define(R"(
    def forward(self, x):
        features = [x]
        features.append(x * 2)
        return features
  )");
  auto graph = inlinedGraphOf(module);
  functionalizeEditedLists(graph);
  EXPECT_EQ(countNodes(graph->block(), torch::jit::aten::append), 1) << *graph;
}

}  // namespace
}  // namespace acprof
