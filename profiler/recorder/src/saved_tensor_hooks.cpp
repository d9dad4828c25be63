#include "saved_tensor_hooks.h"

#include <atomic>
#include <memory>
#include <mutex>
#include <utility>

#include <ATen/core/Tensor.h>
#include <torch/csrc/autograd/engine.h>
#include <torch/csrc/autograd/saved_variable_hooks.h>

namespace acprof {
namespace {

std::mutex g_report_mutex;
std::shared_ptr<const SavedTensorReport> g_report;  // guarded by g_report_mutex
std::atomic<uint64_t> g_next_save_id{1};

std::shared_ptr<const SavedTensorReport> currentReport() {
  std::lock_guard<std::mutex> lock(g_report_mutex);
  return g_report;
}

// Holds what autograd saved, as autograd would: a detached alias of the
// saved tensor keeps its storage (and nothing else) alive until the
// SavedVariable drops its hooks, which is when it would have dropped the data.
// Detached, so that saving a node's own output makes no reference cycle.
class ReportingHooks : public torch::autograd::SavedVariableHooks {
 public:
  void call_pack_hook(const at::Tensor& tensor) override {
    saved_ = tensor.detach();
    report_ = currentReport();
    if (report_ && report_->saved && saved_.has_storage()) {
      save_id_ = g_next_save_id++;
      report_->saved(save_id_, saved_.storage().data());
    }
  }
  at::Tensor call_unpack_hook() override { return saved_; }
  ~ReportingHooks() override {
    if (save_id_ == 0 || !report_->released) return;
    // Report before the storage goes, so the release precedes its free event.
    report_->released(save_id_);
  }

 private:
  at::Tensor saved_;
  std::shared_ptr<const SavedTensorReport> report_;
  uint64_t save_id_ = 0;
};

// The engine that runs backward while a scope is active; everything but the
// saved-variable hooks is LibTorch's own engine.
struct ReportingEngine : public torch::autograd::Engine {
  std::unique_ptr<torch::autograd::SavedVariableHooks> get_default_saved_variable_hooks() override {
    return std::make_unique<ReportingHooks>();
  }
};

torch::autograd::Engine& reportingEngine() {
  // One for the process, never destroyed: LibTorch's engines own worker threads.
  static ReportingEngine* engine = new ReportingEngine();
  return *engine;
}

}  // namespace

SavedTensorHooksScope::SavedTensorHooksScope(SavedTensorReport report) {
  {
    std::lock_guard<std::mutex> lock(g_report_mutex);
    g_report = std::make_shared<const SavedTensorReport>(std::move(report));
  }
  torch::autograd::set_default_engine_stub(&reportingEngine);
}

SavedTensorHooksScope::~SavedTensorHooksScope() {
  torch::autograd::set_default_engine_stub(&torch::autograd::Engine::get_base_engine);
  std::lock_guard<std::mutex> lock(g_report_mutex);
  g_report.reset();
}

}  // namespace acprof
