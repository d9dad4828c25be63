"""acprof.fit, acprof.estimate and acprof.apply, in process, on models written here and on Hugging
Face GPT-2 built from a config: the optimizer's step is part of the profiled step (AdamW), the
checkpointed module's measured peak equals the plan's prediction to the byte and is within the
budget, and it trains like the model bit for bit, in the user's own loop. Needs the package with
its engine module (PYTHONPATH=python after the build), torch, and transformers for GPT-2.
"""

import copy
import json
import os
import sys
import warnings

import pytest

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import acprof  # noqa: E402
from eager_end_to_end_check import CausalLM  # noqa: E402  (a Hugging Face causal LM returning its logits)
from refused_models import CallsACustomFunction, ReturnsInt  # noqa: E402


class Block(torch.nn.Module):
    def __init__(self, width):
        super().__init__()
        self.norm = torch.nn.LayerNorm(width)
        self.up = torch.nn.Linear(width, 4 * width)
        self.down = torch.nn.Linear(4 * width, width)
        self.drop = torch.nn.Dropout(0.1)

    def forward(self, x):
        return x + self.drop(self.down(torch.nn.functional.gelu(self.up(self.norm(x)))))


class Net(torch.nn.Module):
    """Blocks with dropout between an embedding and a head that shares the embedding's weight."""

    def __init__(self, width=64, depth=4, vocab=128):
        super().__init__()
        self.embed = torch.nn.Embedding(vocab, width)
        self.blocks = torch.nn.ModuleList(Block(width) for _ in range(depth))

    def forward(self, ids):
        x = self.embed(ids)
        for block in self.blocks:
            x = block(x)
        return x @ self.embed.weight.t()


def net_and_inputs():
    torch.manual_seed(0)
    return Net(), (torch.randint(0, 128, (8, 32)),)


def mean_loss(output):
    return output.float().pow(2).mean()


def halfway(model, inputs, optimizer=None):
    answer = acprof.estimate(model, inputs, loss_fn=mean_loss, optimizer=optimizer)
    return answer, (answer.floor_bytes + answer.peak_bytes) // 2


def train(module, inputs, optimizer, steps=3):
    losses = []
    for step in range(steps):
        torch.manual_seed(100 + step)
        loss = mean_loss(module(*inputs))
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        losses.append(loss.detach())
    return losses


def test_fit_with_adamw_measures_its_prediction_and_trains_like_the_model_bit_for_bit():
    model, inputs = net_and_inputs()
    original = copy.deepcopy(model)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    answer, budget = halfway(model, inputs, optimizer)
    fitted = acprof.fit(model, inputs, budget=budget, loss_fn=mean_loss, optimizer=optimizer)
    assert fitted.segments >= 1
    assert fitted.measured_peak_bytes == fitted.predicted_peak_bytes <= fitted.budget_bytes == budget
    assert fitted.verification["parameters_compared"] == len(list(model.parameters()))
    assert fitted.peak_bytes == answer.peak_bytes  # the same step, profiled twice
    # AdamW's state (two moments per parameter) is part of the profiled step's peak.
    state_bytes = 2 * sum(p.numel() * p.element_size() for p in model.parameters())
    assert fitted.profile["summary"]["peak_breakdown"]["optimizer_state"] >= state_bytes
    # fit left the model and the optimizer as they were: both loops start from the same state.
    for p, q in zip(model.parameters(), original.parameters()):
        assert torch.equal(p, q)
    assert len(optimizer.state) == 0
    ours = train(fitted.module, inputs, optimizer)
    theirs = train(original, inputs, torch.optim.AdamW(original.parameters(), lr=1e-3))
    assert all(torch.equal(a, b) for a, b in zip(ours, theirs))
    for p, q in zip(model.parameters(), original.parameters()):
        assert torch.equal(p, q)


