// The legality library on real TorchScript graphs: roles, reads through
// containers, writes through LibTorch's alias analysis, unrolled loops.
#include "acprof/cut_facts.h"

#include <algorithm>

#include <gtest/gtest.h>
#include <torch/script.h>

#include <torch/csrc/jit/api/function_impl.h>

#include "acprof/cut_rules.h"
#include "acprof/forward_graph.h"

namespace acprof {
namespace {

struct Described {
  std::shared_ptr<torch::jit::Graph> graph;
  GraphCutFacts facts;

  const ForwardNode& node(const std::string& kind, int occurrence = 0) const {
    for (const ForwardNode& n : facts.nodes)
      if (n.kind == kind && occurrence-- == 0) return n;
    throw std::runtime_error("no node " + kind);
  }
  std::vector<std::string> names(const std::vector<int>& ids) const {
    std::vector<std::string> out;
    for (int id : ids) out.push_back(facts.values[id].name);
    std::sort(out.begin(), out.end());
    return out;
  }
  std::string outputOf(const std::string& kind, int occurrence = 0) const { return node(kind, occurrence).outputs.at(0); }
  // The last value whose debug name starts with `prefix` ("shape" for %shape.1), or null.
  const GraphValue* valueNamed(const std::string& prefix) const {
    const GraphValue* found = nullptr;
    for (const GraphValue& v : facts.values)
      if (v.name.rfind(prefix, 0) == 0) found = &v;
    return found;
  }
};

Described describe(torch::jit::Module& module) {
  Described d;
  d.graph = inlinedForwardGraph(module);
  d.facts = describeCutFacts(module, d.graph);
  return d;
}

torch::jit::Module moduleWithWeight(const std::string& name) {
  torch::jit::Module module(name);
  module.register_parameter("w", at::randn({8, 8}).requires_grad_(), false);
  return module;
}

// LibTorch's AliasDb puts all module attributes in one wildcard set; the
// facts must still say batch norm writes its running statistics and nothing else.
TEST(CutFacts, BatchNormWritesOnlyItsRunningStatistics) {
  torch::jit::Module module = moduleWithWeight("acprof_test.BatchNorm");
  module.register_parameter("gamma", at::ones({8}).requires_grad_(), false);
  module.register_buffer("running_mean", at::zeros({8}));
  module.register_buffer("running_var", at::ones({8}));
  module.define(R"JIT(
def forward(self, x):
    h = torch.matmul(x, self.w)
    return torch.batch_norm(h, self.gamma, None, self.running_mean, self.running_var, True, 0.1, 1e-5, False)
)JIT");
  const Described d = describe(module);
  const ForwardNode& bn = d.node("aten::batch_norm");
  EXPECT_EQ(bn.role, CutRole::Compute);
  EXPECT_EQ(d.names(bn.writes), (std::vector<std::string>{"running_mean", "running_var"}));
  EXPECT_TRUE(d.node("aten::matmul").writes.empty());
  for (int v : bn.writes) EXPECT_FALSE(d.facts.values[v].requires_grad) << d.facts.values[v].name;
}

TEST(CutFacts, ListConstructIsDuplicableAndItsReadersReadTheElements) {
  torch::jit::Module module = moduleWithWeight("acprof_test.Cat");
  module.define(R"JIT(
def forward(self, x):
    h = torch.matmul(x, self.w)
    return torch.cat([torch.relu(h), torch.sigmoid(h)], 1)
)JIT");
  const Described d = describe(module);
  EXPECT_EQ(d.node("prim::ListConstruct").role, CutRole::Duplicable);
  std::vector<std::string> expected = {d.outputOf("aten::relu"), d.outputOf("aten::sigmoid")};
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(d.names(d.node("aten::cat").reads), expected);
}

int countKind(const Described& d, const std::string& kind) {
  return static_cast<int>(std::count_if(d.facts.nodes.begin(), d.facts.nodes.end(),
                                        [&](const ForwardNode& n) { return n.kind == kind; }));
}

// A list that grows by top-level appends between reads (DenseNet's features)
// becomes one ListConstruct per reader, holding what was appended before it:
// the readers read the elements, and no node writes a value made before it.
TEST(CutFacts, AppendOnlyListsBecomeOneListPerReader) {
  torch::jit::Module module = moduleWithWeight("acprof_test.DenseAppend");
  module.define(R"JIT(
def forward(self, x):
    features = [torch.matmul(x, self.w)]
    features.append(torch.relu(features[0]))
    h = torch.cat(features, 1)
    features.append(torch.sigmoid(h))
    return torch.cat(features, 1)
)JIT");
  const Described d = describe(module);
  EXPECT_EQ(countKind(d, "aten::append"), 0);
  EXPECT_EQ(countKind(d, "prim::ListConstruct"), 2);  // for the first cat and the second; features[0] is folded
  for (const ForwardNode& n : d.facts.nodes) {
    if (n.kind == "prim::ListConstruct") {
      EXPECT_EQ(n.role, CutRole::Duplicable);
    }
    EXPECT_TRUE(n.writes.empty()) << n.kind;
  }
  const std::string first = d.outputOf("aten::matmul");
  std::vector<std::string> two = {first, d.outputOf("aten::relu")};
  std::vector<std::string> three = {first, d.outputOf("aten::relu"), d.outputOf("aten::sigmoid")};
  std::sort(two.begin(), two.end());
  std::sort(three.begin(), three.end());
  EXPECT_EQ(d.names(d.node("aten::cat", 0).reads), two);
  EXPECT_EQ(d.names(d.node("aten::cat", 1).reads), three);
}

// Scripted code that keeps every block's output in a list and returns one of
// them (`hs[1]`, `hs[-1]`): a read at a constant index of a list nothing
// writes is the element itself, so the reader does not read the others and a
// segment may drop them. A list written after it is made keeps its reads.
TEST(CutFacts, ReadsOfAListAtAConstantIndexAreTheElement) {
  torch::jit::Module module = moduleWithWeight("acprof_test.CollectedOutputs");
  module.define(R"JIT(
def forward(self, x):
    h = torch.relu(torch.matmul(x, self.w))
    hs = [h]
    g = torch.sigmoid(torch.matmul(h, self.w))
    hs.append(g)
    k = torch.tanh(torch.matmul(g, self.w))
    hs.append(k)
    return hs[0] + hs[-1]
)JIT");
  const Described d = describe(module);
  EXPECT_EQ(countKind(d, "aten::__getitem__"), 0);
  std::vector<std::string> read = {d.outputOf("aten::relu"), d.outputOf("aten::tanh")};
  std::sort(read.begin(), read.end());
  EXPECT_EQ(d.names(d.node("aten::add").reads), read) << "the sum reads the sigmoid's output too";

  torch::jit::Module written = moduleWithWeight("acprof_test.WrittenList");
  written.define(R"JIT(
def forward(self, x):
    hs = [torch.relu(torch.matmul(x, self.w)), torch.sigmoid(x)]
    hs[0] = torch.tanh(x)
    return hs[0] + x
)JIT");
  EXPECT_EQ(countKind(describe(written), "aten::__getitem__"), 1);
}

// A U-Net keeps its skips in a list and pops them on the way up: a pop with a
// constant index is the element it removes.
TEST(CutFacts, PopsWithAConstantIndexBecomeTheElementTheyRemove) {
  torch::jit::Module module = moduleWithWeight("acprof_test.Skips");
  module.define(R"JIT(
def forward(self, x):
    skips = [torch.matmul(x, self.w)]
    skips.append(torch.relu(skips[0]))
    up = skips.pop()
    return torch.cat([torch.sigmoid(up), skips.pop()], 1)
)JIT");
  const Described d = describe(module);
  EXPECT_EQ(countKind(d, "aten::append"), 0);
  EXPECT_EQ(countKind(d, "aten::pop"), 0);
  EXPECT_EQ(d.node("aten::sigmoid").inputs, (std::vector<std::string>{d.outputOf("aten::relu")}));
  std::vector<std::string> cat = {d.outputOf("aten::sigmoid"), d.outputOf("aten::matmul")};
  std::sort(cat.begin(), cat.end());
  EXPECT_EQ(d.names(d.node("aten::cat").reads), cat);
}

// Where what a list holds depends on the path taken (an append inside a
// branch) or on the input (a pop's index), or the list outlives the graph (it
// is returned), the list and its edits stay: its construct is computed and the
// append writes it.
TEST(CutFacts, ListsEditedInBranchesByComputedIndicesOrReturnedKeepTheirEdits) {
  for (const char* body : {R"JIT(
def forward(self, x):
    features = [torch.matmul(x, self.w)]
    if bool(x.sum() > 0):
        features.append(torch.relu(features[0]))
    return torch.cat(features, 1)
)JIT",
                           R"JIT(
def forward(self, x):
    features = [torch.matmul(x, self.w)]
    features.append(torch.relu(features[0]))
    return features
)JIT",
                           R"JIT(
def forward(self, x):
    features = [torch.matmul(x, self.w)]
    features.append(torch.relu(features[0]))
    first = features.pop(x.size(0) - 8)
    return torch.cat([first, features[0]], 1)
)JIT"}) {
    torch::jit::Module module = moduleWithWeight("acprof_test.Append");
    module.define(body);
    const Described d = describe(module);
    EXPECT_EQ(d.node("prim::ListConstruct").role, CutRole::Compute) << body;
    const std::string list = d.outputOf("prim::ListConstruct");
    EXPECT_TRUE(std::any_of(d.facts.nodes.begin(), d.facts.nodes.end(), [&](const ForwardNode& n) {
      const std::vector<std::string> written = d.names(n.writes);
      return std::find(written.begin(), written.end(), list) != written.end();
    })) << body;
  }
}

