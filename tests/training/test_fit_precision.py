"""The fits' arithmetic (``spades_env.agents.model.fit_precision``; ``precision`` of
spades_env/training/distill.py's ``distill`` and the warm start's ``bc_precision``): what
``auto`` picks, that bf16 really runs the forward passes in bfloat16 while the weights stay
float32, that it learns as float32 does, that the threads are the config's, and bad names
refused."""

import copy

import numpy as np
import pytest
import torch
from torch import nn

from spades_env.agents.model import PRECISIONS, fit_precision
from spades_env.training.checkpoint import build_agent, load_checkpoint
from spades_env.training.distill import distill, evaluate_rows
from spades_env.training.distill_targets import build_dataset
from spades_env.training.labelling import label_chunk

SHIPPED = "checkpoints/shipped/agent.pt"
CHECKS = ("_is_avx512_bf16_supported", "_is_amx_tile_supported", "_is_cpu_support_amx_tile")


@pytest.fixture
def threads():
    """Restores torch's thread count after the test, whatever it set."""
    before = torch.get_num_threads()
    yield
    torch.set_num_threads(before)


def _cpu(monkeypatch, **has):
    for name in CHECKS:  # the checks' names in newer and older torch
        monkeypatch.setattr(torch.cpu, name, lambda v=has.get(name, False): v, raising=False)


@pytest.mark.parametrize("name", CHECKS)
def test_auto_picks_bf16_where_any_check_says_native_bfloat16(monkeypatch, name):
    _cpu(monkeypatch, **{name: True})
    assert fit_precision("auto") == "bf16"
    assert fit_precision("fp32") == "fp32" and fit_precision("bf16") == "bf16"


def test_auto_is_fp32_where_no_check_says_so_or_torch_cannot_tell(monkeypatch):
    _cpu(monkeypatch)
    assert fit_precision("auto") == "fp32"
    for name in CHECKS:  # an older torch without the checks (torch>=2.2 is accepted)
        monkeypatch.delattr(torch.cpu, name, raising=False)
    assert fit_precision("auto") == "fp32"


def test_bad_precision_names_are_refused_before_any_work(tmp_path):
    assert PRECISIONS == ("auto", "fp32", "bf16")
    with pytest.raises(ValueError, match="precision must be one of .* got 'fp16'"):
        fit_precision("fp16")
    net = build_agent(load_checkpoint(SHIPPED), "cpu")
    before = {k: v.clone() for k, v in net.state_dict().items()}
    with pytest.raises(ValueError, match="precision must be one of .* got 'auto'"):
        distill(net, {}, precision="auto")  # distill takes the picked one, not "auto"
    assert all(torch.equal(before[k], v) for k, v in net.state_dict().items())
    from spades_env.training.distill import distill_checkpoint
    with pytest.raises(ValueError, match="got 'fp16'"):
        distill_checkpoint(SHIPPED, str(tmp_path / "o.pt"), precision="fp16")
    assert list(tmp_path.iterdir()) == []  # no label folder, no checkpoint
    from spades_env.training.config import Args, check_field
    for field in ("distill_precision", "bc_precision"):
        with pytest.raises(ValueError, match=field):
            check_field(field, "fp16")
    assert (Args().distill_precision, Args().bc_precision, Args().bc_threads) == ("fp32", "fp32", 0)


def _dtypes(net, seen: set):
    """Record the output dtype of every linear layer in the training steps (no_grad: not)."""
    def hook(m, i, o):
        if torch.is_grad_enabled():
            seen.add(o.dtype)
    return [m.register_forward_hook(hook) for m in net.modules() if isinstance(m, nn.Linear)]


