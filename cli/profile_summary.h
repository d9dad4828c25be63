// The short human summary printed after a profile.
#pragma once

#include <string>

#include "acprof/profile_format.h"

namespace acprof::cli {

// Peak and its breakdown, the ten largest activations with op and scope, time
// per phase, and a hint when the other executor mode would hold less.
std::string profileSummaryText(const Profile& profile);

// "measured at N intra-op thread(s): train at the same count ..." for a run
// that recorded its count, "" for one that did not: CPU kernels size their
// workspaces by it, so a profile's bytes, and a plan's, hold at that count.
std::string threadsNote(const RunConfig& run);

}  // namespace acprof::cli