TEST(CutFacts, AssigningAModuleAttributeIsABarrier) {
  torch::jit::Module module = moduleWithWeight("acprof_test.Counter");
  module.register_attribute("calls", c10::IntType::get(), int64_t{0});
  module.define(R"JIT(
def forward(self, x):
    self.calls = self.calls + 1
    return torch.matmul(x, self.w)
)JIT");
  const Described d = describe(module);
  const ForwardNode& set = d.node("prim::SetAttr");
  EXPECT_EQ(set.role, CutRole::Barrier);
  EXPECT_NE(set.barrier_reason.find("module's attributes"), std::string::npos) << set.barrier_reason;
  EXPECT_EQ(d.node("aten::matmul").role, CutRole::Compute);
}

// What each kind of value becomes in a checkpoint it enters is recorded once,
// from the graph: the planner counts its bytes from this, the rewriter makes
// it with the same function.
TEST(CutFacts, EachValueThatEntersACheckpointRecordsTheFormItTakesThere) {
  torch::jit::Module module = moduleWithWeight("acprof_test.Forms");
  module.register_attribute("bias", c10::OptionalType::ofTensor(), at::zeros({8}));
  module.define(R"JIT(
def forward(self, x, count: int, scale: float, flag: bool, mask: Optional[Tensor]):
    h = torch.matmul(x, self.w) * scale + count
    bias = self.bias
    if bias is not None:
        h = h + bias
    if mask is not None:
        h = h * mask
    if flag:
        h = torch.relu(h)
    return h
)JIT");
  const Described d = describe(module);
  const std::pair<std::string, InputForm> expected[] = {{"x", InputForm::Tensor},
                                                        {"count", InputForm::Number},
                                                        {"scale", InputForm::Number},
                                                        {"flag", InputForm::Bool},
                                                        {"mask", InputForm::OptionalWithFlag}};
  for (const auto& [name, form] : expected) {
    const GraphValue* value = d.valueNamed(name);
    ASSERT_NE(value, nullptr) << name;
    EXPECT_EQ(value->entry, ValueEntry::Input) << name;
    EXPECT_EQ(value->input_form, form) << name << " recorded as " << inputFormName(value->input_form);
  }
  int held_optionals = 0;
  for (const GraphValue& value : d.facts.values) {
    if (value.producer_node < 0 || d.facts.nodes[value.producer_node].kind != "prim::GetAttr") continue;
    if (value.type != "Optional[Tensor]") continue;
    ++held_optionals;
    EXPECT_EQ(value.entry, ValueEntry::Input) << value.name;
    EXPECT_EQ(value.input_form, InputForm::HeldOptional) << value.name;
  }
  EXPECT_EQ(held_optionals, 1);
}