def test_estimate_says_as_is_with_a_plan_or_not_at_all():
    model, inputs = net_and_inputs()
    answer, budget = halfway(model, inputs)
    assert answer.verdict is None and answer.floor_bytes < answer.peak_bytes
    assert sum(share["bytes"] for share in answer.floor["shares"]) == answer.floor_bytes
    assert acprof.estimate(model, inputs, budget=answer.peak_bytes, loss_fn=mean_loss).verdict == "fits_as_is"
    planned = acprof.estimate(model, inputs, budget=budget, loss_fn=mean_loss)
    assert planned.verdict == "fits_with_plan" and planned.predicted_peak_bytes <= budget
    # Without a budget one measured iteration is recorded, with one as many as a profile takes:
    # the bytes are the first iteration's either way.
    assert (planned.peak_bytes, planned.floor_bytes, planned.floor) == (answer.peak_bytes, answer.floor_bytes, answer.floor)
    refused = acprof.estimate(model, inputs, budget=answer.floor_bytes - 1, loss_fn=mean_loss)
    assert (refused.verdict, refused.budget_bytes) == ("cannot_fit", answer.floor_bytes - 1)
    assert acprof.estimate(model, inputs, budget="50%", loss_fn=mean_loss).budget_bytes == answer.peak_bytes // 2


def test_a_saved_plan_applies_in_another_model_object_without_profiling(tmp_path):
    model, inputs = net_and_inputs()
    _, budget = halfway(model, inputs)
    fitted = acprof.fit(model, inputs, budget=budget, loss_fn=mean_loss)
    fitted.save(str(tmp_path / "plan.json"))
    assert os.path.isfile(tmp_path / "plan.profile.json")
    again, _ = net_and_inputs()
    applied = acprof.apply(again, str(tmp_path / "plan.json"), inputs)
    ours = train(applied, inputs, torch.optim.SGD(again.parameters(), lr=0.1, momentum=0.9))
    theirs = train(fitted.module, inputs, torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9))
    assert all(torch.equal(a, b) for a, b in zip(ours, theirs))


