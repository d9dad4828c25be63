"""The facts this package shares with the acprof binary, read from contract.json beside this file.

The binary's build reads the same file (cmake/contract.cmake), so the profile's schema version,
the phase, category and loss names and the error kinds' exit codes are stated once.
"""

import json
import os

with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "contract.json"), encoding="utf-8") as _file:
    _CONTRACT = json.load(_file)

PROFILE_SCHEMA_VERSION = _CONTRACT["profile_schema_version"]
# The event stream the recorder hands the engine (acprof/event_stream_format.h).
EVENT_STREAM_SCHEMA_VERSION = _CONTRACT["event_stream_schema_version"]
PHASES = list(_CONTRACT["phases"])
# The categories of a storage's bytes (profile_format.h Category), in the profile's order.
CATEGORIES = list(_CONTRACT["categories"])
LOSSES = tuple(_CONTRACT["losses"])
# What --optimizer names, by name: the torch.optim class, lr and momentum (0: none).
OPTIMIZERS = {entry["name"]: entry for entry in _CONTRACT["optimizers"]}
# The exit code of each error kind, by its name ("usage", "bad_input", ...).
EXIT_CODES = {kind["name"]: kind["exit_code"] for kind in _CONTRACT["error_kinds"]}