// A branch that raises is recomputed like any node: forward did not raise.
TEST(CutFacts, BranchesThatOnlyRaiseAreComputeNodes) {
  torch::jit::Module module = moduleWithWeight("acprof_test.Check");
  module.define(R"JIT(
def forward(self, x):
    assert x.dim() == 2, "expected a matrix"
    return torch.matmul(x, self.w)
)JIT");
  const Described d = describe(module);
  EXPECT_EQ(d.node("prim::If").role, CutRole::Compute);
}

TEST(CutFacts, ConstantTripLoopsAreUnrolledIntoTopLevelNodes) {
  torch::jit::Module module = moduleWithWeight("acprof_test.Loop");
  module.define(R"JIT(
def forward(self, x):
    for _ in range(3):
        x = torch.relu(torch.matmul(x, self.w))
    return x
)JIT");
  const Described d = describe(module);
  const auto count = [&](const std::string& kind) {
    return std::count_if(d.facts.nodes.begin(), d.facts.nodes.end(), [&](const ForwardNode& n) { return n.kind == kind; });
  };
  EXPECT_EQ(count("prim::Loop"), 0);
  EXPECT_EQ(count("aten::matmul"), 3);
  EXPECT_EQ(count("aten::relu"), 3);
}

// Scripted code with an early return keeps the rest of the function in one
// branch. It becomes one branch per piece on the same condition, so segments can
// start and end between them, and the graph computes what it computed before on
// both sides of the condition.
TEST(CutFacts, EarlyReturnBranchesAreSplitIntoPiecesThatComputeTheSame) {
  torch::jit::Module module = moduleWithWeight("acprof_test.EarlyReturn");
  module.define(R"JIT(
def forward(self, x, skip: bool):
    if skip:
        return x
    scale = float(x.size(0))
    h = torch.relu(torch.matmul(x * scale, self.w))
    parts = [h, torch.sigmoid(torch.matmul(h, self.w))]
    return torch.cat(parts, 1) / scale
)JIT");
  const Described d = describe(module);
  // The rest of the function (the branch not taken by the return) becomes seven
  // branches: size, float and mul (the number is read inside that piece and
  // after it), matmul, relu, matmul, sigmoid, cat, div. Its list construct runs
  // outside them, and the original branch selects what the side taken computed.
  EXPECT_EQ(countKind(d, "prim::If"), 7 + 1);
  EXPECT_EQ(countKind(d, "prim::ListConstruct"), 1);
  EXPECT_EQ(d.node("prim::ListConstruct").role, CutRole::Duplicable);
  const CutRules rules(d.facts.nodes, d.facts.values, d.facts.graph_outputs);
  std::vector<int> pieces;
  for (const ForwardNode& n : d.facts.nodes)
    if (n.kind == "prim::If") pieces.push_back(n.id);
  // The relu's branch alone is a legal segment: a tensor enters, a tensor leaves.
  EXPECT_EQ(rules.problem(pieces[2], pieces[2]), "");
  EXPECT_EQ(rules.problem(pieces[2], pieces[4]), "");

  torch::jit::GraphFunction split("split", d.graph, nullptr);
  const at::Tensor x = at::randn({4, 8});
  for (const bool skip : {true, false}) {
    const at::Tensor expected = module.forward({x, skip}).toTensor();
    const at::Tensor actual = split({module._ivalue(), x, skip}).toTensor();
    EXPECT_TRUE(at::equal(expected, actual)) << "skip=" << skip;
  }
}

