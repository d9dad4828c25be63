// How a plan's segments are named for people, in the terminal (acprof plan)
// and in the reports alike: by module path and op, never by IR value ids.
// "encoder.0: self_attn → dropout1, 12 ops: linear, softmax, dropout, …"
#pragma once

#include <string>

#include "acprof/plan_format.h"
#include "acprof/profile_format.h"

namespace acprof {

// The module path the segment's ops run in (their common prefix, then the
// first and last scope below it) and its op count with the first few distinct
// kinds, namespaces dropped ("prim::If" is "if").
std::string segmentDescription(const Profile& profile, const SegmentCut& segment);

// An op kind without its namespace: "aten::linear" -> "linear", "prim::If" -> "if".
std::string shortOpName(const std::string& kind);

}  // namespace acprof
