#include "split_branches.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "acprof/forward_graph.h"

namespace acprof {
namespace {

bool isPureConstruct(const torch::jit::Node* node) {
  const auto kind = node->kind();
  return kind == torch::jit::prim::Constant || kind == torch::jit::prim::ListConstruct ||
         kind == torch::jit::prim::TupleConstruct || kind == torch::jit::prim::DictConstruct ||
         kind == torch::jit::prim::Uninitialized;
}

bool holdsTensor(const torch::jit::TypePtr& type) {
  if (type->kind() == c10::TypeKind::TensorType) return true;
  for (const torch::jit::TypePtr& contained : type->containedTypes())
    if (holdsTensor(contained)) return true;
  return false;
}

bool makesTensor(const torch::jit::Node* node) {
  return std::any_of(node->outputs().begin(), node->outputs().end(),
                     [](const torch::jit::Value* output) { return holdsTensor(output->type()); });
}

// A value of the type that nothing will read: tensors get an empty tensor (a
// checkpoint input must be one), numbers and optionals a constant, lists an empty
// list; any other type keeps TorchScript's own placeholder and cannot cross a cut.
torch::jit::Value* placeholderFor(torch::jit::Graph& graph, const torch::jit::TypePtr& type) {
  using c10::TypeKind;
  switch (type->kind()) {
    case TypeKind::TensorType:
      return graph.insert(torch::jit::aten::empty, {graph.insertConstant(std::vector<int64_t>{0})});
    case TypeKind::OptionalType:
    case TypeKind::NoneType:
      return graph.insertConstant(c10::IValue());
    case TypeKind::IntType:
      return graph.insertConstant(int64_t{0});
    case TypeKind::FloatType:
      return graph.insertConstant(0.0);
    case TypeKind::BoolType:
      return graph.insertConstant(false);
    case TypeKind::ListType:
      return graph.insertNode(graph.createList(type->expectRef<c10::ListType>().getElementType(), {}))->output();
    default:
      return graph.insertNode(graph.createUninitialized(type))->output();
  }
}

// The block's nodes in order, as pieces. A pure construct of what earlier
// pieces made runs outside any branch; one of what the open piece made joins it.
struct BranchPiece {
  std::vector<torch::jit::Node*> nodes;
  bool outside = false;  // a pure construct, run before the branches
  bool makes_tensor = false;
};

std::vector<BranchPiece> piecesOf(torch::jit::Block* block) {
  std::vector<BranchPiece> pieces;
  BranchPiece open;
  auto madeByOpen = [&](const torch::jit::Value* value) {
    return std::find(open.nodes.begin(), open.nodes.end(), value->node()) != open.nodes.end();
  };
  for (torch::jit::Node* node : block->nodes()) {
    if (isPureConstruct(node) && std::none_of(node->inputs().begin(), node->inputs().end(), madeByOpen)) {
      pieces.push_back({{node}, true, false});
      continue;
    }
    open.nodes.push_back(node);
    if (makesTensor(node)) {
      open.makes_tensor = true;
      pieces.push_back(std::exchange(open, {}));
    }
  }
  if (!open.nodes.empty()) pieces.push_back(open);  // checks or a raise after the last tensor
  return pieces;
}

size_t tensorPiecesIn(torch::jit::Block* block) {
  const std::vector<BranchPiece> pieces = piecesOf(block);
  return static_cast<size_t>(
      std::count_if(pieces.begin(), pieces.end(), [](const BranchPiece& piece) { return piece.makes_tensor; }));
}

void splitBranch(torch::jit::Graph& graph, torch::jit::Node* branch, size_t split_block) {
  torch::jit::Value* condition = branch->input(0);
  for (const BranchPiece& piece_of_block : piecesOf(branch->blocks()[split_block])) {
    const std::vector<torch::jit::Node*>& nodes = piece_of_block.nodes;
    if (piece_of_block.outside) {
      nodes.front()->moveBefore(branch);
      continue;
    }
    // What the piece makes and something after it reads: the piece's results,
    // with the uses that will read the piece's output instead.
    std::vector<std::pair<torch::jit::Value*, std::vector<torch::jit::Use>>> results;
    for (torch::jit::Node* node : nodes)
      for (torch::jit::Value* output : node->outputs()) {
        std::vector<torch::jit::Use> after;
        for (const torch::jit::Use& use : output->uses()) {
          torch::jit::Node* reader = use.user;
          while (reader->owningBlock() != node->owningBlock()) reader = reader->owningBlock()->owningNode();
          if (std::find(nodes.begin(), nodes.end(), reader) == nodes.end()) after.push_back(use);
        }
        if (!after.empty()) results.emplace_back(output, std::move(after));
      }
    torch::jit::Node* piece = graph.create(torch::jit::prim::If, {condition}, 0);
    piece->copyMetadata(nodes.back());
    piece->insertBefore(branch);
    torch::jit::Block* runs = piece->addBlock();
    torch::jit::Block* skips = piece->addBlock();
    if (split_block == 1) std::swap(runs, skips);  // blocks are then, else
    for (torch::jit::Node* node : nodes) node->moveBefore(runs->return_node());
    for (const auto& [output, after] : results) {
      torch::jit::Value* result = piece->addOutput()->setType(output->type());
      for (const torch::jit::Use& use : after) use.user->replaceInput(use.offset, result);
      runs->registerOutput(output);
      torch::jit::WithInsertPoint at_end(skips);
      skips->registerOutput(placeholderFor(graph, output->type()));
    }
  }
}

}  // namespace

void splitBranches(torch::jit::Graph& graph) {
  const std::vector<torch::jit::Node*> nodes = topLevelNodes(graph);
  for (torch::jit::Node* node : nodes) {
    if (node->kind() != torch::jit::prim::If) continue;
    const size_t then_pieces = tensorPiecesIn(node->blocks()[0]);
    const size_t else_pieces = tensorPiecesIn(node->blocks()[1]);
    if (then_pieces >= 2 && else_pieces == 0) splitBranch(graph, node, 0);
    if (else_pieces >= 2 && then_pieces == 0) splitBranch(graph, node, 1);
  }
}

}  // namespace acprof