// Where both sides compute, only one of them runs, and the other's pieces would
// be nodes that never run: the branch stays one node.
TEST(CutFacts, BranchesWhoseSidesBothComputeStayWhole) {
  torch::jit::Module module = moduleWithWeight("acprof_test.TwoPaths");
  module.define(R"JIT(
def forward(self, x, wide: bool):
    if wide:
        y = torch.relu(torch.matmul(x, self.w))
    else:
        y = torch.sigmoid(torch.matmul(x, self.w))
    return y
)JIT");
  const Described d = describe(module);
  EXPECT_EQ(countKind(d, "prim::If"), 1);
}

// A plain module attribute read inside a segment travels as a constant; one
// the graph assigns cannot.
TEST(CutFacts, PlainAttributesAreConstantsUnlessAssigned) {
  torch::jit::Module module = moduleWithWeight("acprof_test.Shape");
  module.register_attribute("shape", c10::ListType::ofInts(), std::vector<int64_t>{-1, 4});
  module.define(R"JIT(
def forward(self, x):
    return torch.matmul(x, self.w).reshape(self.shape)
)JIT");
  const Described d = describe(module);
  const GraphValue* shape = d.valueNamed("shape");
  ASSERT_NE(shape, nullptr);
  EXPECT_EQ(shape->entry, ValueEntry::Constant);
}

