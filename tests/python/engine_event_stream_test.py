"""The engine's derivation reached from Python (acprof.engine): hand-written event-stream documents
in, the profile the C++ derivation makes of them out, as profiler_format_event_stream_test.cpp
checks deriveProfile in C++. Torch-free: it needs the package and its engine module, nothing else.

The stream is that test's TwoNodeStream: h = linear(x, W); y = relu(h); the loss of y; backward
runs relu's node, then linear's. relu saves h; linear's backward frees h and makes W's gradient.

  step 0  forward node 0 (linear)   e0 +128 h
  step 1  forward node 1 (relu)     e1 +128 y            relu saves h (save 7)
  step 2  loss                      e2 +4   loss
  step 3  ReluBackward0   (seq 1)   e3 +128 dh
  step 4  AddmmBackward0  (seq 0)   e4 +400 dW, e5 -128 dh, relu's save released, e6 -128 h
"""

import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))

from acprof import engine  # noqa: E402
from acprof.contract import CATEGORIES, EVENT_STREAM_SCHEMA_VERSION  # noqa: E402


def storage(n: int) -> int:
    return 0x1000 * n


META = {"model_path": "eager:test.TwoNodes", "model_sha256": "", "torch_version": "2.14.1", "device": "cpu",
        "executor_optimize": False, "time_source": "cpu_wall", "command": "", "input_specs": ["float32[4,4]"],
        "target_spec": "", "loss": "mean", "autocast": "", "optimizer": "none", "warmup_iters": 1,
        "measured_iters": 1, "allocator_bytes_at_start": 0, "other_executor_mode_peak_bytes": -1,
        "checkpoint_rng_state_bytes": 5056, "forward_without_grad_ratio": -1.0, "probe_cost_us": -1.0,
        "seed": 0, "intra_op_threads": 1}


def node(i, kind, scope, reads, output):
    return {"id": i, "kind": kind, "scope": scope, "inputs": [], "outputs": [output], "role": "compute",
            "barrier_reason": "", "reads": reads, "writes": [], "forward_step": -1, "forward_time_us": 0.0,
            "backward_steps": []}


def value(i, name, producer, is_tensor):
    return {"id": i, "name": name, "producer_node": producer, "type": "Tensor" if is_tensor else "Module",
            "entry": "input" if is_tensor else "constant", "input_form": "tensor", "can_leave": True,
            "is_tensor": is_tensor, "requires_grad": False, "needs_grad": False, "bytes": 0, "tensor": -1}


def observed(node_index, ptr, event_index, target=None):
    return {"node": node_index, "storage_ptr": ptr, "shape": [4, 8], "dtype": "float32", "requires_grad": False,
            "bytes": 128, "event_index": event_index, "gradient_target": target}


def two_node_stream() -> dict:
    total = 464  # W and x
    events = []
    for ptr, delta, step in [(3, 128, 0), (4, 128, 1), (5, 4, 2), (6, 128, 3), (7, 400, 4), (6, -128, 4),
                             (3, -128, 4)]:
        total += delta
        events.append({"ptr": storage(ptr), "delta_bytes": delta, "allocator_total": total, "step": step})
    steps = [{"phase": "forward", "node": 0, "sequence_at_start": 0, "first_event": 0, "time_us": 10},
             {"phase": "forward", "node": 1, "sequence_at_start": 1, "first_event": 1, "time_us": 5},
             {"phase": "loss", "op": "loss", "sequence_at_start": 2, "first_event": 2, "time_us": 1},
             {"phase": "backward", "op": "ReluBackward0", "autograd_sequence_nr": 1, "first_event": 3, "time_us": 4},
             {"phase": "backward", "op": "AddmmBackward0", "autograd_sequence_nr": 0, "first_event": 4,
              "time_us": 20}]
    graph = {"meta": dict(META),
             "nodes": [node(0, "aten::linear", "fc", [1], "h"), node(1, "aten::relu", "", [2], "y")],
             "values": [value(0, "self", -1, False), value(1, "x", -1, True), value(2, "h", 0, True),
                        value(3, "y", 1, True)],
             "graph_outputs": [3]}
    iteration = {"steps": steps, "events": events,
                 "observed": [observed(0, storage(3), 1), observed(1, storage(4), 2)],
                 "saved_tensors": [{"save_id": 7, "storage_ptr": storage(3), "step": 1, "event_index": 2},
                                   {"save_id": 7, "storage_ptr": None, "step": 4, "event_index": 6}],
                 "gradients": [],
                 "statics": [{"ptr": storage(1), "bytes": 400, "category": "weight", "name": "fc.weight",
                              "shape": [10, 10], "dtype": "float32"},
                             {"ptr": storage(2), "bytes": 64, "category": "input", "name": "input0",
                              "shape": [4, 4], "dtype": "float32"}],
                 "gradient_ptrs": [storage(7)], "output_ptrs": [storage(4), storage(5)],
                 "input_ptrs": [storage(2)], "input_bytes": [64]}
    return {"format": "acprof-event-stream", "schema_version": EVENT_STREAM_SCHEMA_VERSION, "graph": graph,
            "iteration": iteration}


