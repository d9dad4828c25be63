// What every static SVG of viz starts with, and how it writes coordinates.
#pragma once

#include <string>

#include <fmt/format.h>

#include "acprof/profile_format.h"
#include "markup_escape.h"

namespace acprof::viz {

// Coordinates to a tenth of a pixel: finer is invisible and only grows the file.
inline std::string svgNumber(double v) { return fmt::format("{:.1f}", v); }

// The opening <svg> element on a white background and a bold title at
// (title_x, 22): "<heading>: <model path>", the path escaped.
inline std::string svgOpening(double width, double height, const std::string& heading, double title_x,
                              const Profile& profile) {
  std::string svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" "
      "font-family=\"Helvetica, Arial, sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" "
      "fill=\"#ffffff\"/>\n",
      width, height);
  const std::string title = profile.meta.model_path.empty() ? "profile" : profile.meta.model_path;
  svg += fmt::format("<text x=\"{}\" y=\"22\" font-size=\"15\" font-weight=\"bold\">{}: {}</text>\n",
                     svgNumber(title_x), heading, escapeMarkupText(title));
  return svg;
}

}  // namespace acprof::viz
