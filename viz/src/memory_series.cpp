#include "memory_series.h"

#include <algorithm>

#include "downsample.h"

namespace acprof::viz {

const std::array<CategoryStyle, kCategoryCount>& categoryStackOrder() {
  static const std::array<CategoryStyle, kCategoryCount> order = {{
      {Category::Weight, "#006400"},          // darkgreen (PyTorch: PARAMETER)
      {Category::OptimizerState, "#daa520"},  // goldenrod
      {Category::Input, "#000000"},           // black
      {Category::Communication, "#008b8b"},   // darkcyan
      {Category::Temporary, "#9370db"},       // mediumpurple
      {Category::Activation, "#ff0000"},      // red
      {Category::Gradient, "#0000cd"},        // mediumblue
      {Category::Output, "#808080"},          // grey (PyTorch: unknown)
  }};
  return order;
}

int peakEvent(const std::vector<CategoryBytes>& bytes_per_event) {
  int peak = -1;
  int64_t peak_bytes = 0;
  for (size_t e = 0; e < bytes_per_event.size(); ++e) {
    const int64_t total = totalBytes(bytes_per_event[e]);
    if (peak < 0 || total > peak_bytes) {
      peak = static_cast<int>(e);
      peak_bytes = total;
    }
  }
  return peak;
}

SampledTimeline sampleTimeline(const Profile& profile, int max_samples) {
  const std::vector<CategoryBytes> per_event = categoryBytesPerEvent(profile);
  std::vector<int64_t> totals(per_event.size());
  for (size_t e = 0; e < per_event.size(); ++e) totals[e] = totalBytes(per_event[e]);
  SampledTimeline sampled;
  sampled.events = peakPreservingSampleIndices(totals, max_samples);
  for (int e : sampled.events) sampled.bytes.push_back(per_event[e]);
  sampled.peak_event = peakEvent(per_event);
  if (sampled.peak_event >= 0) sampled.peak_bytes = per_event[sampled.peak_event];
  return sampled;
}

std::vector<PhaseSpan> phaseSpans(const Profile& profile) {
  std::vector<PhaseSpan> spans;
  if (!profile.steps.empty() && profile.steps.front().first_event > 0)
    spans.push_back({Phase::Setup, 0, profile.steps.front().first_event});
  for (size_t i = 0; i < profile.steps.size(); ++i) {
    const Step& step = profile.steps[i];
    const int end = stepEndEvent(profile, static_cast<int>(i));
    if (!spans.empty() && spans.back().phase == step.phase)
      spans.back().end_event = end;
    else
      spans.push_back({step.phase, step.first_event, end});
  }
  return spans;
}

PhaseAlignedAxis::PhaseAlignedAxis(const Profile& from, const Profile& onto) {
  const std::vector<PhaseSpan> a = phaseSpans(from), b = phaseSpans(onto);
  const bool same_phases = a.size() == b.size() &&
                           std::equal(a.begin(), a.end(), b.begin(),
                                      [](const PhaseSpan& x, const PhaseSpan& y) { return x.phase == y.phase; });
  if (same_phases && !a.empty()) {
    for (size_t i = 0; i < a.size(); ++i)
      pieces_.push_back({double(a[i].first_event), double(a[i].end_event), double(b[i].first_event),
                         double(b[i].end_event)});
  } else {
    pieces_.push_back({0, double(from.event_count), 0, double(onto.event_count)});
  }
}

EventTimeAxis::EventTimeAxis(const Profile& profile) {
  double start_ms = 0;
  for (size_t s = 0; s < profile.steps.size(); ++s) {
    const double event = profile.steps[s].first_event;
    // Steps that allocate nothing share their first event with the next: the
    // knot at that event takes the latest start, so their time is a gap.
    if (!knot_events_.empty() && knot_events_.back() == event) {
      knot_events_.pop_back();
      knot_ms_.pop_back();
    }
    knot_events_.push_back(event);
    knot_ms_.push_back(start_ms);
    start_ms += profile.steps[s].time_us / 1000.0;
  }
  if (!knot_events_.empty() && knot_events_.back() == profile.event_count) {
    knot_events_.pop_back();
    knot_ms_.pop_back();
  }
  knot_events_.push_back(profile.event_count);
  knot_ms_.push_back(start_ms);
  if (knot_events_.front() > 0) {  // events before the first step: no time of their own
    knot_events_.insert(knot_events_.begin(), 0);
    knot_ms_.insert(knot_ms_.begin(), 0);
  }
}

double EventTimeAxis::map(double event) const {
  if (knot_events_.size() < 2) return 0;
  // The piece [k, k+1] holding the event; outside the iteration the ends extrapolate flat.
  const auto after = std::upper_bound(knot_events_.begin(), knot_events_.end(), event);
  if (after == knot_events_.begin()) return knot_ms_.front();
  if (after == knot_events_.end()) return knot_ms_.back();
  const size_t k = static_cast<size_t>(after - knot_events_.begin()) - 1;
  const double length = knot_events_[k + 1] - knot_events_[k];
  return knot_ms_[k] + (event - knot_events_[k]) * (knot_ms_[k + 1] - knot_ms_[k]) / length;
}

double PhaseAlignedAxis::map(double event) const {
  // The last piece whose start is at or before the event; the ends extrapolate.
  const Piece* piece = &pieces_.front();
  for (const Piece& p : pieces_)
    if (p.from_first <= event) piece = &p;
  const double from_length = piece->from_end - piece->from_first;
  if (from_length <= 0) return piece->onto_first;
  return piece->onto_first + (event - piece->from_first) * (piece->onto_end - piece->onto_first) / from_length;
}

}  // namespace acprof::viz
