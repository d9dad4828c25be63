// Files compiled into the binary by viz/cmake/embed_assets.cmake.
#pragma once

#include <string_view>

namespace acprof::viz::assets {

// From Debian's libjs-dygraphs:
extern const std::string_view kDygraphJs;         // /usr/share/javascript/dygraphs/dygraph.min.js
extern const std::string_view kDygraphCss;        // /usr/share/javascript/dygraphs/dygraph.min.css
extern const std::string_view kDygraphCopyright;  // /usr/share/doc/libjs-dygraphs/copyright
// acprof's own:
extern const std::string_view kReportJs;   // viz/assets/report.js
extern const std::string_view kReportCss;  // viz/assets/report.css

}  // namespace acprof::viz::assets
