// The optional views that 'acprof profile' writes beside the profile.
#include "profile_views.h"

#include "acprof/files.h"
#include "acprof/viz.h"

namespace acprof::cli {

void writeViews(const Profile& profile, const std::string& html_path, const std::string& trace_path) {
  if (!html_path.empty()) writeFileAtomically(html_path, renderTimelineHtml(profile));
  if (!trace_path.empty()) writeFileAtomically(trace_path, renderPerfettoTrace(profile));
}

}  // namespace acprof::cli
