// What every acprof fuzz target asserts about a rejected input: the reader
// threw acprof::Error (anything else escapes to libFuzzer as a crash) whose
// message is the one line the CLI prints ("acprof: error: ..."). A message
// that spans lines breaks that promise, so it aborts like a crash would.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "acprof/error.h"

namespace acprof::fuzz {

inline void checkOneLineError(const Error& error) {
  const char* message = error.what();
  if (std::strlen(message) == 0 || std::strpbrk(message, "\n\r") != nullptr) {
    std::fprintf(stderr, "acprof error message is not one line: [%s]\n", message);
    std::abort();
  }
}

// Aborts with `what` when a property of accepted input does not hold.
inline void require(bool holds, const char* what) {
  if (!holds) {
    std::fprintf(stderr, "property broken: %s\n", what);
    std::abort();
  }
}

}  // namespace acprof::fuzz
