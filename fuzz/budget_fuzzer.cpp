// --budget as users type it. parseBudget either returns a byte count a plan
// can hold (at least one byte, at most what int64 holds) or throws one line of
// acprof::Error, and so does checkBareBudget (here against the peak as the
// bytes before the step); neither reads past the text, overflows or crashes. Each
// string is tried against profiled peaks from none to the largest a profile
// may carry, since percentages scale with it.
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>

#include "acprof/budget.h"
#include "fuzz_checks.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  for (const int64_t peak_bytes : {int64_t{0}, int64_t{1}, int64_t{6442450944}, std::numeric_limits<int64_t>::max()}) {
    try {
      const int64_t bytes = acprof::parseBudget(text, peak_bytes);
      acprof::fuzz::require(bytes >= 1, "a budget below one byte was accepted");
      acprof::checkBareBudget(text, peak_bytes);
    } catch (const acprof::Error& error) {
      acprof::fuzz::checkOneLineError(error);
    }
  }
  return 0;
}