// A scripted nn.LSTM or nn.GRU reads its weights as one List[Tensor]
// attribute (_flat_weights). The graph never assigns it, so its length is the
// model's: it crosses a segment's boundary as its tensors, and the op can be
// recomputed. An assigned list is not the model's to unpack.
TEST(CutFacts, AListOfTensorsTheModuleHoldsEntersAsItsElementsUnlessAssigned) {
  torch::jit::Module module = moduleWithWeight("acprof_test.FlatWeights");
  module.register_attribute("flat", c10::ListType::ofTensors(),
                            c10::List<at::Tensor>({at::randn({8, 8}).requires_grad_(), at::randn({8}).requires_grad_()}));
  module.define(R"JIT(
def forward(self, x):
    h = torch.matmul(x, self.w)
    return torch.addmm(self.flat[1], h, self.flat[0])
)JIT");
  const Described d = describe(module);
  const GraphValue* flat = d.valueNamed("flat");
  ASSERT_NE(flat, nullptr);
  EXPECT_EQ(flat->entry, ValueEntry::Elements);
  const CutRules rules(d.facts.nodes, d.facts.values, d.facts.graph_outputs);
  const int addmm = d.node("aten::addmm").id;
  EXPECT_EQ(rules.problem(d.node("aten::matmul").id, addmm), "");

  torch::jit::Module assigned = moduleWithWeight("acprof_test.AssignedFlatWeights");
  assigned.register_attribute("flat", c10::ListType::ofTensors(), c10::List<at::Tensor>({at::randn({8, 8})}));
  assigned.define(R"JIT(
def forward(self, x):
    self.flat = [x]
    return torch.matmul(self.flat[0], self.w)
)JIT");
  const Described a = describe(assigned);
  for (const GraphValue& v : a.facts.values)
    if (v.type == "List[Tensor]") {
      EXPECT_NE(v.entry, ValueEntry::Elements) << v.name;
    }
}

// AliasDb counts every element of a list as one wildcard memory: an in-place
// op on one chunk of a tensor would "write" the chunks of every other tensor
// too, and no segment around it could be cut (a traced LSTMCell's sigmoid_ on
// its gates). A chunk is memory of the tensor it was cut from, and only that.
// Scripted nn.MultiheadAttention canonicalises a mask as zeros_like(mask)
// filled in place inside a branch. AliasDb, which knows no order, puts that
// tensor in the wildcard set once a list holds it, so the branch seemed to
// write every tensor; a write to a tensor the branch made itself is no write
// outside it. A branch that writes a tensor made before it still does.
TEST(CutFacts, ABranchThatFillsATensorItMadeWritesNothingOutside) {
  torch::jit::Module module = moduleWithWeight("acprof_test.MaskBranch");
  module.define(R"JIT(
def forward(self, x, mask: Optional[Tensor]):
    h = torch.matmul(x, self.w)
    m: Optional[Tensor] = None
    if mask is not None:
        if not torch.is_floating_point(mask):
            m = torch.zeros_like(mask, dtype=h.dtype).masked_fill_(mask, -1.0)
        else:
            m = mask
    g = h
    if m is not None:
        g = h + m
        if mask is not None:
            h.add_(1.0)
    parts = [g, h, x]
    return torch.cat(parts, 0)
)JIT");
  const Described d = describe(module);
  // The branches are split into pieces (forward_graph.cpp); of them, only the
  // one holding the add_ writes, and it writes the matmul's output.
  std::vector<std::vector<std::string>> writing_branches;
  for (const ForwardNode& n : d.facts.nodes)
    if (n.kind == "prim::If" && !n.writes.empty()) writing_branches.push_back(d.names(n.writes));
  ASSERT_EQ(writing_branches.size(), 1u) << ::testing::PrintToString(writing_branches);
  const std::vector<std::string>& written = writing_branches[0];
  EXPECT_NE(std::find(written.begin(), written.end(), d.outputOf("aten::matmul")), written.end())
      << ::testing::PrintToString(written);
}

TEST(CutFacts, AnInPlaceWriteToAChunkWritesOnlyTheTensorItWasCutFrom) {
  torch::jit::Module module = moduleWithWeight("acprof_test.Gates");
  module.define(R"JIT(
def forward(self, x):
    h = torch.matmul(x, self.w)
    a, b = torch.chunk(h, 2, 1)
    a.sigmoid_()
    g = torch.relu(x)
    p, q = torch.chunk(g, 2, 1)
    return a * p + b * q
)JIT");
  const Described d = describe(module);
  const ForwardNode& sigmoid = d.node("aten::sigmoid_");
  const std::vector<std::string> written = d.names(sigmoid.writes);
  const auto writes = [&](const std::string& name) {
    return std::find(written.begin(), written.end(), name) != written.end();
  };
  EXPECT_TRUE(writes(d.outputOf("aten::matmul")));
  EXPECT_FALSE(writes(d.outputOf("aten::relu")));
  for (const std::string& piece : d.node("prim::ListUnpack", 1).outputs) EXPECT_FALSE(writes(piece)) << piece;
  EXPECT_TRUE(d.node("aten::relu").writes.empty());
}

