"""Unit tests of the Python package that need neither the acprof binary nor the engine module:
torch and python/ alone. The engine (acprof._engine) is made unimportable before anything of acprof
is imported, so a unit that starts to need it fails here instead of passing by accident.

    PYTHONPATH=python python -m pytest -q tests/python/eager_units_test.py
"""

import inspect
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
sys.modules["acprof._engine"] = None  # `from . import _engine` now raises ImportError

import pytest  # noqa: E402
import torch  # noqa: E402

from acprof import contract, errors  # noqa: E402
from acprof.eager import checkpoint as eager_checkpoint  # noqa: E402
from acprof.eager.command_line import CommandError, parse_input_spec  # noqa: E402
from acprof.eager.step_checks import check_step  # noqa: E402
from acprof.eager.training_state import training_state_kept  # noqa: E402


def test_the_engine_is_not_importable_here():
    from acprof import engine
    assert engine._engine is None, "this suite must run without acprof._engine"


# -- the checkpoint ------------------------------------------------------------------------------

def _shapes_saved(run):
    """The shapes autograd saves for backward while `run` runs forward."""
    shapes = []

    def pack(t):
        shapes.append(tuple(t.shape))
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = run()
    return out, shapes


def _tanh_segment():
    # x [4, 8] @ w [8, 16] -> tanh [4, 16] -> sum over dim 1 [4]: the [4, 16] tanh is what
    # autograd saves inside, and what the checkpoint must drop.
    return eager_checkpoint.SegmentRun(lambda ins: [torch.tanh(ins[0] @ ins[1]).sum(dim=1)], [], [True])


def test_checkpoint_keeps_its_inputs_and_drops_the_activation_inside():
    torch.manual_seed(0)
    x, w = torch.randn(4, 8, requires_grad=True), torch.randn(8, 16, requires_grad=True)
    _, plain = _shapes_saved(lambda: torch.tanh(x @ w).sum(dim=1))
    (out,), checkpointed = _shapes_saved(lambda: eager_checkpoint.checkpoint(_tanh_segment(), [x, w]))
    assert (4, 16) in plain, "the plain forward saves tanh's output; the comparison means nothing otherwise"
    assert (4, 16) not in checkpointed, f"the checkpoint saved the activation inside: {checkpointed}"
    assert out.shape == (4,)


def test_checkpoint_gradients_equal_the_plain_segment_bit_for_bit():
    torch.manual_seed(0)
    x, w = torch.randn(4, 8, requires_grad=True), torch.randn(8, 16, requires_grad=True)
    torch.tanh(x @ w).sum(dim=1).pow(2).sum().backward()
    plain = (x.grad.clone(), w.grad.clone())
    x.grad = w.grad = None
    (out,) = eager_checkpoint.checkpoint(_tanh_segment(), [x, w])
    out.pow(2).sum().backward()
    assert torch.equal(x.grad, plain[0]) and torch.equal(w.grad, plain[1])


def test_checkpoint_replays_the_dropout_mask_of_its_forward():
    torch.manual_seed(0)
    x = torch.randn(64, 64, requires_grad=True)
    segment = eager_checkpoint.SegmentRun(lambda ins: [torch.nn.functional.dropout(ins[0] * 3, 0.5, True)], [], [True])
    torch.manual_seed(1)
    (torch.nn.functional.dropout(x * 3, 0.5, True)).sum().backward()
    plain = x.grad.clone()
    x.grad = None
    torch.manual_seed(1)
    (out,) = eager_checkpoint.checkpoint(segment, [x])
    torch.randn(1000)  # the generator moves on between forward and the recompute, as in training
    out.sum().backward()
    assert torch.equal(x.grad, plain), "the recompute drew another dropout mask"


def test_checkpoint_recomputes_from_a_snapshot_of_an_input_it_writes():
    # y = x * (buffer += 1): forward writes the buffer in place; the recompute must read what
    # forward read, not the written buffer (which would add 1 again).
    x = torch.full((3,), 2.0, requires_grad=True)
    buffer = torch.zeros(3)

    def run(ins):
        ins[1].add_(1)
        return [ins[0] * ins[1]]

    (out,) = eager_checkpoint.checkpoint(eager_checkpoint.SegmentRun(run, [1], [True]), [x, buffer])
    out.sum().backward()
    assert torch.equal(buffer, torch.ones(3)), "forward's write is kept, once"
    assert torch.equal(x.grad, torch.ones(3)), f"the recompute read the written buffer: {x.grad}"


# -- the input-spec grammar ----------------------------------------------------------------------

@pytest.mark.parametrize("text, expected", [
    ("float32[32,3,224,224]", ("float32", [32, 3, 224, 224], None)),
    ("int64[8,512]:0..50257", ("int64", [8, 512], (0, 50257))),
    ("long[2]:0..3", ("int64", [2], (0, 3))),
    ("float[4, 4]", ("float32", [4, 4], None)),
])
def test_input_specs_that_parse(text, expected):
    assert parse_input_spec(text) == expected


@pytest.mark.parametrize("text", ["float32[2]:0..3", "int64[0,3]", "int64[2]:5..5", "float33[2]", "float32(2)"])
def test_input_specs_that_are_refused_as_bad_input_in_one_line(text):
    with pytest.raises(CommandError) as e:
        parse_input_spec(text)
    assert e.value.kind == "bad_input" and "\n" not in str(e.value) and text in str(e.value)


