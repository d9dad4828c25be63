// acprof._engine: the C++ engine, in-process, for the Python package.
//
// Python collects (python/acprof/eager records a step's events); this module
// derives the profile from them and plans it with the same code the acprof
// binary runs, so every rule is stated once, in C++. Torch-free: it links the
// profile format and the planner only, so it depends on the Python it is built
// for and on nothing of torch's. Documents cross as JSON text, the formats'
// own, which their readers check; an acprof::Error reaches Python as
// acprof._engine.Error with the error kind's name (contract.json) as `kind`.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "acprof/budget.h"
#include "acprof/command_budget.h"
#include "acprof/contract.h"
#include "acprof/error.h"
#include "acprof/event_stream_format.h"
#include "acprof/files.h"
#include "acprof/measured_iterations.h"
#include "acprof/pair_timing.h"
#include "acprof/peak_composition.h"
#include "acprof/planner.h"
#include "acprof/plan_format.h"
#include "acprof/profile_format.h"

namespace py = pybind11;

namespace {

const char* kindName(acprof::ErrorKind kind) { return acprof::contract::kErrorKinds[static_cast<size_t>(kind)].name; }

std::string profileFromEventStream(const std::string& stream_json, const std::string& source_name) {
  return acprof::profileToJson(acprof::profileFromEventStreamJson(stream_json, source_name));
}

// The planner's outcome as data, as Checkmate's ScheduledResult is: {"feasible": true, "plan":
// plan.json} or {"feasible": false, "smallest_peak_bytes", "floor": what that peak is made of,
// "message": the one line acprof plan prints}. Bad input (the profile, the budget's text, the
// solver's name) still raises.
std::string planOutcome(const std::string& profile_json, const std::string& budget, const std::string& solver,
                        const std::string& profile_path) {
  const acprof::Profile profile = acprof::profileFromJson(profile_json, profile_path.empty() ? "profile" : profile_path);
  acprof::PlanRequest request;
  request.profile_path = profile_path;
  request.budget_text = budget;
  request.solver = solver;
  nlohmann::json outcome;
  try {
    outcome = {{"feasible", true}, {"plan", nlohmann::json::parse(acprof::planToJson(acprof::planRecompute(profile, request)))}};
  } catch (const acprof::InfeasibleBudget& e) {
    outcome = {{"feasible", false}, {"smallest_peak_bytes", e.smallest_peak_bytes}, {"floor", e.floor},
               {"message", e.what()}};
  }
  return outcome.dump();
}

}  // namespace

PYBIND11_MODULE(_engine, m) {
  m.doc() = "acprof's C++ engine: the profile's derivation and the planner, in-process";
  static py::exception<acprof::Error> error_type(m, "Error");
  py::register_exception_translator([](std::exception_ptr raised) {
    try {
      if (raised) std::rethrow_exception(raised);
    } catch (const acprof::Error& e) {
      py::object error = py::reinterpret_borrow<py::object>(error_type.ptr())(e.what());
      error.attr("kind") = kindName(e.kind());
      PyErr_SetObject(error_type.ptr(), error.ptr());
    }
  });
  m.attr("event_stream_schema_version") = acprof::contract::kEventStreamSchemaVersion;
  m.attr("profile_schema_version") = acprof::contract::kProfileSchemaVersion;
  // The GIL is let go while C++ runs: it touches no Python object.
  m.def("profile_from_event_stream", &profileFromEventStream, py::arg("stream_json"), py::arg("source_name") = "event stream",
        py::call_guard<py::gil_scoped_release>(),
        "profile.json's text derived from an event-stream document's text (acprof/event_stream_format.h)");
  m.def("plan_outcome", &planOutcome, py::arg("profile_json"), py::arg("budget"), py::arg("solver") = "auto",
        py::arg("profile_path") = "", py::call_guard<py::gil_scoped_release>(),
        "the planner's outcome for a profile's text and a budget as users type it (6GB, 60%), as JSON text: "
        "{feasible, plan} or {feasible: false, smallest_peak_bytes, floor, message}");
  m.def(
      "more_iterations_wanted",
      [](const std::vector<double>& iteration_us, int most_iterations, std::optional<double> spent_seconds,
         double step_seconds, double after_seconds) {
        std::optional<acprof::ProfileCost> cost;
        if (spent_seconds) cost = acprof::ProfileCost{*spent_seconds, step_seconds, after_seconds};
        return acprof::moreIterationsWanted(iteration_us, most_iterations, cost);
      },
      py::arg("iteration_us"), py::arg("most_iterations"), py::arg("spent_seconds") = py::none(),
      py::arg("step_seconds") = 0.0, py::arg("after_seconds") = 0.0,
      "whether a profile measures one more iteration after those timed (acprof/measured_iterations.h); with "
      "spent_seconds, only while one more keeps the profile within its budget of training steps");
  // The most measured iterations unless asked for others (acprof profile --iters).
  m.attr("default_measured_iterations") = acprof::RunConfig{}.measured_iters;
  // The rewrite's timed pairs, by the TorchScript rewrite's rule (acprof/pair_timing.h).
  m.attr("default_timed_rounds") = acprof::kDefaultTimedRounds;
  m.def(
      "timing_stop",
      [](const std::vector<double>& extra_shares, double timed_seconds, int min_rounds,
         bool another_pair_fits) -> std::optional<std::string> {
        const auto stop = acprof::whyTimingStops(extra_shares, timed_seconds, min_rounds, another_pair_fits);
        if (!stop) return std::nullopt;
        return std::string(acprof::timingStopName(*stop));
      },
      py::arg("extra_shares"), py::arg("timed_seconds"), py::arg("min_rounds"), py::arg("another_pair_fits") = true,
      "why timed pairs stop (precise, time_limit, step_budget, pair_limit), or None while one more is wanted");
  m.def("another_pair_fits", &acprof::anotherPairFits, py::arg("spent_seconds"), py::arg("original_seconds"),
        py::arg("rewritten_seconds"), "whether one more pair keeps a rewrite within its budget of training steps");
  m.def("process_age_seconds", &acprof::processAgeSeconds, "wall seconds since this process started");
  m.def(
      "step_times",
      [](const std::vector<double>& original_us, const std::vector<double>& rewritten_us, double timed_seconds,
         const std::string& stopped_by) {
        return acprof::stepTimesToJson(acprof::stepTimesOf(original_us, rewritten_us, timed_seconds,
                                                           acprof::timingStopFromName(stopped_by)))
            .dump();
      },
      py::arg("original_us"), py::arg("rewritten_us"), py::arg("timed_seconds"), py::arg("stopped_by"),
      "the rewrite outcome's `time` (JSON text) from the pairs' step times");
  m.def("budget_bytes", &acprof::parseBudget, py::arg("budget"), py::arg("profiled_peak_bytes"),
        "the bytes of a budget as users type it (6GB, 512MiB, 60% of the profiled peak)");
  m.def("format_bytes", &acprof::formatBytes, py::arg("bytes"), "bytes as acprof prints them: 1.50 MiB");
  m.def("write_file_atomically", &acprof::writeFileAtomically, py::arg("path"), py::arg("contents"),
        py::call_guard<py::gil_scoped_release>(), "writes the file whole or not at all");
}
