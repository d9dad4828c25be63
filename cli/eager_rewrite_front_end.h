// The eager front end of the rewrite session (rewrite_session.h): the Python
// front end applies the plan to the module its factory builds, verifies one
// step, times pairs and measures the checkpointed step; the session draws the
// report from what it measured.
#pragma once

#include <memory>

#include "acprof/rewrite_session.h"

namespace acprof::cli {

std::unique_ptr<RewriteFrontEnd> eagerRewriteFrontEnd();

}  // namespace acprof::cli