@pytest.mark.slow
def test_bf16_runs_the_forward_passes_in_bfloat16_and_learns_like_fp32():
    labels = label_chunk(SHIPPED, 4, seed=5, chunk=0, samples=8)
    net = build_agent(load_checkpoint(SHIPPED), "cpu")
    ds = build_dataset(labels, copy.deepcopy(net).eval(), temperature=3.0)
    seen: set = set()
    hooks = _dtypes(net, seen)
    rows = np.arange(len(ds["obs"]))
    before = evaluate_rows(net, ds, rows)
    torch.manual_seed(0)
    hist = distill(net, ds, epochs=60, lr=3e-3, batch=64, holdout=0.0, precision="bf16",
                   log=lambda *_: None)
    for h in hooks:
        h.remove()
    after = evaluate_rows(net, ds, rows)
    assert seen == {torch.bfloat16}  # every layer's output in the training steps
    assert all(p.dtype == torch.float32 for p in net.parameters())  # the weights stay float32
    assert np.isfinite([h["loss"] for h in hist[1:]]).all()
    # test_distill's bar for float32: the card play moves to the search, the bids stay
    assert after["card_agree"] > before["card_agree"] + 0.2
    assert after["card_regret"] < before["card_regret"] / 2
    assert after["bid_agree"] == 1.0
    # the same rows, seed and threads again: the same weights
    again = build_agent(load_checkpoint(SHIPPED), "cpu")
    torch.manual_seed(0)
    distill(again, ds, epochs=60, lr=3e-3, batch=64, holdout=0.0, precision="bf16",
            log=lambda *_: None)
    assert all(torch.equal(v, again.state_dict()[k]) for k, v in net.state_dict().items())


def _clone_args(**over):
    from spades_env.training.config import Args
    return Args(hidden=[32], head_hidden=16, critic_hidden=[16], bc_batch=64, bc_lr=3e-3, **over)


def test_the_warm_start_picks_its_threads_and_precision(threads, monkeypatch):
    from spades_env.training.warm_start import behaviour_clone, clone_precision
    _cpu(monkeypatch, _is_avx512_bf16_supported=True)
    assert clone_precision(_clone_args(bc_precision="auto")) == "bf16"
    assert clone_precision(_clone_args(bc_precision="auto", device="cuda")) == "fp32"  # CPU's
    assert clone_precision(_clone_args(bc_precision="bf16", device="cuda")) == "bf16"
    _cpu(monkeypatch)
    assert clone_precision(_clone_args(bc_precision="auto")) == "fp32"
    # bc_threads 0 is torch_threads; either way the count before is restored after the fit
    from spades_env import Rules
    from spades_env.training.ppo_selfplay import make_agent
    from spades_env.training.warm_start import collect_teacher_data
    data = collect_teacher_data("easy", 1, 3, Rules(), 0.0, 0.01)
    for over, want in (({"torch_threads": 2}, 2), ({"torch_threads": 2, "bc_threads": 1}, 1)):
        args = _clone_args(**over)
        agent, seen = make_agent(args), set()
        agent.trunk[0].register_forward_hook(lambda m, i, o: seen.add(torch.get_num_threads()))
        torch.set_num_threads(1)
        out = behaviour_clone(agent, data, args, 1, log=lambda *_: None)
        assert seen == {want} and torch.get_num_threads() == 1, over
        assert out["precision"] == "fp32"


@pytest.mark.slow
def test_the_warm_start_fits_in_bf16_and_learns(threads):
    from spades_env import Rules
    from spades_env.training.ppo_selfplay import make_agent
    from spades_env.training.warm_start import behaviour_clone, collect_teacher_data
    args = _clone_args(bc_threads=2, bc_precision="bf16")
    data = collect_teacher_data("easy", 8, 3, Rules(), 0.0, args.reward_scale,
                                bag_cost=args.bag_cost)
    torch.manual_seed(0)
    agent = make_agent(args)
    seen: set = set()
    _dtypes(agent, seen)
    logs: list[str] = []
    first = behaviour_clone(agent, data, args, 1, log=logs.append)
    last = behaviour_clone(agent, data, args, 30, log=lambda *_: None)
    assert seen == {torch.bfloat16}  # actor, value head and privileged critic alike
    assert all(p.dtype == torch.float32 for p in agent.parameters())
    assert first["precision"] == last["precision"] == "bf16" and " in bf16 " in logs[0]
    # it learns the teacher (8 hands of easy: 30 passes fit them well)
    assert last["loss"] < first["loss"] / 2 and last["accuracy"] > 0.9
