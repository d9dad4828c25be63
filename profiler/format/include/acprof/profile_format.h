// The profile format: the data model of profile.json and its reading and writing.
//
// This is the contract between the recorder (which fills it from a measured
// training step) and every later stage (planner, viz, rewriter's report), so it
// is torch-free and versioned. A profile describes one training iteration as:
//   - the top-level nodes of the model's *inlined* TorchScript forward graph
//     (the unit the rewriter can cut, so the planner reasons in the same units);
//   - a sequence of steps (one per forward node, the loss, one per autograd
//     node run in backward, the optimizer step);
//   - every tensor storage that was live during the iteration, with the global
//     allocation and free *event* indices the allocator reported.
// Replaying the storages' [alloc_event, free_event) intervals reproduces the
// allocator's live bytes at every event exactly; timelineFromTensors does that,
// and the simulator in planner/ does it under a recompute decision.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "acprof/contract.h"
#include "acprof/error.h"
#include "acprof/files.h"

namespace acprof {

// Bumped whenever a field changes meaning or disappears; readers reject others.
// An optional field is added without a bump: files without it still read.
// Stated in python/acprof/contract.json, which the eager front end writes by.
inline constexpr int kProfileSchemaVersion = contract::kProfileSchemaVersion;

// Categories in the spirit of PyTorch's memory timeline. Names:
// python/acprof/contract.json, in this order.
enum class Category {
  Weight,          // parameters and buffers
  Gradient,        // .grad of parameters, alive at the end of backward
  OptimizerState,  // momentum, Adam moments
  Input,           // model inputs and targets
  Activation,      // made in forward, alive at the end of forward, freed later
  Temporary,       // made and freed inside one phase (or any other transient)
  Output,          // the model's output and the loss
  Communication,   // what a data-parallel wrapper holds for its collectives (DDP's gradient buckets)
};
inline constexpr int kCategoryCount = static_cast<int>(Category::Communication) + 1;
// Categories from this one on were added without a schema bump: a file written
// before them has no bytes in them, and its breakdowns do not name them.
inline constexpr Category kFirstCategoryAddedLater = Category::Communication;
using CategoryBytes = std::array<int64_t, kCategoryCount>;

// Names: python/acprof/contract.json, in this order.
enum class Phase { Setup, Forward, Loss, Backward, Optimizer };
inline constexpr int kPhaseCount = static_cast<int>(Phase::Optimizer) + 1;

const char* categoryName(Category category);  // "weight", "gradient", ...
const char* phaseName(Phase phase);           // "forward", ...
Category categoryFromName(const std::string& name);  // throws FormatError
Phase phaseFromName(const std::string& name);        // throws FormatError

// A problem with a profile or plan file: what is wrong, where, and what to do.
class FormatError : public Error {
 public:
  explicit FormatError(const std::string& message) : Error(ErrorKind::BadInput, message) {}
};

// How a node may take part in a checkpoint segment, decided once from the
// graph by the legality library (profiler/graph, cut_facts.h) and applied to
// ranges by cut_rules.h.
enum class CutRole {
  Compute,     // moves into the segment and is recomputed in backward
  Duplicable,  // allocates nothing and has no effects (constants, attribute reads,
               // list/tuple/dict constructs): stays in the outer graph and is
               // copied into any segment that reads it
  Barrier,     // cannot be in a segment (barrier_reason says why)
};
const char* cutRoleName(CutRole role);              // "compute", ...
CutRole cutRoleFromName(const std::string& name);   // throws FormatError

// One top-level node of the inlined forward graph (constant-trip loops unrolled).
// prim::If and prim::Loop are single nodes whose sub-blocks run inside them.
struct ForwardNode {
  int id = 0;                         // index among the graph's top-level nodes
  std::string kind;                   // "aten::conv2d"
  std::string scope;                  // module scope, "layer1.0.conv1"
  std::vector<std::string> inputs;    // value debug names
  std::vector<std::string> outputs;   // value debug names
  CutRole role = CutRole::Compute;
  std::string barrier_reason;         // for Barrier nodes
  // Values (ids into Profile::values) the node needs: its inputs and what its
  // sub-blocks read from outside, with values made by Duplicable nodes replaced
  // by what those read (a list's elements for a list construct), recursively.
  std::vector<int> reads;
  std::vector<int> writes;            // values whose memory the node may write (alias analysis)
  int forward_step = -1;              // the step that ran it, -1 if it never runs as a step
  double forward_time_us = 0;         // median over measured iterations
  std::vector<int> backward_steps;    // steps of autograd nodes it created (their times are the steps')
};

// How a value reaches a segment that reads it but does not make it.
enum class ValueEntry {
  Input,     // as a checkpoint input (tensors; scalars as 0-dim tensors)
  Clone,     // its Duplicable producer is copied into the segment
  Constant,  // embedded as a constant (None, a plain module attribute)
  Blocked,   // cannot cross a segment boundary (e.g. a list made by an op)
  Elements,  // a list of tensors the module holds (nn.LSTM's _flat_weights): unpacked
             // before the checkpoint, its tensors enter as inputs, rebuilt inside
};
const char* valueEntryName(ValueEntry entry);
ValueEntry valueEntryFromName(const std::string& name);  // throws FormatError

// What a value that enters a segment as a checkpoint input (ValueEntry::Input)
// is made into, since a checkpoint passes tensors only. Decided once from the
// graph (cut_facts.h, inputFormOf); the rewriter makes it (graph_surgery.cpp)
// and the planner counts what it keeps (inputFormExtraBytes).
enum class InputForm {
  Tensor,            // a tensor, as itself
  HeldOptional,      // an Optional[Tensor] module attribute, as the tensor it holds
  Number,            // an int or float, as a 0-dim int64 or double tensor
  Bool,              // a bool, as a 0-dim bool tensor
  OptionalWithFlag,  // any other Optional[Tensor], as its flag (a 0-dim bool) and its tensor
};
const char* inputFormName(InputForm form);
InputForm inputFormFromName(const std::string& name);  // throws FormatError
// The bytes a checkpoint keeps for a value of this form beyond the tensors
// the profile records: the 0-dim tensor a number (8) or a bool (1) becomes,
// an optional's flag (1). Tiny, but a plan at its floor is exact to the byte
// only with them.
int64_t inputFormExtraBytes(InputForm form);

// One value of the forward graph's top level: a graph input or a node output.
struct GraphValue {
  int id = 0;
  std::string name;                   // debug name, unique in the graph
  int producer_node = -1;             // -1 for graph inputs
  std::string type;                   // "Tensor", "int", "List[Tensor]"
  ValueEntry entry = ValueEntry::Input;
  InputForm input_form = InputForm::Tensor;  // what it becomes in a checkpoint that it enters as an input
  bool can_leave = false;             // can be a checkpoint output (tensor or scalar)
  bool is_tensor = false;
  bool requires_grad = false;         // may need grad (decided from the graph: cut_facts.h)
  bool needs_grad = false;            // needed grad in the recorded run (observed after its node and
                                      // after every later in-place write of it; else requires_grad)
  int64_t bytes = 0;                  // observed numel * element size (what a copy allocates)
  int tensor = -1;                    // the storage (Profile::tensors id) it was on in the recorded
                                      // run; -1: none seen (not a tensor, a list, never run)
};

// One tensor storage. Static storages (weights, inputs, optimizer state,
// anything alive before the iteration) have alloc_event == -1; storages still
// alive after the iteration have free_event == event_count.
struct TensorRecord {
  int id = 0;
  int64_t bytes = 0;
  std::vector<int64_t> shape;         // of the first value seen on the storage; empty if none
  std::string dtype;                  // "float32", "" if unknown
  std::string device;                 // "cpu", "cuda:0"
  Category category = Category::Temporary;
  std::string name;                   // parameter name, graph value name, or ""
  int producer_node = -1;             // forward node whose step allocated it
  int alloc_event = -1;
  int free_event = 0;
  int alloc_step = -1;                // -1 for static storages
  int free_step = -1;                 // -1 if it outlives the iteration
  std::vector<int> users;             // forward nodes that read a value on this storage
  int last_forward_use_step = -1;     // last forward step that reads it, -1 if none
  int first_backward_use_step = -1;   // first backward step of a node that produced or read it
  // What autograd saved it for backward: the forward node whose step saved it
  // (-1: the loss or anything outside the graph's top-level nodes) and the step
  // that released it (-1: still saved when the iteration ended). A tensor saved
  // only by nodes a checkpoint takes over is no longer held by them, so the
  // planner can tell when a segment's output really dies. nullopt: the profile
  // does not say (written before this was recorded); empty: nothing saved it.
  struct SavedBy {
    int node = -1;
    int release_step = -1;
    friend bool operator==(const SavedBy& a, const SavedBy& b) {
      return a.node == b.node && a.release_step == b.release_step;
    }
  };
  std::optional<std::vector<SavedBy>> saved_by;
  // Whose gradient it holds, as autograd said while backward ran: the graph
  // values (ids) whose gradient the backward step that made it handed on as
  // this storage, or, where none made it for a value, the values whose whole
  // gradient it was when the node that consumes it received it (a sum the
  // engine made). Several ids: every value on the one autograd output (a
  // weight read through one prim::GetAttr per use, a list and its unpacked
  // element). nullopt: the profile does not say (written before this was
  // recorded); empty: no value's gradient.
  std::optional<std::vector<int>> gradient_of;
};

struct Step {
  int index = 0;
  Phase phase = Phase::Forward;
  int node = -1;                      // forward node for forward steps and for the
                                      // backward steps linked to one, else -1
  std::string op;                     // node kind, autograd node name, "loss", "optimizer.step"
  std::string scope;
  int first_event = 0;                // events [first_event, next step's first_event)
  double time_us = 0;                 // median over measured iterations
  int64_t allocator_bytes = 0;        // the allocator's own live-bytes counter at the step's end
  int64_t allocator_peak_bytes = 0;   // the allocator's counter's maximum inside the step
  // Filled by timelineFromTensors, not by the recorder's bookkeeping:
  CategoryBytes bytes_at_end{};       // live bytes per category at the step's end
  int64_t peak_bytes = 0;             // maximum live bytes inside the step
};

struct PeakSummary {
  int64_t peak_bytes = 0;
  int peak_step = -1;
  CategoryBytes peak_breakdown{};     // live bytes per category at the peak event
  int64_t allocator_peak_bytes = 0;   // the allocator's counter maximum over the iteration
  // The allocator's reserved total's maximum over the iteration: what a caching
  // allocator (CUDA) holds from the device, allocated or not, and what runs out.
  // Absent where the allocator reports no reserved total (the CPU allocator
  // reports 0: it reserves nothing beyond what it allocates). Optional in JSON.
  std::optional<int64_t> reserved_peak_bytes;
  std::array<double, kPhaseCount> phase_time_us{};  // indexed by Phase; filled by timelineFromTensors
};

// One training run as acprof runs it: the step `acprof profile` measures and
// that `acprof rewrite` verifies, times and profiles again. The CLI fills it
// as a request ("auto" loss, "" autocast: take the archive's); the profile
// records it resolved, so every later stage runs the very step that was
// profiled, from this one record.
struct RunConfig {
  std::vector<std::string> input_specs;   // "float32[32,3,224,224]"; requested empty: the archive's
  std::string target_spec;                // "" when the model returns the loss
  std::string loss = "auto";              // requested auto|model|sum|mean|cross_entropy; recorded resolved
  std::string optimizer = "none";         // none|sgd|adam|adamw (torch::optim)
  std::string autocast;                   // "" or the autocast dtype forward ran under ("bfloat16"); requested
                                          // "" is the archive's, "off" is off
  std::string device = "cpu";
  bool executor_optimize = false;
  int warmup_iters = 1;
  // Requested: the most measured iterations (at least two are measured, and
  // more only while their times disagree: measured_iterations.h); recorded:
  // how many were. Five: per-op times from three iterations moved the
  // predicted extra time by several points of the step between profiles on a
  // shared 2-core machine, where iterations rarely agree within 2 %.
  int measured_iters = 5;
  uint64_t seed = 0;                      // inputs, targets and the dropout masks of each step
  // LibTorch's intra-op threads the step ran with; requested 0: the process's
  // own. CPU kernels size their workspaces by it (resnet18's convolution
  // backward at batch 2, 64x64: 113.61 MiB peak at one thread, 149.68 MiB at
  // two), so the rewrite measures under the count that was profiled.
  int intra_op_threads = 0;
};

struct ProfileMeta {
  std::string model_path;
  std::string model_sha256;
  std::string torch_version;
  RunConfig run;
  // How step times were taken: cpu_wall, cupti_kernels (summed GPU kernel time
  // per step), or cuda_sync_wall (wall time, device synchronized at each step).
  std::string time_source = "cpu_wall";
  std::string command;
  int64_t allocator_bytes_at_start = 0;   // the allocator's counter before the first event
  // Peak of one plain iteration under the other executor mode (-1 if not measured).
  int64_t other_executor_mode_peak_bytes = -1;
  // Bytes of random-generator state a checkpoint call keeps from its forward
  // until its backward returns (and copies once more while it recomputes).
  int64_t checkpoint_rng_state_bytes = 0;
  // Plain forward time without grad over with grad (same mode, same inputs),
  // of the whole model; -1 where not measured (the default: `acprof profile
  // --measure-no-grad-forward` asks for it). Not used by the planner's time
  // model: a checkpoint's own forward, which records no history either,
  // measured about what its segment's forward with grad did (simulator.cpp
  // says by how much), so it is a fact about the model, not an input.
  double forward_without_grad_ratio = -1;
  // What acprof's probes add to a forward step's wall time, per step: the
  // instrumented forward's time over a plain forward's, spread evenly over its
  // steps, and taken out of each step's time. -1 where not measured (a time
  // source without probes in it, an eager profile, a profile older than the field).
  double probe_cost_us = -1;
};

struct Profile {
  ProfileMeta meta;
  std::vector<ForwardNode> nodes;
  std::vector<GraphValue> values;       // by id
  std::vector<int> graph_outputs;       // values the forward returns (through tuple/list/dict constructs)
  std::vector<TensorRecord> tensors;
  std::vector<Step> steps;
  int event_count = 0;
  PeakSummary summary;

