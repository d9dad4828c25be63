// The short human summary printed after a profile.
#pragma once

#include <string>

#include "acprof/plan_format.h"
#include "acprof/profile_format.h"

namespace acprof::cli {

// Peak and its breakdown, the ten largest activations with op and scope, time
// per phase, and a hint when the other executor mode would hold less.
std::string profileSummaryText(const Profile& profile);

// "measured at N intra-op thread(s): train at the same count ..." for a run
// that recorded its count, "" for one that did not: CPU kernels size their
// workspaces by it, so a profile's bytes, and a plan's, hold at that count.
std::string threadsNote(const RunConfig& run);

// The plan's segments as a table, one per line: nodes, what it saves, what its
// recompute costs, and its module path and ops (as report.html names them).
std::string planSegmentsText(const Profile& profile, const Plan& plan);

}  // namespace acprof::cli