// AliasDb also counts every tensor put into a tuple as the wildcard. An
// inlined call that returns a tuple unpacked at once hands on exactly the
// tensors it packed: an in-place write to one writes that one alone.
TEST(CutFacts, AnInPlaceWriteToAnUnpackedTupleElementWritesOnlyThatTensor) {
  torch::jit::Module module = moduleWithWeight("acprof_test.Cell");
  module.define(R"JIT(
def step(self, x) -> Tuple[Tensor, Tensor]:
    return torch.matmul(x, self.w), torch.relu(x)

def forward(self, x):
    c, r = self.step(x)
    c.mul_(2.0)
    d, e = self.step(x)
    return c + r + d + e
)JIT");
  const Described d = describe(module);
  const ForwardNode& mul = d.node("aten::mul_");
  const std::vector<std::string> written = d.names(mul.writes);
  EXPECT_FALSE(written.empty());
  const ForwardNode& second = d.node("prim::TupleUnpack", 1);
  for (const std::string& other : second.outputs)
    EXPECT_EQ(std::find(written.begin(), written.end(), other), written.end()) << other;
  for (const std::string& other : d.node("prim::TupleUnpack", 0).outputs)
    if (other != mul.inputs.at(0)) {
      EXPECT_EQ(std::find(written.begin(), written.end(), other), written.end()) << other;
    }
}

// torchvision's IntermediateLayerGetter, scripted: after each stage, `if name
// in self.return_layers: out[self.return_layers[name]] = x`. The dict
// attribute is only looked up, so the lookups fold and each branch becomes
// what it takes: a store at top level, or nothing.
torch::jit::Module layerGetter() {
  torch::jit::Module module = moduleWithWeight("acprof_test.LayerGetter");
  c10::impl::GenericDict return_layers(c10::StringType::get(), c10::StringType::get());
  return_layers.insert("a", "low");
  return_layers.insert("c", "high");
  module.register_attribute("return_layers", c10::DictType::create(c10::StringType::get(), c10::StringType::get()),
                            return_layers);
  module.define(R"JIT(
def forward(self, x):
    out: Dict[str, Tensor] = {}
    h = torch.matmul(x, self.w)
    if "a" in self.return_layers:
        out[self.return_layers["a"]] = h
    g = torch.relu(h)
    if "b" in self.return_layers:
        out[self.return_layers["b"]] = g
    k = torch.sigmoid(g)
    k.add_(1.0)
    if "c" in self.return_layers:
        out[self.return_layers["c"]] = k
    return out["low"] * out["high"]
)JIT");
  return module;
}

TEST(CutFacts, LookupsOfADictAttributeTheGraphNeverChangesFoldWithTheirBranches) {
  torch::jit::Module module = layerGetter();
  const Described d = describe(module);
  int stores = 0;
  for (const ForwardNode& n : d.facts.nodes) {
    EXPECT_NE(n.kind, "prim::If");
    EXPECT_NE(n.kind, "aten::__contains__");
    stores += n.kind == "aten::_set_item";
  }
  EXPECT_EQ(stores, 2);  // "a" and "c"; the branch on "b" took nothing
  // The fold keeps what forward computes.
  const at::Tensor x = at::randn({4, 8});
  const at::Tensor h = at::matmul(x, module.attr("w").toTensor());
  const at::Tensor expected = h * (at::sigmoid(at::relu(h)) + 1.0);
  EXPECT_TRUE(at::allclose(module.forward({x}).toTensor(), expected));
}

// A dict filled and read by constant keys, as the fold leaves the getter's:
// a read is the tensor stored under its key, so an in-place write to one
// entry writes that tensor, not every tensor that was in a container.
TEST(CutFacts, AnInPlaceWriteToADictEntryWritesOnlyThatTensor) {
  torch::jit::Module module = layerGetter();
  const Described d = describe(module);
  const std::vector<std::string> written = d.names(d.node("aten::add_").writes);
  EXPECT_NE(std::find(written.begin(), written.end(), d.outputOf("aten::sigmoid")), written.end());
  EXPECT_EQ(std::find(written.begin(), written.end(), d.outputOf("aten::matmul")), written.end());
  EXPECT_EQ(std::find(written.begin(), written.end(), d.outputOf("aten::relu")), written.end());
}

}  // namespace
}  // namespace acprof