# -- errors and the contract ---------------------------------------------------------------------

def test_every_error_type_is_a_kind_of_the_contract_with_its_own_exit_code():
    types = [t for _, t in inspect.getmembers(errors, inspect.isclass) if issubclass(t, errors.AcprofError)]
    assert len(types) >= 6
    for t in types:
        assert t.kind in contract.EXIT_CODES, f"{t.__name__}.kind {t.kind!r} is no error kind of contract.json"
    codes = list(contract.EXIT_CODES.values())
    assert len(set(codes)) == len(codes), "two error kinds share an exit code"


# -- the checks before a profile -----------------------------------------------------------------

def test_inputs_the_model_refuses_are_the_callers_bad_input_naming_the_shapes():
    model = torch.nn.Linear(8, 4)
    with pytest.raises(errors.BadInput) as e:
        check_step(model, [torch.randn(2, 5)], None, None)
    message = str(e.value)
    assert "Linear refuses inputs" in message and "[2, 5]" in message and "\n" not in message


def test_an_output_with_no_floating_point_tensor_is_bad_input():
    class Argmax(torch.nn.Module):
        def forward(self, x):
            return x.argmax(dim=1)

    with pytest.raises(errors.BadInput):
        check_step(Argmax(), [torch.randn(2, 5)], None, None)


def test_training_state_kept_puts_back_mode_buffers_gradients_and_generator():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.BatchNorm1d(4))
    model.eval()
    mean, generator = model[1].running_mean.clone(), torch.get_rng_state()
    with training_state_kept(model):
        model.train()
        model(torch.randn(8, 4)).sum().backward()
    assert not model.training
    assert torch.equal(model[1].running_mean, mean)
    assert all(p.grad is None for p in model.parameters())
    assert torch.equal(torch.get_rng_state(), generator)


# -- the plan inside torch.compile (eager/compiled.py) --------------------------------------------

def test_traced_ops_take_the_decision_of_the_profiled_op_they_align_with_and_added_ops_none():
    from acprof.eager.compiled import aligned_decisions
    aten = torch.ops.aten
    profiled = [(aten.mm.default, True), (aten.add.Tensor, False), (aten._local_scalar_dense.default, False),
                (aten.relu.default, True), (aten.mm.default, False)]
    # The trace adds an unsqueeze and an add before the first mm (a mask built another way) and
    # drops the .item() eager ran: matching by the op's count alone would give the added add the
    # profiled add's decision and shift every later one.
    traced = [aten.unsqueeze.default, aten.add.Tensor, aten.mm.default, aten.add.Tensor, aten.relu.default,
              aten.mm.default]
    assert aligned_decisions(profiled, traced) == [None, None, True, False, True, False]


def test_plan_policy_recomputes_the_plans_ops_saves_the_rest_and_never_recomputes_a_random_op():
    from torch.utils.checkpoint import CheckpointPolicy, SelectiveCheckpointContext
    from acprof.eager.compiled import PlanPolicy
    aten = torch.ops.aten
    traced = [aten.mm.default, aten.bernoulli_.float, aten.relu.default, aten.add.Tensor]
    policy = PlanPolicy(traced, [True, True, False, None])
    forward = SelectiveCheckpointContext(is_recompute=False)
    got = [policy(forward, op) for op in traced]
    assert got == [CheckpointPolicy.MUST_RECOMPUTE, CheckpointPolicy.MUST_SAVE, CheckpointPolicy.PREFER_SAVE,
                   CheckpointPolicy.PREFER_SAVE]
    assert (policy.recomputed, policy.unmatched) == (1, 1)
    # Another op than the one recorded at a position is not the plan's: saved, counted unmatched.
    assert policy(forward, aten.mm.default) == CheckpointPolicy.PREFER_SAVE and policy.unmatched == 2
    # A recompute (eager SAC asks again) counts apart and adds nothing to the forward's counts.
    again = SelectiveCheckpointContext(is_recompute=True)
    assert policy(again, aten.mm.default) == CheckpointPolicy.MUST_RECOMPUTE and policy.recomputed == 1


def test_alike_units_form_a_chain_whose_calls_hand_on_the_hidden_state():
    from acprof.eager.call import Call
    from acprof.eager.sharded import Unit, UnitChain, alike
    torch.manual_seed(0)
    blocks = [torch.nn.Linear(4, 4) for _ in range(3)]
    calls = {f"b{i}": Call.of((torch.randn(2, 4),), {}) for i in range(3)}
    units = [Unit(f"b{i}", b, True) for i, b in enumerate(blocks)]
    assert alike(units, calls)
    wider = units[:2] + [Unit("b2", torch.nn.Linear(4, 4, bias=False), True)]
    assert not alike(wider, calls)  # other parameters
    longer = dict(calls, b2=Call.of((torch.randn(3, 4),), {}))
    assert not alike(units, longer)  # another shape of call
    x = calls["b0"].tensors[0]
    chain = UnitChain(blocks[0], calls["b0"], 3)
    assert torch.equal(chain(x), blocks[0](blocks[0](blocks[0](x))))