def test_each_storage_gets_its_lifetime_category_and_name():
    profile = engine.profile_from_event_stream(two_node_stream())
    tensors = profile["tensors"]
    assert len(tensors) == 7  # W, x, then the five allocations in event order
    h = tensors[2]
    assert (h["name"], h["shape"], h["alloc_step"], h["free_step"], h["producer_node"]) == ("h", [4, 8], 0, 4, 0)
    assert h["category"] == "activation"  # made in forward, freed in backward
    assert [t["category"] for t in tensors] == ["weight", "input", "activation", "output", "output", "temporary",
                                                "gradient"]
    assert tensors[3]["free_event"] == profile["event_count"] == 7  # y: alive after the step


def test_readers_saves_and_backward_steps_come_from_the_graph_and_the_stream():
    profile = engine.profile_from_event_stream(two_node_stream())
    x, h = profile["tensors"][1], profile["tensors"][2]
    assert x["users"] == [0]  # bound to graph value x through the forward argument
    assert (h["users"], h["last_forward_use_step"], h["first_backward_use_step"]) == ([1], 1, 3)
    assert h["saved_by"] == [{"node": 1, "release_step": 4}]
    assert [n["backward_steps"] for n in profile["nodes"]] == [[4], [3]]
    assert [n["forward_time_us"] for n in profile["nodes"]] == [10, 5]
    assert profile["values"][2]["bytes"] == 128 and profile["values"][1]["bytes"] == 64


def test_op_times_are_medians_over_the_measured_iterations_that_ran_the_same_steps():
    """An iteration the machine slowed (node 0 at 400 us) does not move node 0's time; an iteration
    with other steps (one step short) is left out, as the LibTorch recorder leaves it out."""
    stream = two_node_stream()
    stream["iteration"]["later_step_time_us"] = [[400, 6, 1, 4, 20], [12, 7, 1, 4, 20], [999, 999, 999, 999]]
    profile = engine.profile_from_event_stream(stream)
    assert [n["forward_time_us"] for n in profile["nodes"]] == [12, 6]


def test_the_rule_for_one_more_iteration_is_the_recorders():
    assert engine.more_iterations_wanted([100.0], 5), "one iteration cannot show that times agree"
    assert not engine.more_iterations_wanted([100.0, 101.0], 5), "two that agree are enough"
    assert engine.more_iterations_wanted([100.0, 150.0], 5)
    assert not engine.more_iterations_wanted([100.0, 150.0, 120.0, 130.0, 140.0], 5), "at most the most asked"
    # Iterations of a second each, 30 s spent, one plain step 0.5 s: one more breaks the 5-step budget.
    assert not engine.more_iterations_wanted([1e6, 1.5e6], 5, spent_seconds=30.0, step_seconds=0.5)


def test_the_peak_is_the_largest_sum_of_live_bytes_replayed_by_hand():
    stream = two_node_stream()
    profile = engine.profile_from_event_stream(stream)
    live = sum(s["bytes"] for s in stream["iteration"]["statics"])
    peak = live
    for event in stream["iteration"]["events"]:
        live += event["delta_bytes"]
        peak = max(peak, live)
    assert profile["summary"]["peak_bytes"] == peak == 464 + 128 + 128 + 4 + 128 + 400
    breakdown = profile["summary"]["peak_breakdown"]
    assert set(breakdown) == set(CATEGORIES) and sum(breakdown.values()) == peak


