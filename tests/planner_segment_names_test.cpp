// Segments are named for people by module path and op (segment_names.h), the
// same in the terminal and in the reports.
#include <gtest/gtest.h>

#include "acprof/segment_names.h"
#include "profile_builder.h"

namespace acprof {
namespace {

using testing::ProfileBuilder;

SegmentCut range(int first, int last) {
  SegmentCut cut;
  cut.first_node = first;
  cut.last_node = last;
  return cut;
}

TEST(SegmentNames, TheCommonModulePathThenTheFirstAndLastScopeAndTheDistinctOps) {
  ProfileBuilder b;
  b.node("aten::linear", {"x"}, {"q"}, 1.0, "encoder.0.self_attn.q_proj");
  b.node("prim::Constant", {}, {"c"}, 1.0, "encoder.0.self_attn");
  b.node("aten::softmax", {"q"}, {"p"}, 1.0, "encoder.0.self_attn");
  b.node("aten::linear", {"p"}, {"o"}, 1.0, "encoder.0.self_attn.out_proj");
  b.node("prim::If", {"o"}, {"d"}, 1.0, "encoder.0.dropout1");
  Profile profile = b.finish();
  profile.nodes[1].role = CutRole::Duplicable;  // a constant is copied in, not one of the segment's ops
  EXPECT_EQ(segmentDescription(profile, range(0, 4)),
            "encoder.0: self_attn.q_proj → dropout1, 4 ops: linear, softmax, if");
  EXPECT_EQ(segmentDescription(profile, range(2, 2)), "encoder.0.self_attn, 1 op: softmax");
  // A scope inside the other's is their common path.
  EXPECT_EQ(segmentDescription(profile, range(2, 3)), "encoder.0.self_attn, 2 ops: softmax, linear");
}

TEST(SegmentNames, ManyKindsAreCutAfterFourAndUnscopedNodesNamedByOpsAlone) {
  ProfileBuilder b;
  for (const char* kind : {"aten::conv2d", "aten::batch_norm", "aten::relu", "aten::max_pool2d", "aten::add"})
    b.node(kind, {"x"}, {"y"}, 1.0, "");
  Profile profile = b.finish();
  for (ForwardNode& node : profile.nodes) node.scope.clear();
  EXPECT_EQ(segmentDescription(profile, range(0, 4)), "5 ops: conv2d, batch_norm, relu, max_pool2d, …");
}

}  // namespace
}  // namespace acprof
