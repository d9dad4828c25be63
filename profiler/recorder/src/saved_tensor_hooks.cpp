#include "saved_tensor_hooks.h"

#include <atomic>
#include <memory>
#include <mutex>
#include <utility>

#include <ATen/core/Tensor.h>
#include <c10/util/Exception.h>
#include <torch/csrc/autograd/engine.h>
#include <torch/csrc/autograd/saved_variable_hooks.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

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
//
// With a hook in place, autograd skips its check that a saved tensor was not
// written in place after it was saved (SavedVariable::unpack), so the hook
// makes that check itself: the alias shares the tensor's version counter. A
// model that writes to what autograd saved then fails under the recorder as
// it fails in the user's own loop, and no separate plain step is needed to
// find out.
class ReportingHooks : public torch::autograd::SavedVariableHooks {
 public:
  explicit ReportingHooks(std::shared_ptr<const SavedTensorReport> report) : report_(std::move(report)) {}
  void call_pack_hook(const at::Tensor& tensor) override {
    saved_ = tensor.detach();
    saved_version_ = saved_._version();
    if (report_->saved && saved_.has_storage()) {
      save_id_ = g_next_save_id++;
      report_->saved(save_id_, saved_.storage().data());
    }
  }
  at::Tensor call_unpack_hook() override {
    if (saved_.defined() && saved_._version() != saved_version_) throwModifiedInPlace();
    return saved_;
  }
  ~ReportingHooks() override {
    if (save_id_ == 0 || !report_->released) return;
    // Report before the storage goes, so the release precedes its free event.
    report_->released(save_id_);
  }

 private:
  // Autograd's own words (saved_variable.cpp), which the user can search for.
  // Not the node that made the tensor, as autograd names it: a hook that held
  // that node would keep alive the node that saved its own output.
  [[noreturn]] void throwModifiedInPlace() const {
    TORCH_CHECK(false, fmt::format("one of the variables needed for gradient computation has been modified by an "
                                   "inplace operation: [{} [{}]] is at version {}; expected version {} instead",
                                   saved_.toString(), fmt::join(saved_.sizes(), ", "), saved_._version(),
                                   saved_version_));
  }

  at::Tensor saved_;
  int64_t saved_version_ = 0;
  std::shared_ptr<const SavedTensorReport> report_;
  uint64_t save_id_ = 0;
};

// LibTorch's engine, but for the saved-variable hooks: one per save while a
// scope is active, none outside one.
struct ReportingEngine : public torch::autograd::Engine {
  std::unique_ptr<torch::autograd::SavedVariableHooks> get_default_saved_variable_hooks() override {
    std::shared_ptr<const SavedTensorReport> report = currentReport();
    if (!report) return nullptr;
    return std::make_unique<ReportingHooks>(std::move(report));
  }
};

torch::autograd::Engine& reportingEngine() {
  // One for the process, never destroyed: LibTorch's engines own worker threads.
  static ReportingEngine* engine = new ReportingEngine();
  return *engine;
}

// The default engine before any backward can run (the header says why).
// LibTorch's engine stub is set up when libtorch loads, before this library's
// initializers run.
[[maybe_unused]] const bool g_reporting_engine_installed = [] {
  torch::autograd::set_default_engine_stub(&reportingEngine);
  return true;
}();

}  // namespace

const void* defaultAutogradEngine() { return &torch::autograd::Engine::get_default_engine(); }

SavedTensorHooksScope::SavedTensorHooksScope(SavedTensorReport report) {
  std::lock_guard<std::mutex> lock(g_report_mutex);
  g_report = std::make_shared<const SavedTensorReport>(std::move(report));
}

SavedTensorHooksScope::~SavedTensorHooksScope() {
  std::lock_guard<std::mutex> lock(g_report_mutex);
  g_report.reset();
}

}  // namespace acprof
