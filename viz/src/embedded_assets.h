// Files compiled into the binary by viz/cmake/embed_assets.cmake.
#pragma once

#include <string_view>

namespace acprof::viz::assets {

extern const std::string_view kUplotJs;       // node_modules/uplot/dist/uPlot.iife.min.js
extern const std::string_view kUplotCss;      // node_modules/uplot/dist/uPlot.min.css
extern const std::string_view kUplotLicense;  // node_modules/uplot/LICENSE
extern const std::string_view kReportJs;      // viz/assets/report.js
extern const std::string_view kReportCss;     // viz/assets/report.css

}  // namespace acprof::viz::assets
