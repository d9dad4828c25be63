#include "acprof/forward_graph.h"

#include "acprof/cut_facts.h"

#include <torch/csrc/jit/ir/alias_analysis.h>
#include <torch/csrc/jit/ir/constants.h>
#include <torch/csrc/jit/passes/dead_code_elimination.h>
#include <torch/csrc/jit/passes/inliner.h>
#include <torch/csrc/jit/passes/loop_unrolling.h>

#include <algorithm>
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <utility>

namespace acprof {

namespace {

void collectAssignedAttributes(const torch::jit::Block* block, std::unordered_set<std::string>& names) {
  for (const torch::jit::Node* node : block->nodes()) {
    if (node->kind() == torch::jit::prim::SetAttr) names.insert(node->s(torch::jit::attr::name));
    for (const torch::jit::Block* inner : node->blocks()) collectAssignedAttributes(inner, names);
  }
}

}  // namespace

std::unordered_set<std::string> assignedAttributes(const torch::jit::Graph& graph) {
  std::unordered_set<std::string> names;
  collectAssignedAttributes(graph.block(), names);
  return names;
}

namespace {

// Scripted library code reads submodules' attributes inside branches (a
// layer's weights inside `if self.norm_first:`), so the branch would read
// module objects, which cannot enter a checkpoint. Reading an attribute has
// no effect and the attribute always exists, so a read that no assignment in
// the graph can change moves before its top-level node: the branch then reads
// the tensor itself.
void hoistAttributeReads(torch::jit::Graph& graph) {
  const std::unordered_set<std::string> assigned = assignedAttributes(graph);
  std::vector<torch::jit::Node*> top_level(graph.nodes().begin(), graph.nodes().end());
  for (torch::jit::Node* top : top_level) {
    if (top->blocks().empty()) continue;
    std::vector<torch::jit::Node*> reads;
    std::vector<torch::jit::Block*> pending(top->blocks().begin(), top->blocks().end());
    while (!pending.empty()) {
      torch::jit::Block* block = pending.back();
      pending.pop_back();
      for (torch::jit::Node* node : block->nodes()) {
        if (node->kind() == torch::jit::prim::GetAttr && !assigned.count(node->s(torch::jit::attr::name)))
          reads.push_back(node);
        for (torch::jit::Block* inner : node->blocks()) pending.push_back(inner);
      }
    }
    // Chains (self.layer.weight) move one link at a time, outermost first.
    for (bool moved = true; moved;) {
      moved = false;
      for (torch::jit::Node*& read : reads) {
        if (!read || read->input(0)->node()->owningBlock() != graph.block()) continue;
        read->moveBefore(top);
        read = nullptr;
        moved = true;
      }
    }
  }
}


// Scripted code that returns early (torch 1.13's nn.TransformerEncoderLayer and
// nn.MultiheadAttention return from their inference fast path) leaves the rest
// of the function inside one branch: `if returned: out = fast else: <the whole
// training path>`. A branch is one top-level node, so a segment could only take
// a layer whole. A branch that makes two or more tensors becomes one branch on
// the same condition per piece of it, in order: `if c: placeholders else:
// piece`, where a piece is the nodes up to and including one that makes a tensor
// (the checks and index arithmetic before it go with it). The original branch
// keeps only the selection of its results. The same nodes run on the same values
// in the same order; on the other side of the condition each piece yields
// placeholders that no later node reads, since every later reader sits on the
// same side of the same condition. Constructs of lists and tuples of what earlier
// pieces made run outside the pieces, as they have no effects, so a segment still
// sees through them to the tensors.
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

// Only a top-level branch whose other side makes no tensor (an early return, an
// optional step such as stochastic depth or an input transform) is split.
// Splitting both sides of a branch whose sides both compute (a ShuffleNet
// block's stride test) gave the planner one side's pieces that never run, which
// only diluted its search: scripted shufflenet_v2_x0_5's floor rose from 11.31
// to 11.37 MiB. Splitting the branches inside a branch as well (a multi-head
// attention's early return inside an encoder layer's) wraps their pieces once
// per level: a scripted 2-layer TransformerDecoder had 1376 top-level nodes
// instead of 428, and its rewritten model's code took 31 s to load instead of
// about 1 s, for a floor 1.5 % lower on the encoder.
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

// Scripted code that collects tensors in a list between reads of it (torchvision's
// DenseNet: `features.append(layer(features))`; a U-Net's `skips.append(x)` and
// later `skips.pop()`) mutates the list, so every segment that reads it after an
// edit would write to a value made outside it, and the planner could only cut
// around the whole span. When a list is made at top level by prim::ListConstruct,
// is edited only by top-level aten::append and aten::pop with a constant index,
// and everything else only reads it without keeping it (LibTorch's alias analysis
// says so), what it holds at each top-level node is known: the node reads a fresh
// ListConstruct of those elements instead, a pop's result is the element it
// removes, and the edits go. The same kernels run on the same tensors; only the
// list objects differ, and nothing can observe them.
struct EditedList {
  torch::jit::Value* list;
  std::vector<torch::jit::Node*> edits;  // appends and pops, top level, in order
};

torch::jit::Node* topLevelAncestor(torch::jit::Node* node) {
  while (node->owningBlock()->owningNode()) node = node->owningBlock()->owningNode();
  return node;
}

bool onlyReadsList(const torch::jit::Use& use, const torch::jit::AliasDb& alias_db) {
  torch::jit::Node* user = use.user;
  if (user->kind() == torch::jit::prim::Return) return false;  // a graph or block output keeps the list
  if (alias_db.writesToAlias(user, {user->input(use.offset)})) return false;
  for (const torch::jit::Value* output : user->outputs())
    if (!output->type()->containedTypes().empty() &&
        alias_db.mayContainAlias(const_cast<torch::jit::Value*>(output), user->input(use.offset)))
      return false;  // the list (not only an element) may live on in the output
  return true;
}

// A constant list index (negative from the back, as Python's) counted from the
// front of a list of `length`; nullopt unless it is a constant within the list.
std::optional<size_t> constantIndexFromFront(torch::jit::Value* index_value, size_t length) {
  const std::optional<c10::IValue> index = torch::jit::toIValue(index_value);
  if (!index || !index->isInt()) return std::nullopt;
  const int64_t from_front = index->toInt() < 0 ? static_cast<int64_t>(length) + index->toInt() : index->toInt();
  if (from_front < 0 || from_front >= static_cast<int64_t>(length)) return std::nullopt;
  return static_cast<size_t>(from_front);
}

// The index a top-level pop removes, counted from the front, given the list's length before it.
std::optional<size_t> poppedIndex(torch::jit::Node* pop, size_t length) {
  return constantIndexFromFront(pop->input(1), length);
}

std::optional<EditedList> editedList(torch::jit::Node* construct, const torch::jit::AliasDb& alias_db) {
  EditedList found{construct->output(), {}};
  for (const torch::jit::Use& use : found.list->uses()) {
    torch::jit::Node* user = use.user;
    const bool edit = user->kind() == torch::jit::aten::append || user->kind() == torch::jit::aten::pop;
    if (edit) {
      if (use.offset != 0 || user->inputs().size() != 2 || user->owningBlock() != construct->owningBlock())
        return std::nullopt;
      if (user->kind() == torch::jit::aten::append && user->output()->hasUses()) return std::nullopt;
      found.edits.push_back(user);
    } else if (!onlyReadsList(use, alias_db)) {
      return std::nullopt;
    }
  }
  if (found.edits.empty()) return std::nullopt;
  std::sort(found.edits.begin(), found.edits.end(),
            [](torch::jit::Node* a, torch::jit::Node* b) { return a->isBefore(b); });
  size_t length = construct->inputs().size();
  for (torch::jit::Node* edit : found.edits) {
    if (edit->kind() == torch::jit::aten::append) {
      ++length;
    } else if (poppedIndex(edit, length)) {
      --length;
    } else {
      return std::nullopt;
    }
  }
  return found;
}

void functionalizeEditedLists(const std::shared_ptr<torch::jit::Graph>& graph) {
  std::vector<EditedList> lists;
  {
    const torch::jit::AliasDb alias_db(graph);
    for (torch::jit::Node* node : graph->nodes())
      if (node->kind() == torch::jit::prim::ListConstruct)
        if (std::optional<EditedList> list = editedList(node, alias_db)) lists.push_back(*list);
  }
  for (const EditedList& found : lists) {
    torch::jit::Node* construct = found.list->node();
    const torch::jit::TypePtr element_type = found.list->type()->expectRef<c10::ListType>().getElementType();
    std::vector<torch::jit::Value*> elements(construct->inputs().begin(), construct->inputs().end());
    // Each reading top-level node gets one list of what the list holds before it.
    std::unordered_map<torch::jit::Node*, std::vector<torch::jit::Use>> reads_by_top_level;
    for (const torch::jit::Use& use : found.list->uses())
      if (std::find(found.edits.begin(), found.edits.end(), use.user) == found.edits.end())
        reads_by_top_level[topLevelAncestor(use.user)].push_back(use);
    size_t next_edit = 0;
    for (torch::jit::Node* node = construct->next(); node != graph->return_node(); node = node->next()) {
      if (next_edit < found.edits.size() && node == found.edits[next_edit]) {
        ++next_edit;
        if (node->kind() == torch::jit::aten::append) {
          elements.push_back(node->input(1));
        } else {
          const size_t index = *poppedIndex(node, elements.size());
          node->output()->replaceAllUsesWith(elements[index]);
          elements.erase(elements.begin() + static_cast<std::ptrdiff_t>(index));
        }
        continue;
      }
      auto reads = reads_by_top_level.find(node);
      if (reads == reads_by_top_level.end()) continue;
      torch::jit::Node* copy = graph->createList(element_type, elements);
      copy->insertBefore(node);
      for (const torch::jit::Use& use : reads->second) use.user->replaceInput(use.offset, copy->output());
    }
    for (torch::jit::Node* edit : found.edits) edit->destroy();
    construct->destroy();
  }
}

// A top-level read of a list construct at a constant index (`hs[2]`,
// `features[-1]`) returns that very element; when nothing writes to the list,
// the read is the element. Reading it directly keeps the list's other tensors
// out of the reader's reads: scripted code that collects every block's output
// in a list and returns one of them otherwise keeps them all alive past every
// segment, so nothing could be dropped (traced, the index is already gone).
void foldConstantIndexReads(const std::shared_ptr<torch::jit::Graph>& graph) {
  std::vector<std::pair<torch::jit::Node*, torch::jit::Value*>> folds;
  {
    const torch::jit::AliasDb alias_db(graph);
    for (torch::jit::Node* node : graph->nodes()) {
      if (node->kind() != torch::jit::aten::__getitem__ || node->inputs().size() != 2) continue;
      torch::jit::Node* construct = node->input(0)->node();
      if (construct->kind() != torch::jit::prim::ListConstruct) continue;
      const auto& uses = construct->output()->uses();
      if (!std::all_of(uses.begin(), uses.end(),
                       [&](const torch::jit::Use& use) { return onlyReadsList(use, alias_db); }))
        continue;
      const std::optional<size_t> index = constantIndexFromFront(node->input(1), construct->inputs().size());
      if (index) folds.emplace_back(node, construct->input(*index));
    }
  }
  for (const auto& [read, element] : folds) {
    torch::jit::Node* construct = read->input(0)->node();
    read->output()->replaceAllUsesWith(element);
    read->destroy();
    if (!construct->output()->hasUses()) construct->destroy();
  }
}

}  // namespace

namespace {

void collectNodes(torch::jit::Block* block, std::vector<torch::jit::Node*>& out) {
  for (torch::jit::Node* node : block->nodes()) {
    out.push_back(node);
    for (torch::jit::Block* inner : node->blocks()) collectNodes(inner, out);
  }
}

// Names of the dict attributes the graph only looks up: never assigned, and
// every read of them goes to `key in d` or `d[key]` (nothing can insert into
// or delete from them while the model runs).
std::unordered_set<std::string> lookupOnlyDictAttributes(const std::vector<torch::jit::Node*>& nodes,
                                                         const std::unordered_set<std::string>& assigned) {
  std::unordered_set<std::string> names, disqualified(assigned);
  for (const torch::jit::Node* node : nodes) {
    if (node->kind() != torch::jit::prim::GetAttr || node->output()->type()->kind() != c10::TypeKind::DictType)
      continue;
    const std::string name = node->s(torch::jit::attr::name);
    names.insert(name);
    for (const torch::jit::Use& use : node->output()->uses()) {
      const auto kind = use.user->kind();
      if (use.offset != 0 || (kind != torch::jit::aten::__contains__ && kind != torch::jit::aten::__getitem__))
        disqualified.insert(name);
    }
  }
  for (const std::string& name : disqualified) names.erase(name);
  return names;
}

// Replaces an If whose condition is a constant by the nodes of the block it takes.
bool inlineConstantBranch(torch::jit::Node* branch) {
  const auto condition = torch::jit::toIValue(branch->input(0));
  if (!condition || !condition->isBool()) return false;
  torch::jit::Block* taken = branch->blocks().at(condition->toBool() ? 0 : 1);
  for (auto it = taken->nodes().begin(); it != taken->nodes().end();) {
    torch::jit::Node* node = *it;
    ++it;  // moving the node unlinks it from the block
    node->moveBefore(branch);
  }
  for (size_t i = 0; i < branch->outputs().size(); ++i) branch->output(i)->replaceAllUsesWith(taken->outputs()[i]);
  branch->destroy();
  return true;
}

// torchvision's IntermediateLayerGetter runs `if name in self.return_layers:
// out[self.return_layers[name]] = x` after each stage. Scripted, every stage's
// output goes into a dict inside a branch, so each branch writes the dict and
// each output counts, to LibTorch's alias analysis, as "any tensor that was in
// a container": an in-place op anywhere then "writes" every stage's output and
// no segment may span two stages. A dict attribute that the graph only looks
// up is a constant of the model, as acprof already treats lists and strings
// that the graph never assigns (cut_facts.cpp): `key in d` and `d[key]` with a
// constant key fold to their values, and a branch on a folded condition to the
// block it takes. The rewritten model keeps the fold: the dict is looked up as
// it was when the model was rewritten.
void foldDictAttributeLookups(torch::jit::Graph& graph, const torch::jit::Module& module) {
  std::vector<torch::jit::Node*> nodes;
  collectNodes(graph.block(), nodes);
  const std::unordered_set<std::string> dicts = lookupOnlyDictAttributes(nodes, assignedAttributes(graph));
  if (dicts.empty()) return;
  std::unordered_set<torch::jit::Node*> folded_reads;
  for (torch::jit::Node* node : nodes) {
    const auto kind = node->kind();
    if (kind != torch::jit::aten::__contains__ && kind != torch::jit::aten::__getitem__) continue;
    torch::jit::Node* read = node->input(0)->node();
    if (read->kind() != torch::jit::prim::GetAttr || !dicts.count(read->s(torch::jit::attr::name))) continue;
    const auto key = torch::jit::toIValue(node->input(1));
    const auto attribute = attributeRead(node->input(0), module);
    if (!key || !attribute || !attribute->value().isGenericDict()) continue;
    const c10::impl::GenericDict dict = attribute->value().toGenericDict();
    const auto entry = dict.find(*key);
    c10::IValue folded;
    if (kind == torch::jit::aten::__contains__) {
      folded = entry != dict.end();
    } else if (entry != dict.end() && (entry->value().isString() || entry->value().isInt() || entry->value().isBool())) {
      folded = entry->value();
    } else {
      continue;  // a lookup of an absent key raises where it runs: left as it is
    }
    torch::jit::WithInsertPoint here(node);
    node->output()->replaceAllUsesWith(graph.insertConstant(folded));
    node->destroy();
    folded_reads.insert(read);
  }
  for (bool changed = true; changed;) {
    changed = false;
    nodes.clear();
    collectNodes(graph.block(), nodes);
    for (torch::jit::Node* node : nodes) {
      if (node->kind() == torch::jit::prim::If && inlineConstantBranch(node)) {
        changed = true;
        break;  // the walk's list holds destroyed nodes now
      }
    }
  }
  for (torch::jit::Node* read : folded_reads)
    if (!read->output()->hasUses()) read->destroy();
}

}  // namespace

std::shared_ptr<torch::jit::Graph> inlinedForwardGraph(const torch::jit::Module& module) {
  std::shared_ptr<torch::jit::Graph> graph = module.get_method("forward").graph()->copy();
  torch::jit::Inline(*graph);
  // LibTorch's own pass: it unrolls only loops whose trip count is a constant,
  // whatever their body's size; the unrolled graph computes the same values.
  if (torch::jit::UnrollConstantLoops(graph)) torch::jit::EliminateDeadCode(graph);
  foldDictAttributeLookups(*graph, module);
  hoistAttributeReads(*graph);
  splitBranches(*graph);
  functionalizeEditedLists(graph);
  foldConstantIndexReads(graph);
  return graph;
}

std::vector<torch::jit::Node*> topLevelNodes(torch::jit::Graph& graph) {
  std::vector<torch::jit::Node*> nodes;
  for (torch::jit::Node* node : graph.nodes()) nodes.push_back(node);
  return nodes;
}

std::string moduleScope(const torch::jit::Node* node) {
  // The inliner records, for each inlined call, which submodule instance it
  // came from; the chain of instance names is the module path.
  std::string scope;
  auto callstack = node->callstack();
  while (callstack) {
    const auto& frame = *callstack;
    if (auto instance = frame->module_instance()) {
      const std::string name = instance->instance_name();
      if (!name.empty() && name != "SELF") scope += (scope.empty() ? "" : ".") + name;
    }
    callstack = frame->callee();
  }
  return scope;
}

}  // namespace acprof
