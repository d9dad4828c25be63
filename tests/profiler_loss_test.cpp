#include "acprof/loss.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <string>

#include "acprof/recorder.h"

namespace acprof {
namespace {

// The mean over positions of -log softmax(logits)[class], written out along
// the class dimension `class_dim`, so the test does not trust the code's choice.
at::Tensor meanNegativeLogLikelihood(const at::Tensor& logits, const at::Tensor& target, int64_t class_dim) {
  return -logits.log_softmax(class_dim).gather(class_dim, target.unsqueeze(class_dim)).mean();
}

TEST(CrossEntropyLoss, TakesTheLastDimensionAsClassesForOneTargetPerRow) {
  at::manual_seed(0);
  const at::Tensor logits = at::randn({2, 3, 5});
  const at::Tensor target = at::randint(0, 5, {2, 3}, at::kLong);
  const at::Tensor expected = meanNegativeLogLikelihood(logits, target, 2);
  EXPECT_TRUE(at::allclose(computeLoss(logits, "cross_entropy", target), expected));
  // A flat target with one class per row reads the same way.
  EXPECT_TRUE(at::allclose(computeLoss(logits, "cross_entropy", target.reshape({-1})), expected));
}

TEST(CrossEntropyLoss, TakesTheSecondDimensionAsClassesForADenseTarget) {
  // A segmentation model's [N, C, H, W] against [N, H, W], inside a dict output.
  at::manual_seed(0);
  const at::Tensor logits = at::randn({2, 4, 3, 5});
  const at::Tensor target = at::randint(0, 4, {2, 3, 5}, at::kLong);
  c10::Dict<std::string, at::Tensor> output;
  output.insert("out", logits);
  output.insert("aux", at::randn({2, 4, 3, 5}));
  const at::Tensor loss = computeLoss(c10::IValue(output), "cross_entropy", target);
  EXPECT_TRUE(at::allclose(loss, meanNegativeLogLikelihood(logits, target, 1)));
}

TEST(CrossEntropyLoss, RefusesATargetThatFitsNeitherDimensionNamingBoth) {
  const at::Tensor logits = at::randn({2, 4, 3, 5});
  try {
    computeLoss(logits, "cross_entropy", at::zeros({2, 7}, at::kLong));
    ADD_FAILURE() << "a [2,7] target was accepted for [2,4,3,5] logits";
  } catch (const RecordError& e) {
    const std::string message = e.what();
    for (const char* part : {"[2,7]", "[2,4,3,5]", "[2,4,3]", "[2,3,5]"})
      EXPECT_NE(message.find(part), std::string::npos) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  }
}

}  // namespace
}  // namespace acprof
