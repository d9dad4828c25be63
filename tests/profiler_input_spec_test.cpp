#include "acprof/input_spec.h"

#include <gtest/gtest.h>

namespace acprof {
namespace {

TEST(InputSpec, ParsesDtypeShapeAndRange) {
  const InputSpec image = parseInputSpec("float32[32,3,224,224]");
  EXPECT_EQ(image.dtype, "float32");
  EXPECT_EQ(image.shape, (std::vector<int64_t>{32, 3, 224, 224}));
  EXPECT_FALSE(image.range.has_value());
  const InputSpec tokens = parseInputSpec("int64[8, 512]:0..50257");
  EXPECT_EQ(tokens.shape, (std::vector<int64_t>{8, 512}));
  ASSERT_TRUE(tokens.range.has_value());
  EXPECT_EQ(tokens.range->first, 0);
  EXPECT_EQ(tokens.range->second, 50257);
  EXPECT_TRUE(parseInputSpec("float32[]").shape.empty());  // a scalar
}

TEST(InputSpec, RejectsMalformedSpecsWithAnExample) {
  for (const char* bad : {"float32", "float32[3,x]", "complex[3]", "float32[3]:0..1", "int64[4]:5..2",
                          "int64[4]:7", "float32[0,3]", "float32[3]junk", "float32[-2]"}) {
    try {
      parseInputSpec(bad);
      ADD_FAILURE() << bad << " was accepted";
    } catch (const InputSpecError& e) {
      const std::string message = e.what();
      EXPECT_NE(message.find(bad), std::string::npos) << message;
      EXPECT_NE(message.find("float32[32,3,224,224]"), std::string::npos) << message;
      EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    }
  }
}

}  // namespace
}  // namespace acprof
