// How often a piece of text occurs in a larger one: the viz tests count elements
// of the SVG and HTML they render.
#pragma once

#include <string>

namespace acprof::testing {

inline int countOf(const std::string& text, const std::string& needle) {
  int count = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++count;
  return count;
}

}  // namespace acprof::testing
