#include "alias_analysis_graph.h"

#include <algorithm>
#include <unordered_map>

#include "acprof/cut_facts.h"
#include "acprof/forward_graph.h"

namespace acprof {
namespace {

using torch::jit::Node;
using torch::jit::Value;
namespace prim = torch::jit::prim;
namespace aten = torch::jit::aten;

class AliasAnalysisGraphBuilder {
 public:
  AliasAnalysisGraphBuilder(const torch::jit::Module& module, const std::shared_ptr<torch::jit::Graph>& graph,
                            const std::vector<Node*>& nodes, const std::vector<GraphValue>& values,
                            const std::vector<const Value*>& graph_values)
      : module_(module), graph_(graph), nodes_(nodes), values_(values), graph_values_(graph_values) {}

  // Attributes and inputs first: the module knows exactly which attributes
  // share storage, so each distinct storage becomes one fresh tensor.
  AliasAnalysisGraph build() {
    analysis_graph_ = graph_->copy();
    analysis_nodes_ = topLevelNodes(*analysis_graph_);
    for (const Value* input : analysis_graph_->inputs()) analysis_values_.push_back(const_cast<Value*>(input));
    for (Node* node : analysis_nodes_)
      for (Value* output : node->outputs()) analysis_values_.push_back(output);
    if (analysis_nodes_.empty()) return {analysis_graph_, analysis_nodes_, analysis_values_};
    std::unordered_map<const void*, Value*> fresh_by_storage;
    for (const GraphValue& v : values_) {
      Value* analysed = analysis_values_[v.id];
      const Value* original = graph_values_[v.id];
      Value* replacement = nullptr;
      if (v.producer_node < 0 && v.is_tensor) {
        replacement = freshTensor();
      } else if (v.producer_node >= 0 && nodes_[v.producer_node]->kind() == prim::GetAttr) {
        const auto attribute = attributeRead(original, module_);
        if (!attribute || !attribute->value().isTensor()) continue;
        const at::Tensor held = attribute->value().toTensor();
        const void* storage = held.has_storage() ? static_cast<const void*>(held.storage().unsafeGetStorageImpl())
                                                 : static_cast<const void*>(held.unsafeGetTensorImpl());
        auto [it, added] = fresh_by_storage.emplace(storage, nullptr);
        if (added) it->second = freshTensor();
        replacement = it->second;
      }
      if (!replacement) continue;
      analysed->replaceAllUsesWith(replacement);
      analysis_values_[v.id] = replacement;
    }
    std::unordered_map<const Value*, int> id_of;
    for (size_t id = 0; id < analysis_values_.size(); ++id) id_of[analysis_values_[id]] = static_cast<int>(id);
    bypassPackedPairs(id_of);
    bypassDictEntries(id_of);
    narrowUnpackedPieces(id_of);
    return {analysis_graph_, analysis_nodes_, analysis_values_};
  }

 private:
  // A tensor the analysis graph does not share with anything: its memory is
  // its own. Made at the graph's start, so it is defined wherever it is read.
  Value* freshTensor() {
    torch::jit::WithInsertPoint at_start(analysis_nodes_.front());
    return analysis_graph_->insert(aten::empty, {analysis_graph_->insertConstant(std::vector<int64_t>{0})});
  }

  void replacePiece(Value* piece, Value* replacement, const std::unordered_map<const Value*, int>& id_of) {
    piece->replaceAllUsesWith(replacement);
    if (const auto it = id_of.find(piece); it != id_of.end()) analysis_values_[it->second] = replacement;
  }

  // AliasDb also counts every tensor put into a tuple or list as the wildcard.
  // A submodule call that returns a tuple leaves, once inlined, a
  // TupleConstruct whose only reader is the TupleUnpack of the caller (a
  // traced LSTMCell's (h, c)): then each unpacked value is exactly the tensor
  // packed, and nothing else reaches it through the container. The analysis
  // reads the packed tensors directly and packs fresh ones in their place, so
  // an in-place write to one (the cell's c = f*c + i*g) writes that tensor,
  // not every tensor of every tuple.
  void bypassPackedPairs(const std::unordered_map<const Value*, int>& id_of) {
    for (Node* unpack : analysis_nodes_) {
      const bool tuple = unpack->kind() == prim::TupleUnpack;
      if ((!tuple && unpack->kind() != prim::ListUnpack) || unpack->input(0)->uses().size() != 1) continue;
      Node* pack = unpack->input(0)->node();
      if (pack->kind() != (tuple ? prim::TupleConstruct : prim::ListConstruct) ||
          pack->inputs().size() != unpack->outputs().size())
        continue;
      for (size_t i = 0; i < pack->inputs().size(); ++i) {
        Value* packed = pack->input(i);
        if (packed->type()->kind() != c10::TypeKind::TensorType) continue;
        replacePiece(unpack->output(i), packed, id_of);
        pack->replaceInput(i, freshTensor());
      }
    }
  }