  const ForwardNode* findNode(int id) const;
  const GraphValue* findValue(const std::string& name) const;  // null if none
};

// Fills every step's bytes_at_end / peak_bytes and the summary's peak fields
// by replaying the tensors' event intervals, and the summary's phase times by
// summing the steps' times. The recorder calls it before
// writing; readers may call it again and get the same numbers.
void timelineFromTensors(Profile& profile);

// Live bytes per category after each event (size event_count), by replaying
// the intervals: a storage counts at event e when alloc_event <= e < free_event.
std::vector<CategoryBytes> categoryBytesPerEvent(const Profile& profile);
// Their sums: live bytes after each event.
std::vector<int64_t> liveBytesPerEvent(const Profile& profile);
int64_t totalBytes(const CategoryBytes& bytes);
// The bytes no recompute can remove: weights, gradients, optimizer state and
// inputs. The rest of a peak is what checkpointing could remove in principle.
int64_t unremovableBytes(const CategoryBytes& bytes);

// The step that contains an event.
int stepOfEvent(const Profile& profile, int event);
// The end of a step's events (exclusive): the next step's first event, or the
// profile's event_count after the last step.
int stepEndEvent(const Profile& profile, int step);

// JSON. Readers throw FormatError naming the file, the field and the fix.
std::string profileToJson(const Profile& profile);
Profile profileFromJson(const std::string& json_text, const std::string& source_name);
Profile readProfileFile(const std::string& path);
// Written as acprof/files.h writes every output: whole or not at all.
void writeProfileFile(const Profile& profile, const std::string& path);


// The measured time of one iteration: the sum of every step's time.
double iterationTimeUs(const Profile& profile);

// The `count` largest activation storages, largest first (ties in tensor order):
// what recompute could remove, as the CLI summary and the report list it.
std::vector<const TensorRecord*> largestActivations(const Profile& profile, size_t count);

// "1.50 GiB", "312.0 MiB", "8.0 KiB", "12 B".
std::string formatBytes(int64_t bytes);

}  // namespace acprof
