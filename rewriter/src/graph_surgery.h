// Graph surgery: replaces each planned region of a module's inlined forward
// graph with one acprof::checkpoint call and installs the result as forward.
#pragma once

#include <vector>

#include <torch/script.h>

#include "acprof/plan_format.h"

namespace acprof {

// Rewrites `module` in place (its class type gains one acprof.Segment attribute
// per segment and a new forward). Throws RewriteError when a segment cannot be
// cut as planned: unknown node ids or value names, control flow inside, an
// in-place write to a segment input that is not a module buffer.
void checkpointSegments(torch::jit::Module& module, const std::vector<SegmentCut>& segments);

}  // namespace acprof