  // The same for a dict that the graph fills and reads by constant keys, all
  // at top level, and does not return (torchvision's IntermediateLayerGetter,
  // once its lookups of return_layers are folded: forward_graph.cpp): a read
  // of a key is exactly the tensor last stored under it before the read, so
  // the analysis reads that tensor and stores fresh ones.
  void bypassDictEntries(const std::unordered_map<const Value*, int>& id_of) {
    const auto constant_key = [](const Node* node) { return torch::jit::toIValue(node->input(1)); };
    for (Node* maker : analysis_nodes_) {
      const bool empty_dict = (maker->kind() == aten::dict || maker->kind() == prim::DictConstruct) &&
                              maker->inputs().empty() && maker->outputs().size() == 1;
      if (!empty_dict) continue;
      Value* dict = maker->output();
      if (std::find(analysis_graph_->outputs().begin(), analysis_graph_->outputs().end(), dict) !=
          analysis_graph_->outputs().end())
        continue;
      std::vector<Node*> stores, reads;
      bool plain = true;
      for (const torch::jit::Use& use : dict->uses()) {
        const bool top_level = use.user->owningBlock() == analysis_graph_->block();
        const bool keyed = use.offset == 0 && constant_key(use.user).has_value();
        if (top_level && keyed && use.user->kind() == aten::_set_item &&
            use.user->input(2)->type()->kind() == c10::TypeKind::TensorType) {
          stores.push_back(use.user);
        } else if (top_level && keyed && use.user->kind() == aten::__getitem__) {
          reads.push_back(use.user);
        } else {
          plain = false;
        }
      }
      if (!plain || stores.empty()) continue;
      for (Node* read : reads) {
        Node* last_store = nullptr;
        for (Node* store : stores)
          if (store->isBefore(read) && *constant_key(store) == *constant_key(read) &&
              (!last_store || last_store->isBefore(store)))
            last_store = store;
        if (last_store) replacePiece(read->output(), last_store->input(2), id_of);
      }
      for (Node* store : stores) store->replaceInput(2, freshTensor());
    }
  }

  // A tensor op that returns Tensor[] (chunk, split, unbind...) hands its
  // pieces out through prim::ListUnpack, and AliasDb counts every element of a
  // list as the wildcard: an in-place op on one piece (a traced LSTMCell's
  // sigmoid_ on its gate chunks) "may write" every tensor that was ever in a
  // list, so no segment around it would be legal. Where the list has no other
  // use and the op reads one tensor, each piece is memory of that tensor (a
  // view, or fresh memory by the schema, which unsafe_chunk's pieces are not),
  // so the analysis reads each piece as an alias of it: a superset of the
  // truth, as wide as the op's input and no wider.
  void narrowUnpackedPieces(const std::unordered_map<const Value*, int>& id_of) {
    for (Node* unpack : analysis_nodes_) {
      if (unpack->kind() != prim::ListUnpack || unpack->input(0)->uses().size() != 1) continue;
      Node* maker = unpack->input(0)->node();
      Value* source = nullptr;
      int tensor_inputs = 0;
      for (Value* input : maker->inputs()) {
        const auto kind = input->type()->kind();
        if (kind == c10::TypeKind::TensorType) {
          source = input;
          ++tensor_inputs;
        } else if (kind == c10::TypeKind::ListType || kind == c10::TypeKind::TupleType ||
                   kind == c10::TypeKind::OptionalType || kind == c10::TypeKind::DictType) {
          tensor_inputs = 2;  // a container may bring tensors too: leave it to AliasDb
        }
      }
      const c10::FunctionSchema* schema = maker->maybeSchema();
      const auto list_type = unpack->input(0)->type()->cast<c10::ListType>();
      if (tensor_inputs != 1 || !schema || schema->is_mutable() || maker->hasSideEffects() ||
          maker->outputs().size() != 1 || !list_type ||
          list_type->getElementType()->kind() != c10::TypeKind::TensorType)
        continue;
      torch::jit::WithInsertPoint after(unpack->next());
      for (Value* piece : unpack->outputs()) {
        if (piece->type()->kind() != c10::TypeKind::TensorType) continue;
        replacePiece(piece, analysis_graph_->insert(aten::alias, {source}), id_of);
      }
      // chunk's schema also sends its input to the wildcard ("a -> *"): the
      // list now reaches nothing, so the op reads a fresh tensor instead.
      for (size_t i = 0; i < maker->inputs().size(); ++i)
        if (maker->input(i) == source) maker->replaceInput(i, freshTensor());
    }
  }


  const torch::jit::Module& module_;
  std::shared_ptr<torch::jit::Graph> graph_;
  const std::vector<Node*>& nodes_;
  const std::vector<GraphValue>& values_;
  const std::vector<const Value*>& graph_values_;
  std::shared_ptr<torch::jit::Graph> analysis_graph_;
  std::vector<Node*> analysis_nodes_;
  std::vector<Value*> analysis_values_;
};

}  // namespace

AliasAnalysisGraph aliasAnalysisGraph(const torch::jit::Module& module, const std::shared_ptr<torch::jit::Graph>& graph,
                                      const std::vector<Node*>& nodes, const std::vector<GraphValue>& values,
                                      const std::vector<const Value*>& graph_values) {
  return AliasAnalysisGraphBuilder(module, graph, nodes, values, graph_values).build();
}

}  // namespace acprof
