// acprof profile: measure one training iteration into profile.json.
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <iostream>

#include <fmt/format.h>

#include "acprof/command_budget.h"
#include "acprof/error.h"
#include "acprof/files.h"
#include "acprof/input_spec.h"
#include "acprof/loss.h"
#include "acprof/optimizer.h"
#include "acprof/profile_format.h"
#include "acprof/recorder.h"
#include "commands.h"
#include "cublas_workspace.h"
#include "eager_front_end.h"
#include "profile_views.h"
#include "profile_summary.h"

namespace acprof::cli {
namespace {

// The options parse straight into the recorder's; the rest is what the CLI writes.
struct ProfileArgs {
  RecordOptions record;
  std::string jit_optimize = "off";  // on | off, RunConfig::executor_optimize
  std::string output = "profile.json";
  std::string html;
  std::string trace;
  std::string module;  // --module: an eager module's factory, recorded by the Python front end
};

// The TorchScript recorder's options that the eager front end does not offer,
// by flag: refused with --module rather than silently ignored.
const std::vector<std::string> kTorchScriptOnlyProfileFlags = {"--warmup", "--iters", "--device",
                                                               "--jit-optimize", "--compare-jit-optimize",
                                                               "--measure-no-grad-forward"};

// acprof profile --module: the Python front end records the module into the
// output; then the profile is read back as any profile is (its summary, views).
void runEagerProfile(const ProfileArgs& args, const std::vector<std::string>& torchscript_flags_given) {
  if (!args.record.model_path.empty())
    throw Error(ErrorKind::Usage, fmt::format("pass a TorchScript model ('{}') or --module '{}', not both",
                                              args.record.model_path, args.module));
  if (!torchscript_flags_given.empty())
    throw Error(ErrorKind::Usage, fmt::format("{} is not supported with --module (the eager front end records "
                                              "one step on the CPU); leave it out",
                                              torchscript_flags_given.front()));
  if (args.record.run.input_specs.empty())
    throw Error(ErrorKind::Usage, "--module needs one --input per forward argument of the module, e.g. "
                                  "--input float32[32,256]");
  for (const std::string& spec : args.record.run.input_specs) parseInputSpec(spec);  // one line naming the spec
  if (!args.record.run.target_spec.empty()) parseInputSpec(args.record.run.target_spec);
  checkOutputPath(args.output, {});
  if (!args.html.empty()) checkOutputPath(args.html, {});
  if (!args.trace.empty()) checkOutputPath(args.trace, {});
  std::vector<std::string> command = {"profile", "--module", args.module, "-o", args.output, "--command", commandLine()};
  for (const std::string& spec : args.record.run.input_specs) command.insert(command.end(), {"--input", spec});
  if (!args.record.run.target_spec.empty()) command.insert(command.end(), {"--target", args.record.run.target_spec});
  if (!args.record.run.loss.empty()) command.insert(command.end(), {"--loss", args.record.run.loss});
  if (!args.record.run.autocast.empty()) command.insert(command.end(), {"--autocast", args.record.run.autocast});
  if (args.record.run.optimizer != "none") command.insert(command.end(), {"--optimizer", args.record.run.optimizer});
  runEagerCommand(command);
  const Profile profile = readProfileFile(args.output);
  writeViews(profile, args.html, args.trace);
  std::cout << profileSummaryText(profile) << fmt::format("wrote {}\n", args.output);
}

void runProfile(const ProfileArgs& args) {
  if (args.record.model_path.empty())
    throw Error(ErrorKind::Usage, "pass a TorchScript model file (model.pt), or --module pkg.mod:make_model for an "
                                  "eager nn.Module");
  useDeterministicCublasWorkspace();  // as the rewrite will (cublas_workspace.h)
  RecordOptions options = args.record;
  options.run.executor_optimize = args.jit_optimize == "on";
  options.command_line = commandLine();
  options.keep_to_step_budget = true;
  const std::vector<std::string> inputs = {options.model_path};
  checkOutputPath(args.output, inputs);
  if (!args.html.empty()) checkOutputPath(args.html, inputs);
  if (!args.trace.empty()) checkOutputPath(args.trace, inputs);
  if (::isatty(STDERR_FILENO))
    options.progress = [](const std::string& line) { std::cerr << "acprof: " << line << std::endl; };

  const Profile profile = recordProfile(options);
  writeProfileFile(profile, args.output);
  writeViews(profile, args.html, args.trace);
  std::cout << profileSummaryText(profile) << fmt::format("wrote {}\n", args.output);
}

}  // namespace

void addProfileCommand(CLI::App& app) {
  auto args = std::make_shared<ProfileArgs>();
  CLI::App* cmd = app.add_subcommand("profile", kProfileDescription);
  cmd->add_option("model", args->record.model_path, "TorchScript model file (torch.jit.save)");
  cmd->add_option("--module", args->module,
                  "instead of a TorchScript file, an eager nn.Module: the function that returns it, "
                  "module.path:make_model or path/to/file.py:make_model, run by Python ($ACPROF_PYTHON, else "
                  "python3 on PATH) with the acprof package");
  cmd->add_option("--input", args->record.run.input_specs,
                  "input spec per forward argument, e.g. float32[32,3,224,224] or int64[8,512]:0..50257 "
                  "(default: the specs stored in the model by models/ export scripts)");
  cmd->add_option("--target", args->record.run.target_spec, "target spec for --loss cross_entropy, e.g. int64[32]:0..1000");
  cmd->add_option("--loss", args->record.run.loss, "loss of the output: auto (the model's scalar output, else mean), sum, "
                                        "mean, cross_entropy")
      ->check(CLI::IsMember(acprof::requestableLossKinds()));
  cmd->add_option("--optimizer", args->record.run.optimizer,
                  "optimizer step after backward, LibTorch's torch::optim with PyTorch's defaults: sgd "
                  "(lr 0.01, momentum 0.9), adam (lr 1e-3), adamw (lr 1e-3, weight decay 1e-2)")
      ->check(CLI::IsMember(acprof::optimizerKinds()));
  cmd->add_option("--autocast", args->record.run.autocast,
                  "run forward and the loss under autocast: bfloat16, float16 or off (default: what the model "
                  "archive records, else off)");
  cmd->add_option("--warmup", args->record.run.warmup_iters, "warm-up iterations, never measured (default 1)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--iters", args->record.run.measured_iters,
                  fmt::format("most measured iterations; times are their medians (default 5: two are measured, more only "
                              "while their times differ by over 2 % and one more keeps the profile within {:g} "
                              "training steps, process start included)",
                              kProfileStepBudget))
      ->check(CLI::PositiveNumber);
  cmd->add_option("--device", args->record.run.device, "cpu or cuda[:N]");
  cmd->add_option("--jit-optimize", args->jit_optimize,
                  "TorchScript executor optimization during the profile (default off: see docs/manual.md)")
      ->check(CLI::IsMember({"on", "off"}));
  cmd->add_flag("--compare-jit-optimize", args->record.measure_other_executor_mode,
                "also run one iteration with executor optimization in the other mode and say whether it peaks "
                "lower (about two steps more)");
  cmd->add_flag("--measure-no-grad-forward", args->record.measure_forward_without_grad,
                "also time one forward without grad, recorded as meta.forward_without_grad_ratio (default -1: not "
                "measured; no plan reads it)");
  cmd->add_option("-o,--output", args->output, "profile to write (default profile.json)");
  cmd->add_option("--html", args->html, "also write an HTML memory timeline");
  cmd->add_option("--trace", args->trace, "also write a Chrome/Perfetto trace JSON");
  cmd->callback([args, cmd] {
    if (args->module.empty()) return runProfile(*args);
    std::vector<std::string> given;
    for (const std::string& flag : kTorchScriptOnlyProfileFlags)
      if (cmd->count(flag) > 0) given.push_back(flag);
    runEagerProfile(*args, given);
  });
}

}  // namespace acprof::cli
