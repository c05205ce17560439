"""The fit's arithmetic (spades_env/training/distill.py: ``fit_precision``, ``distill``'s
``precision``): what ``auto`` picks, that bf16 really runs the forward passes in bfloat16 while
the weights stay float32, that it learns as float32 does, and bad names refused."""

import copy

import numpy as np
import pytest
import torch

from spades_env.training.checkpoint import build_agent, load_checkpoint
from spades_env.training.distill import PRECISIONS, distill, evaluate_rows, fit_precision
from spades_env.training.distill_targets import build_dataset
from spades_env.training.labelling import label_chunk

SHIPPED = "checkpoints/shipped/agent.pt"


@pytest.mark.parametrize("bf16,amx,picked", [(True, False, "bf16"), (False, True, "bf16"),
                                             (False, False, "fp32")])
def test_auto_picks_bf16_only_where_the_cpu_multiplies_bfloat16_natively(monkeypatch, bf16, amx,
                                                                        picked):
    monkeypatch.setattr(torch.cpu, "_is_avx512_bf16_supported", lambda: bf16, raising=False)
    monkeypatch.setattr(torch.cpu, "_is_amx_tile_supported", lambda: amx, raising=False)
    assert fit_precision("auto") == picked
    assert fit_precision("fp32") == "fp32" and fit_precision("bf16") == "bf16"


def test_auto_is_fp32_where_torch_cannot_tell(monkeypatch):
    # an older torch without the checks (torch>=2.2 is accepted)
    monkeypatch.delattr(torch.cpu, "_is_avx512_bf16_supported", raising=False)
    monkeypatch.delattr(torch.cpu, "_is_amx_tile_supported", raising=False)
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


@pytest.fixture(scope="module")
def shipped_rows():
    labels = label_chunk(SHIPPED, 4, seed=5, chunk=0, samples=8)
    net = build_agent(load_checkpoint(SHIPPED), "cpu")
    return net, build_dataset(labels, copy.deepcopy(net).eval(), temperature=3.0)


@pytest.mark.parametrize("precision,dtype", [("fp32", torch.float32), ("bf16", torch.bfloat16)])
def test_bf16_runs_the_forward_passes_in_bfloat16_and_learns_like_fp32(shipped_rows, precision,
                                                                       dtype):
    net0, ds = shipped_rows
    net = copy.deepcopy(net0)
    seen = set()
    hook = net.trunk[0].register_forward_hook(  # the training steps' (evaluate_rows: no_grad)
        lambda m, i, o: seen.add(o.dtype) if torch.is_grad_enabled() else None)
    rows = np.arange(len(ds["obs"]))
    before = evaluate_rows(net, ds, rows)
    torch.manual_seed(0)
    hist = distill(net, ds, epochs=60, lr=3e-3, batch=64, holdout=0.0, precision=precision,
                   log=lambda *_: None)
    hook.remove()
    after = evaluate_rows(net, ds, rows)
    assert seen == {dtype}  # the first layer's output
    assert all(p.dtype == torch.float32 for p in net.parameters())  # the weights stay float32
    assert np.isfinite([h["loss"] for h in hist[1:]]).all()
    # the same bar as fp32's test (test_distill): the card play moves to the search, bids stay
    assert after["card_agree"] > before["card_agree"] + 0.2
    assert after["card_regret"] < before["card_regret"] / 2
    assert after["bid_agree"] == 1.0


@pytest.mark.parametrize("precision,dtype", [("fp32", torch.float32), ("bf16", torch.bfloat16)])
def test_the_warm_start_fits_on_its_threads_in_its_precision(precision, dtype):
    from spades_env import Rules
    from spades_env.training.config import Args
    from spades_env.training.ppo_selfplay import make_agent
    from spades_env.training.warm_start import behaviour_clone, collect_teacher_data
    args = Args(hidden=[32], head_hidden=16, critic_hidden=[16], bc_threads=2,
                bc_precision=precision, bc_batch=64, bc_lr=3e-3)
    data = collect_teacher_data("easy", 8, 3, Rules(), 0.0, args.reward_scale,
                                bag_cost=args.bag_cost)
    torch.manual_seed(0)
    agent = make_agent(args)
    seen, threads = set(), set()

    def hook(m, i, o):
        seen.add(o.dtype)
        threads.add(torch.get_num_threads())
    agent.trunk[0].register_forward_hook(hook)
    torch.set_num_threads(1)
    first = behaviour_clone(agent, data, args, 1, log=lambda *_: None)
    last = behaviour_clone(agent, data, args, 30, log=lambda *_: None)
    assert seen == {dtype} and threads == {2}  # the fit's layers, on bc_threads
    assert torch.get_num_threads() == 1  # restored after the fit
    assert all(p.dtype == torch.float32 for p in agent.parameters())
    # it learns the teacher in either precision (8 hands of easy: 30 passes fit them well)
    assert last["loss"] < first["loss"] / 2 and last["accuracy"] > 0.9


def test_a_bf16_fit_gives_the_same_weights_for_the_same_seed(shipped_rows):
    net0, ds = shipped_rows
    nets = []
    for _ in range(2):
        net = copy.deepcopy(net0)
        torch.set_num_threads(2)
        distill(net, ds, epochs=2, lr=3e-3, batch=64, seed=4, precision="bf16",
                log=lambda *_: None)
        nets.append(net.state_dict())
    torch.set_num_threads(1)
    assert all(torch.equal(nets[0][k], nets[1][k]) for k in nets[0])
    assert not all(torch.equal(nets[0][k], net0.state_dict()[k]) for k in nets[0])  # it moved
