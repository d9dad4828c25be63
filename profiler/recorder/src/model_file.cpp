#include "acprof/model_file.h"

#include <filesystem>

#include <caffe2/serialize/inline_container.h>
#include <fmt/format.h>

#include "acprof/recorder.h"

namespace acprof {

std::string oneLineTorchError(const std::exception& error) {
  const auto* torch_error = dynamic_cast<const c10::Error*>(&error);
  const std::string text = torch_error ? torch_error->what_without_backtrace() : error.what();
  std::vector<std::string> lines;
  size_t start = 0;
  while (start <= text.size()) {
    const auto end = text.find('\n', start);
    const std::string line = text.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (line.find_first_not_of(" \t") != std::string::npos) lines.push_back(line);
    if (end == std::string::npos) break;
    start = end + 1;
  }
  if (lines.empty()) return "unknown LibTorch error";
  for (auto it = lines.rbegin(); it != lines.rend(); ++it) {
    const auto marker = it->find("Error: ");
    if (marker != std::string::npos && it->rfind(" ", 0) != 0) return it->substr(marker + 7);
  }
  return lines.front();
}

torch::jit::Module loadModel(const std::string& path, const std::string& device) {
  if (!std::filesystem::exists(path))
    throw RecordError(fmt::format("{}: no such file; pass the path of a TorchScript model (torch.jit.save)", path));
  if (std::filesystem::is_directory(path))
    throw RecordError(fmt::format("{}: is a directory; pass the path of a TorchScript model file", path));
  torch::jit::Module module;
  try {
    module = torch::jit::load(path, c10::Device(device));
  } catch (const std::exception& e) {
    throw RecordError(fmt::format("{}: not a loadable TorchScript model ({}); export it with torch.jit.trace or "
                                  "torch.jit.script and save it with torch.jit.save",
                                  path, oneLineTorchError(e)));
  }
  if (!module.find_method("forward"))
    throw RecordError(fmt::format("{}: the TorchScript module has no forward method; export the training module",
                                  path));
  module.train(true);
  return module;
}

StoredSpecs readStoredSpecs(const std::string& model_path) {
  StoredSpecs stored;
  try {
    caffe2::serialize::PyTorchStreamReader reader(model_path);
    auto readRecord = [&](const std::string& name) -> std::string {
      // The archive's records live under "<archive name>/extra/<name>".
      for (const std::string& record : reader.getAllRecords()) {
        const std::string suffix = "/extra/" + name;
        const bool nested = record.size() > suffix.size() &&
                            record.compare(record.size() - suffix.size(), std::string::npos, suffix) == 0;
        if (record == "extra/" + name || nested) {
          auto [data, size] = reader.getRecord(record);
          return std::string(static_cast<const char*>(data.get()), size);
        }
      }
      return "";
    };
    std::string inputs = readRecord("acprof_inputs");
    size_t start = 0;
    while (start < inputs.size()) {
      const auto end = inputs.find('\n', start);
      const std::string line = inputs.substr(start, end == std::string::npos ? std::string::npos : end - start);
      if (!line.empty()) stored.inputs.push_back(line);
      if (end == std::string::npos) break;
      start = end + 1;
    }
    stored.target = readRecord("acprof_target");
    stored.loss = readRecord("acprof_loss");
    stored.autocast = readRecord("acprof_autocast");
  } catch (const c10::Error&) {
    // Not a zip archive: loadModel reports that with a better message.
  }
  return stored;
}

}  // namespace acprof