class BranchesOnAValue(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(64, 64)

    def forward(self, x):
        y = self.fc(x)
        return torch.relu(y) if y.sum() > 0 else y


class TanhWherePositive(torch.nn.Module):
    def forward(self, x):
        return torch.tanh(x) if x.mean() > 0 else x


def test_a_branch_on_a_value_is_fitted_and_a_step_down_the_other_branch_raises_step_departs():
    """The op stream is what eager ran, so a Python `if` on a tensor's value is recorded on the
    branch the example took, and fitted bit for bit; a later step whose value takes the other branch
    runs other ops, and the installed plan raises StepDeparts there, never trains the profiled
    branch's ops silently."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(TanhWherePositive(), torch.nn.Linear(64, 256), torch.nn.GELU(),
                                torch.nn.Linear(256, 256), torch.nn.GELU(), torch.nn.Linear(256, 256),
                                torch.nn.GELU(), torch.nn.Linear(256, 64))
    positive, other = torch.randn(512, 64) + 1, torch.randn(512, 64) - 1
    answer = acprof.estimate(model, (positive,))
    fitted = acprof.fit(model, (positive,), budget=answer.floor_bytes + (answer.peak_bytes - answer.floor_bytes) // 4)
    assert fitted.segments > 0 and fitted.measured_peak_bytes == fitted.predicted_peak_bytes <= fitted.budget_bytes
    assert fitted.verification["mode"] == "bitwise"
    model(positive).sum().backward()  # the profiled branch trains
    model.train()
    with pytest.raises(acprof.StepDeparts) as raised:
        model(other).sum().backward()
    message = str(raised.value)
    assert "other ops than the profiled one" in message and "\n" not in message and len(message) < 300, message


class OneHotOfArgmax(torch.nn.Module):
    def forward(self, x):
        return x.masked_fill(torch.nn.functional.one_hot(x.argmax(-1), x.size(-1)).to(torch.bool), 0.0)


def test_a_value_a_torch_op_reads_inside_itself_decides_nothing_and_another_step_trains_bit_for_bit():
    """one_hot reads its classes' min and max with item() inside itself; those values reach no
    Python of the module, so a later step whose classes differ (max 0, profiled 63) runs the same ops
    and trains bit for bit like the module itself, not StepDeparts."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(OneHotOfArgmax(), torch.nn.Linear(64, 256), torch.nn.GELU(),
                                torch.nn.Linear(256, 256), torch.nn.GELU(), torch.nn.Linear(256, 64))
    example, other = torch.randn(512, 64), torch.randn(512, 64)
    other[:, 0] += 100.0
    answer = acprof.estimate(model, (example,))
    fitted = acprof.fit(model, (example,), budget=answer.floor_bytes + (answer.peak_bytes - answer.floor_bytes) // 4)
    assert fitted.segments > 0 and fitted.measured_peak_bytes == fitted.predicted_peak_bytes <= fitted.budget_bytes

    def gradients():
        model.zero_grad(set_to_none=True)
        model(other).square().mean().backward()
        return [p.grad.clone() for p in model.parameters()]

    planned = gradients()
    acprof.uninstall(model)
    assert all(torch.equal(a, b) for a, b in zip(planned, gradients()))


def test_each_mistake_gets_its_own_type_and_one_line(tmp_path, capfd):
    model, inputs = net_and_inputs()
    cases = [
        (lambda: acprof.fit(torch.randn(3), inputs, budget="1GB"), acprof.BadInput, "not a torch.nn.Module"),
        (lambda: acprof.fit(model, (torch.randn(4, 9),), budget="1GB"), acprof.BadInput, "refuses inputs float32[4, 9]"),
        (lambda: acprof.fit(model, inputs, budget="lots"), acprof.BadInput, "lots"),
        (lambda: acprof.fit(model, inputs, budget="1KiB", loss_fn=mean_loss), acprof.InfeasibleBudget,
         "smallest peak"),
        (lambda: acprof.fit(model, inputs, budget="1GB", loss_fn=lambda out: 3), acprof.BadInput, "loss function"),
    ]
    cases.append((lambda: acprof.fit(ReturnsInt(), (torch.randn(4, 64),), budget="1GB"), acprof.BadInput,
                  "no floating-point tensor"))
    cases.append((lambda: acprof.fit(CallsACustomFunction(), (torch.randn(4, 64),), budget="1GB"), acprof.ModelFails,
                  "custom torch.autograd.Function"))
    frozen, _ = net_and_inputs()
    frozen.requires_grad_(False)
    cases.append((lambda: acprof.fit(frozen, inputs, budget="1GB"), acprof.BadInput, "no parameter that requires grad"))
    truncated = tmp_path / "truncated.json"
    truncated.write_text('{"segments": [')
    cases.append((lambda: acprof.apply(model, str(truncated), inputs), acprof.BadInput, "cannot read the plan"))
    for call, error_type, names in cases:
        with pytest.raises(error_type) as raised:
            call()
        message = str(raised.value)
        assert names in message and "\n" not in message and len(message) < 200, message
    with pytest.raises(acprof.InfeasibleBudget) as raised:
        acprof.fit(model, inputs, budget="1KiB", loss_fn=mean_loss)
    assert raised.value.floor_bytes > 1024 and raised.value.kind == "infeasible_budget"
    # torch's own printing (export's partial FX graph, fake_tensor's logged traceback) is not shown.
    assert "def forward" not in capfd.readouterr().err


def test_a_plan_made_for_another_model_is_refused(tmp_path):
    model, inputs = net_and_inputs()
    _, budget = halfway(model, inputs)
    acprof.fit(model, inputs, budget=budget, loss_fn=mean_loss).save(str(tmp_path / "plan.json"))
    torch.manual_seed(0)
    other = Net(depth=3)
    with pytest.raises(acprof.BadInput) as raised:
        acprof.apply(other, str(tmp_path / "plan.json"), inputs)
    assert "profile this module" in str(raised.value) or "make the plan" in str(raised.value)


def steps_with_and_without_the_plan(model, inputs, optimizer=None, autocast=""):
    """One measured step of the fitted model at `inputs`, and one of its own forward (bit for bit
    the same step); the plan stays installed."""
    from acprof.eager.recorder import measure_step
    from acprof.eager.verification import compare_steps
    with_plan = measure_step(model, inputs, mean_loss, optimizer=optimizer, autocast=autocast)
    installed = model.__dict__.pop("forward")
    try:
        own = measure_step(model, inputs, mean_loss, optimizer=optimizer, autocast=autocast)
    finally:
        model.forward = installed
    verdict = compare_steps(own, with_plan, "", None)
    assert not verdict["differences"], verdict["differences"]
    return with_plan, own


def test_a_plan_profiled_under_autocast_runs_at_a_smaller_batch_under_the_callers_autocast_only():
    """A profile taken under autocast (`acprof profile --module --autocast`) has the casts autocast
    made as nodes, which the plan's segments name. At a new shape the installed forward records
    under the caller's own autocast: called under the profile's, the plan runs there, bit for bit the
    model's own step and within the budget (no warning); called without autocast, the recording has
    no casts, so the plan does not apply and the call is the model's own float32 step, bit for bit,
    with its one-line warning, never the profile's casts imposed on it."""
    from acprof import engine
    from acprof.eager.recorder import record_profile
    model, inputs = net_and_inputs()
    profile = record_profile(model, inputs, loss=mean_loss, autocast="bfloat16")
    assert any("_to_copy" in node["kind"] for node in profile["nodes"]), "no cast recorded"
    floor = engine.plan_outcome(profile, "1B")["smallest_peak_bytes"]
    budget = (floor + profile["summary"]["peak_bytes"]) // 2
    plan = engine.plan(profile, f"{budget}B")
    assert plan["segments"]
    acprof.apply(model, dict(plan, profile=profile), inputs)
    smaller = (inputs[0][:5],)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with_plan, _ = steps_with_and_without_the_plan(model, smaller, autocast="bfloat16")
    assert with_plan["peak_bytes"] <= budget
    with pytest.warns(UserWarning, match="runs without the plan"):
        steps_with_and_without_the_plan(model, (inputs[0][:6],))


def test_an_installed_plan_keeps_a_bounded_number_of_recordings_and_records_a_dropped_call_again():
    """Each call signature other than fit's is recorded once and kept, the most recent
    RECORDED_CALLS_KEPT of them, so a loader of many sequence lengths does not hold a graph per
    length; a length that fell out is recorded again and still runs the plan, bit for bit."""
    kept = sys.modules["acprof.fit"].RECORDED_CALLS_KEPT
    model, inputs = net_and_inputs()
    _, budget = halfway(model, inputs)
    acprof.fit(model, inputs, budget=budget, loss_fn=mean_loss)
    lengths = list(range(30 - kept, 31))  # kept + 1 sequence lengths below fit's 32: the first falls out
    for length in lengths:
        mean_loss(model(inputs[0][:, :length])).backward()
    recorded = model.forward.acprof_recorded_calls
    assert len(recorded) == kept
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with_plan, _ = steps_with_and_without_the_plan(model, (inputs[0][:, :lengths[0]],))
    assert len(recorded) == kept and with_plan["peak_bytes"] <= budget


def test_gpt2_from_a_config_with_adamw_measures_its_prediction():
    transformers = pytest.importorskip("transformers")
    transformers.logging.set_verbosity_error()
    torch.manual_seed(0)
    config = transformers.GPT2Config(n_layer=2, n_head=2, n_embd=64, vocab_size=256, n_positions=64,
                                     bos_token_id=0, eos_token_id=0)
    model = CausalLM(transformers.GPT2LMHeadModel(config))
    inputs = (torch.randint(0, 256, (4, 64)),)
    optimizer = torch.optim.AdamW(model.parameters())
    answer, budget = halfway(model, inputs, optimizer)
    fitted = acprof.fit(model, inputs, budget=budget, loss_fn=mean_loss, optimizer=optimizer)
    assert fitted.segments >= 1
    assert fitted.measured_peak_bytes == fitted.predicted_peak_bytes <= budget
    assert fitted.verification["mode"] == "bitwise"
    smaller = {}
    for shape in ((3, 64), (4, 48)):  # a short last batch and a shorter sequence: the plan, within the budget
        with_plan, own = steps_with_and_without_the_plan(model, (torch.randint(0, 256, shape),), optimizer)
        assert with_plan["peak_bytes"] <= budget
        smaller[str(shape)] = with_plan["peak_bytes"]
    print(json.dumps({"peak": answer.peak_bytes, "floor": answer.floor_bytes, "budget": budget,
                      "predicted": fitted.predicted_peak_bytes, "measured": fitted.measured_peak_bytes,
                      "at smaller shapes": smaller}))


@pytest.mark.parametrize("family", ["Llama", "Qwen2"])
def test_grouped_query_attention_decoders_are_fitted_bit_for_bit_at_their_prediction(family):
    """transformers' grouped-query attention passes enable_gqa and no mask in eager but repeats the
    key/value heads under torch.export, so a graph export captured did not train like the model (the
    eager door refused Llama, 1e-9 to 3e-8 apart). The op stream is what eager runs: fitted with a
    cross-entropy loss over its logits, predicted = measured to the byte, bit for bit, and at a
    smaller batch and a shorter sequence within the budget, bit for bit the model's own. A linear's
    weight is read as t(weight) then mm there, one use of the weight, not two (a second use's
    gradient held by the checkpoint was predicted 64-256 KiB over the measured peak)."""
    transformers = pytest.importorskip("transformers")
    transformers.logging.set_verbosity_error()
    torch.manual_seed(0)
    config = getattr(transformers, f"{family}Config")(
        vocab_size=512, hidden_size=128, intermediate_size=512, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, max_position_embeddings=64, bos_token_id=0, eos_token_id=0)
    model = CausalLM(getattr(transformers, f"{family}ForCausalLM")(config))
    inputs, target = (torch.randint(0, 512, (3, 64)),), torch.randint(0, 512, (3, 64))
    loss_fn = lambda logits: torch.nn.functional.cross_entropy(logits.reshape(-1, 512), target.reshape(-1))
    answer = acprof.estimate(model, inputs, loss_fn=loss_fn)
    for budget in ((answer.peak_bytes + answer.floor_bytes) // 2, answer.floor_bytes + (answer.peak_bytes - answer.floor_bytes) // 5):
        fitted = acprof.fit(model, inputs, budget=budget, loss_fn=loss_fn)
        assert fitted.segments >= 1 and fitted.verification["mode"] == "bitwise"
        assert fitted.measured_peak_bytes == fitted.predicted_peak_bytes <= budget, (family, budget)
        for shape in ((2, 64), (3, 48)):  # a short last batch and a shorter sequence: the plan, within the budget
            with warnings.catch_warnings():
                # Warned where the plan does not run: at batch 1 the forward runs other ops (no expand of
                # the position ids), and the plan's segments do not apply there.
                warnings.filterwarnings("error", message="acprof")
                with_plan, _ = steps_with_and_without_the_plan(model, (torch.randint(0, 512, shape),))
            assert with_plan["peak_bytes"] <= budget, (family, budget, shape)
        fitted.remove()


def runs_a_checkpoint(output: torch.Tensor) -> bool:
    """Whether acprof's checkpoint is in the autograd graph that made `output`."""
    seen, stack = set(), [output.grad_fn]
    while stack:
        node = stack.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        if type(node).__name__ == "CheckpointFunctionBackward":
            return True
        stack.extend(next_node for next_node, _ in node.next_functions)
    return False


def test_the_fitted_module_is_the_model_itself_and_other_calls_run_its_own_forward(recwarn):
    model, inputs = net_and_inputs()
    keys = list(model.state_dict())
    _, budget = halfway(model, inputs)
    fitted = acprof.fit(model, inputs, budget=budget, loss_fn=mean_loss)
    assert fitted.module is model and type(model) is Net and list(model.state_dict()) == keys
    assert acprof.installed_plan(model) is not None and len(acprof.installed_plan(model).segments) == fitted.segments
    assert not recwarn.list
    with torch.no_grad():                                     # no grad: the class's forward, silently
        torch.manual_seed(5)
        expected = Net.forward(model, *inputs)                # dropout on (train mode): the same masks
        torch.manual_seed(5)
        assert torch.equal(model(*inputs), expected)
    model.eval()
    assert torch.equal(model(*inputs), Net.forward(model, *inputs))
    model.train()
    assert not recwarn.list
    short = torch.randint(0, 128, (3, 32))
    output = model(ids=short)                                 # by name, smaller: the plan, silently
    assert runs_a_checkpoint(output) and not recwarn.list
    mean_loss(output).backward()
    output = model(torch.randint(0, 128, (16, 32)))           # larger than fitted: the plan, said once
    assert runs_a_checkpoint(output)
    mean_loss(output).backward()
    mean_loss(model(torch.randint(0, 128, (16, 32)))).backward()
    assert len(recwarn.list) == 1 and "budget is promised only at the fitted shapes" in str(recwarn.list[0].message)
    fitted.remove()
    assert "forward" not in model.__dict__ and acprof.installed_plan(model) is None


def test_a_hugging_face_model_keeps_its_config_and_generate_after_fit():
    transformers = pytest.importorskip("transformers")
    transformers.logging.set_verbosity_error()
    torch.manual_seed(0)
    config = transformers.GPT2Config(n_layer=2, n_head=2, n_embd=64, vocab_size=256, n_positions=64,
                                     bos_token_id=0, eos_token_id=0, use_cache=False)
    model = transformers.GPT2LMHeadModel(config)
    inputs = (torch.randint(0, 256, (2, 32)),)
    logits_loss = lambda output: output.logits.float().pow(2).mean()  # noqa: E731
    answer = acprof.estimate(model, inputs, loss_fn=logits_loss)
    fitted = acprof.fit(model, inputs, budget=(answer.peak_bytes + answer.floor_bytes) // 2, loss_fn=logits_loss)
    assert fitted.module is model and fitted.measured_peak_bytes == fitted.predicted_peak_bytes
    assert model.config is config
    model.eval()
    generated = model.generate(inputs[0][:1, :8], max_new_tokens=4, do_sample=False, pad_token_id=0)
    assert generated.shape == (1, 12)


def test_a_hugging_face_model_fitted_at_trainers_call_trains_under_trainer_with_the_plan_like_the_unfitted_model(tmp_path):
    """fit takes keyword arguments, as transformers' Trainer calls a model (input_ids, labels and
    its num_items_in_batch), and the model's own loss; the fitted model, handed to Trainer
    unchanged, runs the plan at every step, silently, and its 5 losses and final parameters equal
    those of the same model trained without acprof, bit for bit."""
    import transformers  # with accelerate, which Trainer needs: both in requirements.txt
    transformers.logging.set_verbosity_error()
    torch.manual_seed(0)
    config = transformers.GPT2Config(n_layer=2, n_head=2, n_embd=64, vocab_size=256, n_positions=64,
                                     bos_token_id=0, eos_token_id=0, use_cache=False)
    model = transformers.GPT2LMHeadModel(config)
    unfitted = copy.deepcopy(model)
    rows = torch.randint(0, 256, (20, 32))
    dataset = [dict(input_ids=row, labels=row) for row in rows]

    def train(m, name, calls):
        args = transformers.TrainingArguments(output_dir=str(tmp_path / name), per_device_train_batch_size=4,
                                              max_steps=5, logging_steps=1, report_to=[], use_cpu=True, seed=0,
                                              save_strategy="no", disable_tqdm=True)
        hook = m.register_forward_hook(lambda module, args, kwargs, output: calls.append((kwargs, output)),
                                       with_kwargs=True)
        transformers.Trainer(model=m, args=args, train_dataset=dataset).train()
        hook.remove()
        return [p.detach().clone() for p in m.parameters()]

    own_calls: list = []
    own_parameters = train(unfitted, "own", own_calls)
    example = own_calls[0][0]                              # the batch as Trainer passes it
    assert set(example) >= {"input_ids", "labels"}
    torch.manual_seed(0)
    answer = acprof.estimate(model, example)
    fitted = acprof.fit(model, example, budget=(answer.peak_bytes + answer.floor_bytes) // 2)
    assert fitted.segments > 0 and fitted.verification["mode"] == "bitwise"
    assert fitted.measured_peak_bytes == fitted.predicted_peak_bytes <= fitted.budget_bytes
    calls: list = []
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message="acprof")  # a warning of acprof's fails the test
        parameters = train(model, "fitted", calls)
    assert len(calls) == 5 and all(runs_a_checkpoint(output.loss) for _, output in calls)
    assert [output.loss.item() for _, output in calls] == [output.loss.item() for _, output in own_calls]
    assert all(torch.equal(a, b) for a, b in zip(parameters, own_parameters))


@pytest.mark.parametrize("shape", [(7, 32), (8, 28)], ids=["short_last_batch", "shorter_sequence"])
def test_at_a_smaller_shape_the_plan_runs_within_the_budget_bit_for_bit(shape, recwarn):
    """Fitted at [8, 32], a call at a smaller shape runs the same segments on the forward captured
    at that shape: its measured peak is within the budget (the step as it is exceeds it), and its
    loss, gradients and buffers equal the model's own forward's bit for bit. The shapes are close
    enough to the fitted one that the model's own step at them is over the budget."""
    model, inputs = net_and_inputs()
    _, budget = halfway(model, inputs)
    fitted = acprof.fit(model, inputs, budget=budget, loss_fn=mean_loss)
    torch.manual_seed(1)
    with_plan, own = steps_with_and_without_the_plan(model, (torch.randint(0, 128, shape),))
    assert not recwarn.list, [str(w.message) for w in recwarn.list]
    assert with_plan["peak_bytes"] <= budget < own["peak_bytes"]
    print(json.dumps({"shape": list(shape), "budget": budget, "with_plan": with_plan["peak_bytes"],
                      "own_forward": own["peak_bytes"], "fitted_measured": fitted.measured_peak_bytes}))


class BranchesOnTheBatch(torch.nn.Module):
    """Another op stream below batch 6: an extra layer runs, so the capture there is another graph."""

    def __init__(self, width=64):
        super().__init__()
        self.net = Net(width)
        self.extra = torch.nn.Linear(128, 128)

    def forward(self, ids):
        out = self.net(ids)
        if ids.shape[0] < 6:
            out = self.extra(out)
        return out


def test_a_shape_whose_op_stream_differs_runs_the_model_itself_and_says_so(recwarn):
    """Where the forward at a new shape runs other ops than the profiled step, the plan's segments
    name nodes that capture does not have: the call runs the model's own forward (its loss and
    gradients are the model's), with one warning that its memory is not the plan's, and the
    fitted shape keeps its plan."""
    torch.manual_seed(0)
    model = BranchesOnTheBatch()
    inputs = (torch.randint(0, 128, (8, 32)),)
    _, budget = halfway(model, inputs)
    acprof.fit(model, inputs, budget=budget, loss_fn=mean_loss)
    small = torch.randint(0, 128, (4, 32))
    torch.manual_seed(3)
    loss = mean_loss(model(small))
    torch.manual_seed(3)
    assert torch.equal(loss, mean_loss(BranchesOnTheBatch.forward(model, small)))
    assert len(recwarn.list) == 1 and "records another graph" in str(recwarn.list[0].message)
    mean_loss(model(small)).backward()
    assert len(recwarn.list) == 1
    with_plan, _ = steps_with_and_without_the_plan(model, inputs)
    assert with_plan["peak_bytes"] <= budget
