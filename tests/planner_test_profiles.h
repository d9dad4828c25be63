// Profiles written by hand for the planner tests and the planning benchmark,
// built with the shared ProfileBuilder (profile_builder.h).
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "profile_builder.h"

namespace acprof::testing {

// A chain of n nodes, node i making a_i (activation_bytes) from a_{i-1}, the
// last one the model's output; 1000 B of weights. Backward of node i (from the
// last) allocates the gradient of its input (activation_bytes, none for node 0),
// frees the gradient of its output and then its own a_i. Forward times: time_us[i].
//   forward step i: event i allocates a_i; loss step: no events;
//   backward of node i: alloc g_{i-1}, free g_i, free a_i.
inline Profile chainProfile(int n, int64_t activation_bytes, const std::vector<double>& time_us) {
  ProfileBuilder b;
  b.addStatic(1000, Category::Weight);
  std::vector<int> a(n), g(n, -1);
  for (int i = 0; i < n; ++i) {
    b.node("aten::linear", {i == 0 ? "x" : "a" + std::to_string(i - 1)}, {"a" + std::to_string(i)}, time_us[i]);
    a[i] = b.alloc(activation_bytes);
    if (i > 0) b.readBy(a[i - 1], i);
  }
  b.setCategory(a[n - 1], Category::Output);
  b.loss();
  for (int i = n - 1; i >= 0; --i) {
    b.backward(i);
    if (i > 0) g[i - 1] = b.alloc(activation_bytes);
    if (g[i] >= 0) b.free(g[i]);
    b.free(a[i]);
  }
  return b.finish();
}

// A network of residual blocks shaped like a CNN's training step, for solver
// properties and the planning-time benchmark (bench/plan_bench.cpp). Each block:
//   conv1 -> relu1 -> conv2 (with a forward workspace) -> add(conv2, block input) -> relu2,
// with a prim::Constant before each block (a node that never runs). Activation
// sizes and forward times vary with `seed`; weights are 1/20 of the activations.
// Backward runs the nodes in reverse: each allocates the gradients of its inputs
// (once per tensor), frees its output's gradient, then its own saved output;
// with `record_saves`, the profile says so (saved_by: its own node saved it).
inline Profile residualNetworkProfile(int blocks, uint32_t seed, bool record_saves = false) {
  std::mt19937 random(seed);
  std::uniform_int_distribution<int> size_steps(1, 16);
  std::uniform_real_distribution<double> jitter(0.5, 1.5);
  ProfileBuilder b;
  struct Made {
    int node;
    int tensor;
    std::string value;
    std::vector<int> inputs;  // tensors of earlier nodes it reads
  };
  std::vector<Made> made;
  int64_t weight_bytes = 0;
  int input = b.addStatic(64 * 1024, Category::Input);
  int block_input = input;
  std::string block_value = "x";
  auto add = [&](const std::string& kind, std::vector<int> inputs, std::vector<std::string> input_names,
                 int64_t bytes, double time_us, bool workspace) {
    const std::string value = "v" + std::to_string(made.size());
    const int node = b.node(kind, std::move(input_names), {value}, time_us * jitter(random));
    if (workspace) b.free(b.alloc(bytes * 2));
    const int tensor = b.alloc(bytes);
    for (int t : inputs) b.readBy(t, node);
    made.push_back({node, tensor, value, inputs});
    return std::make_pair(tensor, value);
  };
  for (int block = 0; block < blocks; ++block) {
    const int64_t bytes = 16 * 1024 * size_steps(random);
    weight_bytes += bytes / 20;
    b.node("prim::Constant", {}, {"c" + std::to_string(block)});
    auto conv1 = add("aten::conv2d", {block_input}, {block_value}, bytes, 100, false);
    auto relu1 = add("aten::relu", {conv1.first}, {conv1.second}, bytes, 10, false);
    auto conv2 = add("aten::conv2d", {relu1.first}, {relu1.second}, bytes, 100, true);
    auto sum = add("aten::add", {conv2.first, block_input}, {conv2.second, block_value}, bytes, 10, false);
    auto relu2 = add("aten::relu", {sum.first}, {sum.second}, bytes, 10, false);
    block_input = relu2.first;
    block_value = relu2.second;
  }
  b.setCategory(block_input, Category::Output);
  b.addStatic(weight_bytes, Category::Weight);
  b.loss();
  std::vector<std::string> value_of(b.tensorCount());
  for (const Made& m : made) value_of[m.tensor] = m.value;
  std::vector<int> gradient_of(b.tensorCount(), -1);
  const auto make_gradient = [&](int t) {
    gradient_of[t] = b.alloc(b.bytesOf(t));
    b.gradientOf(gradient_of[t], {value_of[t]});
  };
  make_gradient(block_input);  // d loss / d output
  for (auto it = made.rbegin(); it != made.rend(); ++it) {
    b.backward(it->node);
    for (int t : it->inputs)
      if (t != input && gradient_of[t] < 0) make_gradient(t);
    if (gradient_of[it->tensor] >= 0) b.free(gradient_of[it->tensor]);
    if (record_saves) b.releaseSave(it->tensor, it->node);
    b.free(it->tensor);
  }
  return b.finish();
}

}  // namespace acprof::testing
