// The self-contained HTML pages: dygraphs, its licence, the report's script and
// style and the page data, all inline.
#include <stdexcept>
#include <string>

#include "acprof/viz.h"
#include "embedded_assets.h"
#include "markup_escape.h"
#include "report_data.h"

namespace acprof {
namespace {

// `static_section`: markup acprof generated itself (names in it escaped), shown under the charts.
std::string htmlPage(const nlohmann::json& data, const std::string& static_section = "") {
  using namespace viz::assets;
  // The licence travels as a comment in front of the code it covers; a "*/"
  // in it would end the comment early and break the page.
  if (kDygraphCopyright.find("*/") != std::string_view::npos)
    throw std::logic_error("the embedded dygraphs copyright file contains '*/'; embed it another way");
  std::string page;
  page.reserve(kDygraphJs.size() + kReportJs.size() + 4096);
  page += "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  page += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  page += "<meta name=\"generator\" content=\"acprof\">\n";
  page += "<title>acprof: " + viz::escapeMarkupText(data.value("title", "")) + "</title>\n";
  page += "<style>\n";
  page += kDygraphCss;
  page += "\n</style>\n<style>\n";
  page += kReportCss;
  page += "\n</style>\n</head>\n<body>\n";
  page += "<main id=\"acprof-report\"><noscript>This report draws its charts with JavaScript; "
          "open it in a browser with JavaScript enabled.</noscript></main>\n";
  page += static_section;
  page += "<script type=\"application/json\" id=\"acprof-data\">";
  page += viz::jsonForScriptElement(data);
  page += "</script>\n<script>\n/*! dygraphs, embedded by acprof. Copyright and licence (Debian's libjs-dygraphs):\n";
  page += kDygraphCopyright;
  page += "*/\n";
  page += kDygraphJs;
  page += "\n</script>\n<script>\n";
  page += kReportJs;
  page += "\n</script>\n</body>\n</html>\n";
  return page;
}

// A plan made with --sweep carries the peak/time trade-off: drawn as the same SVG 'plan --sweep' writes.
std::string frontierSection(const Profile& profile, const Plan* plan) {
  if (!plan || plan->frontier.empty()) return "";
  return "<section class=\"frontier\"><h2>Peak vs extra time (acprof plan --sweep)</h2>\n" +
         renderFrontierSvg(profile, plan->frontier, plan) + "</section>\n";
}

}  // namespace

std::string renderTimelineHtml(const Profile& profile, const Plan* plan, ChartXAxis x_axis) {
  return htmlPage(viz::timelinePageData(profile, plan, x_axis), frontierSection(profile, plan));
}

std::string renderComparisonHtml(const Profile& before, const Profile& after, const Plan* plan,
                                 const std::string& verification, const MeasuredStepTime* measured,
                                 ChartXAxis x_axis) {
  std::string section;
  if (!verification.empty())
    section = "<p id=\"verification\">" + viz::escapeMarkupText(verification) + "</p>\n";
  return htmlPage(viz::comparisonPageData(before, after, plan, measured, x_axis), section + frontierSection(before, plan));
}

}  // namespace acprof
