// The optional views `acprof profile` writes beside the profile.
#pragma once

#include <string>

#include "acprof/profile_format.h"

namespace acprof::cli {

// Writes the optional HTML timeline and trace of a profile (empty path: skip).
void writeViews(const Profile& profile, const std::string& html_path, const std::string& trace_path);

}  // namespace acprof::cli
