// foldDictAttributeLookups (profiler/graph/src/passes/fold_dict_attribute_lookups.h).
#include "passes/fold_dict_attribute_lookups.h"

#include <gtest/gtest.h>

#include "graph_pass_test_support.h"

namespace acprof {
namespace {

using testing::countNodes;
using testing::inlinedGraphOf;
using testing::runGraph;

torch::jit::Module moduleLookingUp(const std::string& key) {
  torch::jit::Module module("acprof_test.ReturnLayers");
  c10::Dict<std::string, std::string> names;
  names.insert("layer1", "out");
  module.register_attribute("names", c10::DictType::create(c10::StringType::get(), c10::StringType::get()),
                            c10::IValue(names));
  module.define(R"(
    def forward(self, x):
        y = x
        if ")" + key + R"(" in self.names:
            y = x * 2
        return y
  )");
  return module;
}

// torchvision's IntermediateLayerGetter: `key in d` on a dict attribute the graph only looks up
// folds to its value, and the branch on it to the block it takes.
TEST(FoldDictAttributeLookups, AKeyInALookUpOnlyDictFoldsAndItsBranchIsInlined) {
  for (const std::string key : {"layer1", "layer2"}) {
    torch::jit::Module module = moduleLookingUp(key);
    auto graph = inlinedGraphOf(module);
    const at::Tensor x = at::randn({4});
    const at::Tensor before = runGraph(graph, module, {x});
    ASSERT_EQ(countNodes(graph->block(), torch::jit::prim::If), 1);
    foldDictAttributeLookups(*graph, module);
    EXPECT_EQ(countNodes(graph->block(), torch::jit::prim::If), 0) << key << *graph;
    EXPECT_EQ(countNodes(graph->block(), torch::jit::aten::__contains__), 0) << key << *graph;
    EXPECT_EQ(countNodes(graph->block(), torch::jit::aten::mul), key == "layer1" ? 1 : 0) << key << *graph;
    EXPECT_TRUE(at::equal(runGraph(graph, module, {x}), before)) << key;
  }
}

}  // namespace
}  // namespace acprof
