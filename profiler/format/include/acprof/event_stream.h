// The recorder's event stream, and the profile derived from it.
//
// Collection (profiler/recorder: the allocator hook, RecordFunction callbacks,
// the forward graph's probes, autograd's saved-tensor hooks) writes one
// IterationRecord per training iteration. Everything the profile says about
// memory is derived from the record here, torch-free: each storage's lifetime
// and category, which forward nodes read it, its first and last use, who saved
// it for backward, whose gradient it holds, the allocator's counters per step,
// and which backward steps belong to which forward node. Tests drive it with
// hand-written streams (tests/profiler_format_event_stream_test.cpp).
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "acprof/profile_format.h"

namespace acprof {

struct AllocationEvent {
  void* ptr = nullptr;
  int64_t delta_bytes = 0;       // +size on allocation, -size on free
  int64_t allocator_total = 0;   // the allocator's own live-bytes counter after it
  int64_t allocator_reserved = 0;  // its reserved total after it (the CPU allocator reports 0)
  int step = -1;                 // index into the iteration's steps
};

struct StepTiming {
  Phase phase = Phase::Forward;
  int node = -1;                 // forward node id for forward steps
  std::string op;
  int64_t autograd_sequence_nr = -1;  // for backward steps: the autograd node's
  int64_t sequence_at_start = -1;     // for forward steps: next sequence number at the marker
  int first_event = 0;
  int64_t start_ns = 0;
  int64_t end_ns = -1;           // set by RecordFunction's end for backward steps
  double gpu_time_us = -1;       // summed kernel time on CUDA with CUPTI, else -1
};

// Whose gradient an autograd edge carries: an autograd node and which of its
// inputs, which is the forward tensor that node's forward made as its output
// of that number; for a leaf that requires grad (a parameter), its gradient
// accumulator and 0. The node's sequence number keeps two nodes apart that
// lived at one address in turn.
struct GradientTarget {
  const void* node = nullptr;
  uint64_t sequence_nr = 0;
  int input_nr = 0;
  friend bool operator<(const GradientTarget& a, const GradientTarget& b) {
    if (a.node != b.node) return a.node < b.node;
    if (a.sequence_nr != b.sequence_nr) return a.sequence_nr < b.sequence_nr;
    return a.input_nr < b.input_nr;
  }
};

// A forward value seen by the observer op right after its node ran.
struct ObservedValue {
  int node = -1;
  int output_index = 0;
  int list_index = -1;           // position inside a Tensor[] output, -1 for a Tensor
  const void* storage_ptr = nullptr;
  std::vector<int64_t> shape;
  std::string dtype;
  bool requires_grad = false;
  int64_t bytes = 0;             // numel * element size
  int event_index = 0;           // number of events recorded before it
  std::optional<GradientTarget> gradient_target;  // where it requires grad
};

// Autograd handed a gradient on while backward ran: an autograd node's output
// for the edge to `target` (reported right after the node ran, before the
// engine adds it to what target already received), or a node's input, the
// whole gradient of its forward output `target`, as the node receives it.
struct GradientReport {
  const void* storage_ptr = nullptr;
  GradientTarget target;
  int event_index = 0;           // number of allocation events recorded before it
};

// Autograd saved a tensor for backward (storage_ptr set), or let one go (null).
// A save and its release share save_id.
struct SavedTensorEvent {
  uint64_t save_id = 0;
  const void* storage_ptr = nullptr;
  int step = -1;                 // the step running when it happened
  int event_index = 0;           // number of allocation events recorded before it
};

// How step times were taken: "cpu_wall" (CPU), "cupti_kernels" (CUDA with
// CUPTI: summed GPU kernel time), "cuda_sync_wall" (CUDA without CUPTI: wall
// time with the device synchronized at every step boundary).
struct IterationRecord {
  std::string time_source = "cpu_wall";
  std::vector<AllocationEvent> events;
  std::vector<StepTiming> steps;
  std::vector<ObservedValue> observed;
  std::vector<SavedTensorEvent> saved_tensors;
  std::vector<GradientReport> gradients;
  bool gradients_recorded = false;  // whether the recorder reported gradients (tensors' gradient_of)
  int64_t end_ns = 0;
};

// A storage alive when the measured iteration starts, known by what owns it.
struct StaticStorage {
  const void* ptr = nullptr;
  int64_t bytes = 0;
  Category category = Category::Weight;
  std::string name;
  std::vector<int64_t> shape;
  std::string dtype;
};

// The measured iteration as the derivation reads it: its record, and what the
// recorder knew of the run around it.
struct MeasuredIteration {
  IterationRecord record;
  std::vector<double> step_time_us;       // per step of the record (medians over the measured iterations)
  std::vector<StaticStorage> statics;     // parameters, buffers, inputs, target, optimizer state
  std::set<const void*> gradient_ptrs;    // the parameters' .grad storages at the end
  std::set<const void*> output_ptrs;      // the model's outputs and the loss
  std::vector<const void*> input_ptrs;    // forward argument i's storage (graph value i + 1); null if none
  std::vector<int64_t> input_bytes;       // forward argument i's numel * element size
};

// Fills the profile's steps, tensors, event count and summary, the nodes'
// forward and backward steps and times, and the values' bytes from one
// measured iteration. The profile must already hold its meta, nodes, values
// and graph outputs (the graph's cut facts): the record's forward steps and
// observed values name nodes and node outputs by index.
void deriveProfile(Profile& profile, const MeasuredIteration& iteration);

}  // namespace acprof
