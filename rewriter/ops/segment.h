// acprof.Segment: one checkpointed region of a rewritten model's forward graph.
//
// A TorchScript custom class, so a rewritten model stores its segments as
// ordinary module attributes and `torch.jit.save` / `torch.jit.load` keep them:
// the state pickled is the region's subgraph as IR text plus the indices of the
// inputs that the subgraph writes in place (module buffers such as batch norm's
// running statistics): the checkpoint snapshots them before forward, and the
// recompute reads and writes the snapshot instead.
// The subgraph takes only tensors and returns only tensors.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include <ATen/core/Tensor.h>
#include <torch/custom_class.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/runtime/interpreter.h>

namespace acprof {

class Segment : public torch::CustomClassHolder {
 public:
  // What def_pickle writes: (graph IR text, written input indices).
  using PickledState = std::tuple<std::string, std::vector<int64_t>>;

  // Parses the IR once; throws c10::Error naming the problem if it does not parse
  // or if the graph takes or returns anything but tensors.
  Segment(std::string graph_ir, std::vector<int64_t> written_inputs);

  // Runs the subgraph in the JIT interpreter without executor passes, so that
  // it allocates exactly what the same ops run eagerly would.
  std::vector<at::Tensor> run(std::vector<at::Tensor> inputs) const;

  const std::string& graphIr() const { return graph_ir_; }
  const std::vector<int64_t>& writtenInputs() const { return written_inputs_; }
  bool writesInput(size_t index) const;
  // Whether the subgraph asks if two values are one object (aten::__is__,
  // aten::__isnot__), anywhere in its blocks: then a tensor passed as several
  // inputs must stay one object inside (acprof::checkpoint).
  bool comparesIdentity() const { return compares_identity_; }
  // For each output, whether it may carry autograd history when the inputs
  // that require grad are `input_requires_grad`: in the original model an
  // output computed only from tensors without grad (a transpose of an input
  // batch) has none, and a checkpoint that gave it one would make the next
  // segment differentiate towards it and hold that gradient.
  std::vector<bool> outputsThatMayNeedGrad(const std::vector<bool>& input_requires_grad) const;
  size_t inputCount() const;
  size_t outputCount() const;

  PickledState pickledState() const { return {graph_ir_, written_inputs_}; }

  // The IR text of a segment's subgraph that this LibTorch's IR parser reads
  // back. The parser cannot read a node without outputs, which scripted code
  // is full of (a statement-level `if` or `for`, `raise`, warnings): such an
  // If gets a None output, such a Loop a None loop-carried value, and other
  // such nodes are written as a stub node that the Segment turns back into
  // the real one after parsing. Changes `graph`.
  static std::string serializeGraph(torch::jit::Graph& graph);

  // The TorchScript name of the class, as it appears in the checkpoint op's schema.
  static constexpr const char* kQualifiedName = "__torch__.torch.classes.acprof.Segment";

 private:
  std::string graph_ir_;
  std::vector<int64_t> written_inputs_;
  std::shared_ptr<torch::jit::Graph> graph_;
  bool compares_identity_ = false;
  // output_sources_[o][i]: output o may be computed from input i (through any
  // op, in-place write or alias). Conservative: more sources, never fewer.
  std::vector<std::vector<bool>> output_sources_;
  torch::jit::Code code_;
};

}  // namespace acprof
