// The event stream as a document: how a recorder outside this process hands
// one measured iteration to the derivation (event_stream.h), so that there is
// one derivation, in C++, whoever collected the events.
//
// The Python front end (python/acprof/eager) records an eager step with
// torch.profiler and autograd's hooks and writes this document; the engine
// module (python/engine) reads it here, derives the profile with
// deriveProfile, and hands back profile.json's content. Torch-free.
//
// The document: {"format": "acprof-event-stream", "schema_version": N,
// "graph": {meta, nodes, values, graph_outputs: as profile.json holds them},
// "iteration": {the IterationRecord and what the recorder knew around it}}.
// Field names are the C++ structs' (event_stream.h); pointers are integers,
// null or 0 for none; a step carries its time as `time_us`. docs/manual.md
// ("From your training script: acprof.fit") lists every field. The reader checks every index the
// derivation follows and rejects a newer or older schema.
#pragma once

#include <string>

#include "acprof/event_stream.h"
#include "acprof/profile_format.h"

namespace acprof {

inline constexpr const char* kEventStreamFormat = "acprof-event-stream";

// The profile derived from an event-stream document (the JSON text), which it
// has checked as profileFromJson checks a profile. Throws FormatError naming
// `source_name`, the field and the fix.
Profile profileFromEventStreamJson(const std::string& json_text, const std::string& source_name);

}  // namespace acprof
