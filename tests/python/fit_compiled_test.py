"""acprof.fit(..., compile=True) on a Hugging Face Llama built from a config (grouped-query
attention; transformers builds its causal mask another way under torch.compile's trace than in
eager), AdamW in the step: the compiled step with the plan inside it is measured within the budget
and below torch.compile's own step, it was compiled (the selective checkpoint's policy is asked
only by the compiler's trace, never again by an eager recompute), and the user's own loop trains
like torch.compile of the model; a budget below what any plan's compiled step reaches is refused in
one line naming that peak, with no plan left in the model; on a decoder with dropout, whose compiled
masks are not eager's, the compiled plan equals torch.compile's step bit for bit. Needs the package with its engine
module (PYTHONPATH=python after the build), torch and transformers. About 2 minutes on 2 cores.
"""

import copy
import os
import sys

import pytest

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.join(HERE, "..", ".."), os.path.join(HERE, "..", "..", "python")]

import acprof  # noqa: E402
from acprof.eager.compiled import CompiledPlan  # noqa: E402
from acprof.eager.recorder import measure_step  # noqa: E402
from models.hugging_face import SMALL_LLAMA_TOKENS, SMALL_LLAMA_VOCAB, small_llama as llama  # noqa: E402

TOKENS = torch.randint(0, SMALL_LLAMA_VOCAB, SMALL_LLAMA_TOKENS, generator=torch.Generator().manual_seed(1))


def loss(logits):
    return torch.nn.functional.cross_entropy(logits.flatten(0, 1), TOKENS.flatten())


def train(module, parameters_of, steps=3):
    optimizer = torch.optim.AdamW(parameters_of.parameters())
    for _ in range(steps):
        loss(module(TOKENS)).backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
    return [p.detach().clone() for p in parameters_of.parameters()]


@pytest.fixture(autouse=True)
def one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def test_the_compiled_plan_is_within_the_budget_below_compile_alone_and_trains_like_the_compiled_model():
    model = llama()
    reference = copy.deepcopy(model)
    optimizer = torch.optim.AdamW(model.parameters())
    alone = llama()
    compiled_alone = measure_step(CompiledPlan(alone), [TOKENS], loss,
                                  optimizer=torch.optim.AdamW(alone.parameters()))["peak_bytes"]
    budget = int(0.93 * compiled_alone)
    fitted = acprof.fit(model, TOKENS, budget=budget, loss_fn=loss, optimizer=optimizer, compile=True)

    assert isinstance(fitted.module, CompiledPlan) and fitted.module.module is model
    assert fitted.budget_bytes == budget
    assert fitted.measured_peak_bytes <= budget < compiled_alone
    checked = fitted.verification
    assert checked["mode"] == "compiled" and checked["max_abs_diff"] <= checked["tolerance"]
    assert checked["compiled_original_measured_peak_bytes"] == compiled_alone
    assert checked["gradients_compared"] == len(list(model.parameters()))
    assert checked["ops_recomputed"] > 0
    # The same compiled step measured again here: the number fit reports is this step's.
    again = measure_step(fitted.module, [TOKENS], loss, optimizer=optimizer)["peak_bytes"]
    assert again == fitted.measured_peak_bytes
    # Compiled, not run by eager SAC: eager asks the policy again while it recomputes in backward.
    policy = fitted.module.policies[-1]
    assert policy.position[True] == 0 and policy.position[False] > 0

    trained = train(fitted.module, model)
    expected = train(torch.compile(reference), reference)
    for got, want in zip(trained, expected):
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)


def test_a_budget_no_plans_compiled_step_reaches_is_refused_naming_that_peak_with_no_plan_left():
    model = llama()
    eager_floor = acprof.estimate(llama(), TOKENS, loss_fn=loss).floor_bytes
    with pytest.raises(acprof.InfeasibleBudget) as refused:
        acprof.fit(model, TOKENS, budget=eager_floor, loss_fn=loss, compile=True)
    message = str(refused.value)
    assert "\n" not in message and "compiled step" in message and "without compile" in message
    # What it names is a compiled peak above the budget asked for, and the model keeps no plan.
    assert refused.value.floor_bytes > eager_floor
    assert f"{refused.value.floor_bytes} B" in message
    assert acprof.installed_plan(model) is None


def test_with_dropout_compile_draws_its_own_masks_and_the_compiled_plan_equals_compiles_step_bit_for_bit():
    from fit_test import Net, mean_loss  # blocks with dropout 0.1 and a tied embedding, written here
    torch.manual_seed(0)
    model, ids = Net(width=64, depth=4), torch.randint(0, 128, (8, 32))
    reference = copy.deepcopy(model)
    fitted = acprof.fit(model, ids, budget="90%", loss_fn=mean_loss, compile=True)
    checked = fitted.verification
    assert fitted.measured_peak_bytes <= fitted.budget_bytes
    assert fitted.measured_peak_bytes < checked["compiled_original_measured_peak_bytes"]
    # Compile's masks are not eager's (inductor's generator), so no rounding tolerance applies.
    assert checked["compile_eager_difference"] > 1e-3 and checked["tolerance"] == 0.0
    assert checked["max_abs_diff"] == 0.0 and checked["ops_recomputed"] > 0

    def losses(module):
        torch.manual_seed(1)
        return [mean_loss(module(ids)).item() for _ in range(3)]
    assert losses(fitted.module) == losses(torch.compile(reference))
