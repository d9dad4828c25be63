// The memory timeline of a profile as the charts and the trace draw it: live
// bytes per category after every allocator event, the phases as event ranges,
// and the mapping of one profile's events onto another's for before/after.
#pragma once

#include <array>
#include <vector>

#include "acprof/profile_format.h"

namespace acprof::viz {

// Stacking order bottom to top and colours, as PyTorch's memory timeline
// (torch/profiler/_memory_profiler.py: _CATEGORY_TO_COLORS). Output has no
// PyTorch counterpart and takes the colour PyTorch gives unknown memory.
struct CategoryStyle {
  Category category;
  const char* color;
};
const std::array<CategoryStyle, kCategoryCount>& categoryStackOrder();

// The first event with the largest total; -1 when there are no events.
int peakEvent(const std::vector<CategoryBytes>& bytes_per_event);

// Maximal runs of steps in the same phase, as event ranges [first_event,
// end_event). Events before the first step form a leading Setup span.
struct PhaseSpan {
  Phase phase = Phase::Setup;
  int first_event = 0;
  int end_event = 0;
};
std::vector<PhaseSpan> phaseSpans(const Profile& profile);

// A timeline reduced for drawing: the kept events (ascending, see
// peakPreservingSampleIndices) with their live bytes per category, and the
// exact peak of the full timeline.
struct SampledTimeline {
  std::vector<int> events;
  std::vector<CategoryBytes> bytes;  // after each kept event
  int peak_event = -1;
  CategoryBytes peak_bytes{};
};
SampledTimeline sampleTimeline(const Profile& profile, int max_samples);

// Maps a profile's event positions onto wall time in milliseconds from the
// iteration's start: each step spans its measured median time, its events
// spread evenly over it, so a phase is as wide as it took. Steps without
// events (their time passes with no allocation) widen the gap at their place.
class EventTimeAxis {
 public:
  explicit EventTimeAxis(const Profile& profile);
  double map(double event) const;

 private:
  std::vector<double> knot_events_;  // ascending; the time at each is the latest step start there
  std::vector<double> knot_ms_;
};

// Maps positions on one profile's event axis onto another's so that phases
// line up: inside each phase the mapping is linear. When the two profiles do
// not have the same sequence of phases it stretches the whole iteration.
class PhaseAlignedAxis {
 public:
  PhaseAlignedAxis(const Profile& from, const Profile& onto);
  double map(double event) const;

 private:
  struct Piece {
    double from_first, from_end, onto_first, onto_end;
  };
  std::vector<Piece> pieces_;
};

}  // namespace acprof::viz