def test_a_gradient_is_named_by_every_report_that_leads_to_a_value():
    stream = two_node_stream()
    linear_output = {"node": 0, "sequence_nr": 0, "input_nr": 0}
    relu_output = {"node": 0, "sequence_nr": 1, "input_nr": 0}
    inside_linear = {"node": 0, "sequence_nr": 7, "input_nr": 0}
    accumulator = {"node": storage(1), "sequence_nr": 0, "input_nr": 0}
    iteration = stream["iteration"]
    iteration["observed"][0]["gradient_target"] = linear_output
    iteration["observed"][1]["gradient_target"] = relu_output
    iteration["gradients_recorded"] = True
    iteration["gradients"] = [{"storage_ptr": storage(6), "target": inside_linear, "event_index": 4},
                              {"storage_ptr": storage(6), "target": relu_output, "event_index": 4},
                              {"storage_ptr": storage(6), "target": linear_output, "event_index": 4},
                              {"storage_ptr": storage(6), "target": relu_output, "event_index": 4},
                              {"storage_ptr": storage(7), "target": accumulator, "event_index": 5}]
    tensors = engine.profile_from_event_stream(stream)["tensors"]
    assert tensors[5]["gradient_of"] == [3, 2]  # y's, then h's
    assert tensors[6]["gradient_of"] == []      # dW: no observed value's
    without = engine.profile_from_event_stream(two_node_stream())["tensors"]
    assert all("gradient_of" not in t for t in without)


def test_a_later_in_place_write_that_gives_grad_makes_the_value_need_grad():
    # The rule the old Python derivation lacked: h written in place by relu_ after h was seen
    # without grad, and relu_'s result (on h's storage) seen with it.
    stream = two_node_stream()
    stream["graph"]["nodes"][1]["writes"] = [2]
    stream["iteration"]["observed"][1].update(storage_ptr=storage(3), requires_grad=True)
    values = engine.profile_from_event_stream(stream)["values"]
    assert values[2]["needs_grad"] is True
    assert engine.profile_from_event_stream(two_node_stream())["values"][2]["needs_grad"] is False


@pytest.mark.parametrize("damage, names", [
    (lambda s: s.update(schema_version=EVENT_STREAM_SCHEMA_VERSION + 1), "schema version"),
    (lambda s: s.update(format="acprof-profile"), "not an acprof event stream"),
    (lambda s: s["iteration"]["events"][0].update(step=9), "event 0"),
    (lambda s: s["iteration"]["steps"][3].update(node=1), "step 3 names node 1"),
    (lambda s: s["iteration"]["steps"][1].update(first_event=99), "step 1 starts at event 99"),
    (lambda s: s["iteration"]["observed"][0].update(node=5), "node 5"),
    (lambda s: s["iteration"]["input_bytes"].append(1), "input"),
    (lambda s: s["iteration"]["events"][0].pop("delta_bytes"), "missing field 'delta_bytes'"),
    (lambda s: s["graph"]["nodes"][0].update(reads=[9]), "node 0"),
])
def test_a_damaged_stream_is_refused_in_one_line_naming_what(damage, names):
    stream = two_node_stream()
    damage(stream)
    with pytest.raises(engine.EngineError) as raised:
        engine.profile_from_event_stream(stream, "step.json")
    message = str(raised.value)
    assert raised.value.kind == "bad_input"
    assert names in message and message.startswith("step.json") and "\n" not in message


def test_the_planner_in_process_keeps_its_budget_or_says_it_cannot():
    stream = two_node_stream()
    stream["iteration"]["gradients_recorded"] = True  # planning reads whose gradient each storage is
    profile = engine.profile_from_event_stream(stream)
    peak = profile["summary"]["peak_bytes"]
    plan = engine.plan(profile, str(peak))
    assert plan["predicted_peak_bytes"] <= plan["budget_bytes"] == peak
    with pytest.raises(engine.EngineError) as raised:
        engine.plan(profile, "1KiB")
    assert raised.value.kind == "infeasible_budget"
    outcome = engine.plan_outcome(profile, "1KiB")
    assert outcome["feasible"] is False and outcome["smallest_peak_bytes"] > 1024
    assert sum(share["bytes"] for share in outcome["floor"]["shares"]) == outcome["smallest_peak_bytes"]


def test_bytes_are_formatted_and_files_written_as_the_binary_does(tmp_path):
    assert [engine.format_bytes(n) for n in (0, 1023, 1536, 3 * 1024 ** 3)] == ["0 B", "1023 B", "1.50 KiB",
                                                                                 "3.00 GiB"]
    path = tmp_path / "out.json"
    engine.write_json({"a": 1}, str(path))
    assert path.read_text() == '{\n "a": 1\n}\n'
    assert oct(path.stat().st_mode & 0o777) == oct(0o666 & ~current_umask())
    with pytest.raises(engine.EngineError):
        engine.write_json({"a": 1}, str(tmp_path / "missing" / "out.json"))
    assert not (tmp_path / "missing").exists()


def current_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
