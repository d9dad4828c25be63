#include "acprof/segment_names.h"

#include <algorithm>
#include <cctype>
#include <vector>

#include <fmt/format.h>

namespace acprof {
namespace {

// Kinds named in a description before "…".
constexpr size_t kNamedKinds = 4;

std::vector<std::string> dottedParts(const std::string& scope) {
  std::vector<std::string> parts;
  size_t begin = 0;
  while (begin <= scope.size()) {
    const size_t dot = scope.find('.', begin);
    parts.push_back(scope.substr(begin, dot == std::string::npos ? std::string::npos : dot - begin));
    if (dot == std::string::npos) break;
    begin = dot + 1;
  }
  return parts;
}

std::string joined(const std::vector<std::string>& parts, size_t from, size_t to) {
  std::string text;
  for (size_t i = from; i < to; ++i) text += (i > from ? "." : "") + parts[i];
  return text;
}

// "encoder.0: self_attn → dropout1" from the first and last scopes, "" where neither has one.
std::string modulePath(const std::string& first, const std::string& last) {
  if (first.empty() || last.empty()) return first.empty() ? last : first;
  if (first == last) return first;
  const std::vector<std::string> a = dottedParts(first), b = dottedParts(last);
  size_t common = 0;
  while (common < a.size() && common < b.size() && a[common] == b[common]) ++common;
  // A whole scope that contains the other ("layer1" and "layer1.0.conv1") is their common path.
  if (common == a.size() || common == b.size()) return joined(a, 0, std::min(a.size(), b.size()));
  const std::string below = joined(a, common, a.size()) + " → " + joined(b, common, b.size());
  return common == 0 ? below : joined(a, 0, common) + ": " + below;
}

}  // namespace

std::string shortOpName(const std::string& kind) {
  const size_t colons = kind.rfind("::");
  std::string name = colons == std::string::npos ? kind : kind.substr(colons + 2);
  if (kind.rfind("prim::", 0) == 0)
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return name;
}

std::string segmentDescription(const Profile& profile, const SegmentCut& segment) {
  std::string first_scope, last_scope;
  std::vector<std::string> kinds;
  int ops = 0;
  for (int n = segment.first_node; n <= segment.last_node && n < static_cast<int>(profile.nodes.size()); ++n) {
    const ForwardNode& node = profile.nodes[n];
    // Constants and list constructs are copied in, not computed: they are not the segment's ops.
    if (node.role != CutRole::Compute) continue;
    ++ops;
    if (!node.scope.empty()) {
      if (first_scope.empty()) first_scope = node.scope;
      last_scope = node.scope;
    }
    const std::string kind = shortOpName(node.kind);
    if (std::find(kinds.begin(), kinds.end(), kind) == kinds.end()) kinds.push_back(kind);
  }
  std::string named;
  for (size_t i = 0; i < kinds.size() && i < kNamedKinds; ++i) named += (i > 0 ? ", " : "") + kinds[i];
  if (kinds.size() > kNamedKinds) named += ", …";
  const std::string path = modulePath(first_scope, last_scope);
  const std::string count = fmt::format("{} op{}: {}", ops, ops == 1 ? "" : "s", named);
  return path.empty() ? count : path + ", " + count;
}

}  // namespace acprof
