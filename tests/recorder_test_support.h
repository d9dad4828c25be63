// Helpers shared by the tests that record profiles in-process (recorder, optimizer).
#pragma once

#include <cstdint>
#include <string>

#include "acprof/profile_format.h"
#include "acprof/recorder.h"
#include "test_support.h"

namespace acprof::testing {

// One measured iteration of an exported test model, in the default executor mode only.
inline Profile profileOf(const std::string& model, const std::string& optimizer = "none") {
  RecordOptions options;
  options.model_path = testModel(model);
  options.run.optimizer = optimizer;
  options.run.measured_iters = 1;
  return recordProfile(options);
}

// Bytes of every tensor of a category, whenever it lived.
inline int64_t bytesIn(const Profile& p, Category category) {
  int64_t total = 0;
  for (const TensorRecord& t : p.tensors)
    if (t.category == category) total += t.bytes;
  return total;
}

}  // namespace acprof::testing
