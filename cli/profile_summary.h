// The short human summary printed after a profile.
#pragma once

#include <string>

#include "acprof/profile_format.h"

namespace acprof::cli {

// Peak and its breakdown, the ten largest activations with op and scope, time
// per phase, and a hint when the other executor mode would hold less.
std::string profileSummaryText(const Profile& profile);

}  // namespace acprof::cli
