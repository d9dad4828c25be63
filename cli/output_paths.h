// Checks on output paths made before any work starts, so that a bad path fails
// fast and an input is never overwritten.
#pragma once

#include <string>
#include <vector>

#include "acprof/profile_format.h"

namespace acprof::cli {

// Throws a one-line error if `output` is one of `inputs`, is a directory, or
// its directory is missing or not writable.
void checkOutputPath(const std::string& output, const std::vector<std::string>& inputs);

// Throws a one-line error unless `directory` exists or can be created (its
// nearest existing ancestor is a writable directory). Creates nothing.
void checkOutputDirectory(const std::string& directory);

// Writes the optional HTML timeline and trace of a profile (empty path: skip).
void writeViews(const Profile& profile, const std::string& html_path, const std::string& trace_path);

}  // namespace acprof::cli
