// Chen's even segments (solver_chen.cpp).
#include "acprof/solver.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "planner_test_profiles.h"

namespace acprof {
namespace {

using testing::chainProfile;
using testing::residualNetworkProfile;

// The chain of 4 above, then two nodes without backward that each leave 100 B
// alive to the end (an argmax of the output, and a copy of it): five nodes
// that produce activations. Chen's walk with five segments closes one at each;
// the last, [5, 5], has no backward: it would recompute and free nothing, and
// the refinement that starts from Chen's plan does not remove what it is given
// (a torchvision decoder's __isnot__ of two constants, checkpointed, did not
// load back). The walk leaves it out.
TEST(PlannerSolverChen, EvenSegmentsLeaveOutARangeWithNoBackward) {
  testing::ProfileBuilder b;
  b.addStatic(1000, Category::Weight);
  std::vector<int> a(4), g(4, -1);
  for (int i = 0; i < 4; ++i) {
    b.node("aten::linear", {i == 0 ? "x" : "a" + std::to_string(i - 1)}, {"a" + std::to_string(i)}, 1);
    a[i] = b.alloc(100);
    if (i > 0) b.readBy(a[i - 1], i);
  }
  b.setCategory(a[3], Category::Output);
  b.node("aten::argmax", {"a3"}, {"index"}, 1);
  const int index = b.alloc(100);
  b.readBy(a[3], 4);
  b.node("aten::clone", {"index"}, {"copy"}, 1);
  const int copy = b.alloc(100);
  b.readBy(index, 5);
  b.loss();
  for (int i = 3; i >= 0; --i) {
    b.backward(i);
    if (i > 0) g[i - 1] = b.alloc(100);
    if (g[i] >= 0) b.free(g[i]);
    b.free(a[i]);
  }
  b.free(index);
  b.free(copy);
  const Profile p = b.finish();
  const Simulator simulator(p);
  ASSERT_EQ(activationProducerCount(simulator), 5);
  const SolverResult even = segmentEvenly(simulator, 5);
  ASSERT_FALSE(even.decision.empty());
  for (const NodeRange& r : even.decision)
    EXPECT_TRUE(r.first_node <= 3) << "segment [" << r.first_node << ", " << r.last_node << "] has no backward";
}

}  // namespace
}  // namespace acprof
