"""Same seed, same run: a tiny training run gives the same checkpoint bits and evaluations every time,
and the ones recorded from the trainer before its split into modules.

The run touches every stage ``train`` strings together: a warm start (behaviour cloning and a DAgger
round), the opponent pool (bots, snapshots and the warm-start anchor), the teacher anchor in PPO,
the privileged critic, the evaluation after the warm start, every other iteration and at the end,
``best.pt`` and ``latest.pt``. ``run_digest`` folds the run's weights, optimizer state, pool,
progress counters and evaluation rows into one SHA-256 (wall-clock figures left out).
"""

import hashlib
import os
import platform

import pytest
import torch

from spades_env.training import config as cfg
from spades_env.training.checkpoint import load_checkpoint
from spades_env.training.ppo_selfplay import train

pytestmark = pytest.mark.slow  # two training runs of a few seconds each

CONFIG = {
    "name": "same", "seed": 5, "num_envs": 4, "num_steps": 56, "total_decisions": 800,
    "hidden": [32], "head_hidden": 16, "critic_hidden": [16], "vector_env": "scalar",
    "random_start": 0.5, "bc_teacher": "medium", "bc_hands": 8, "bc_bid_deals": 20,
    "bc_epochs": 1, "bc_dagger_rounds": 1, "bc_dagger_hands": 4, "bc_dagger_epochs": 1,
    "bc_batch": 64, "opponent_share": 0.7, "pool_bots": ["random", "easy"], "pool_bot_share": 0.5,
    "pool_every": 1, "pool_size": 2, "pool_anchor": True, "ppo_teacher_coef": 0.3,
    "bag_cost": 2.0, "bid_loss_weight": 2.0, "num_minibatches": 2, "update_epochs": 2,
    "save_every": 2, "eval_every": 2, "eval_opponents": ["random"], "eval_deals": 2,
    "final_eval_deals": 2, "progress": False}

# run_digest of CONFIG by platform: (torch version, machine, torch's CPU kernels). Floating-point
# sums may round differently on another torch or CPU, so elsewhere only the run-to-run identity
# is checked. The trainer of commit 8f61056 (one 1208-line ppo_selfplay.py) gave b6c1f81b...;
# since the rule switch failed_nil_tricks_count the saved games in the env state write that
# field too, and with it taken out of them this run still gives b6c1f81b... (checked when the
# digest below was recorded): the same weights, pool, progress and evaluations. Observation
# version 3 widens the network's input to 711 floats (the rules piece), so the weights and the
# digest changed with it (f9a9aa4a... before). Since the switch jokers the saved games in the
# env state write that field too ("jokers": false); with it taken out of them this run still
# gives b771f26b... (checked when the digest below was recorded). Compact rollout storage kept
# b604446f... (the same floats). The in-run evaluations then changed what they record: the same
# deals every time (args.seed), bag-adjusted figures per deal and the comparison with the best
# one, which also picks best.pt: e06185f2... (the same with the trainer of one long train() and
# with it split into stages, checked when the digest below was recorded). The warm start's
# summary (in "progress") then named its arithmetic ("precision": "fp32"): 64455000...; with that
# key taken out this run still gives e06185f2... (checked when the digest below was recorded).
RECORDED = {
    ("2.13.0+cpu", "x86_64", "AVX512"):
        "64455000acb077e366420cbe87ad3f9f555880dcbd8a42ef2a96b39ba962d3a3",
}


def _platform() -> tuple:
    capability = getattr(torch.backends.cpu, "get_cpu_capability", lambda: "?")()
    return (torch.__version__, platform.machine(), capability)


def run_digest(ckpt_dir: str, out: dict) -> str:
    """SHA-256 of what a finished run left: the tensors of ``latest.pt`` (network, optimizer,
    pool snapshots) and of ``best.pt`` and ``warmstart.pt``, the progress counters and best score,
    every evaluation's rows, and ``train``'s return value (``out``) without its seconds."""
    h = hashlib.sha256()

    def feed(x):
        if isinstance(x, torch.Tensor):
            h.update(repr((x.dtype, tuple(x.shape))).encode())
            h.update(x.detach().cpu().contiguous().numpy().tobytes())
        elif isinstance(x, dict):
            for k in sorted(x, key=str):
                if "seconds" not in str(k):  # wall-clock figures differ from run to run
                    h.update(repr(k).encode())
                    feed(x[k])
        elif isinstance(x, (list, tuple)):
            h.update(b"[")
            for v in x:
                feed(v)
            h.update(b"]")
        else:
            h.update(repr(x).encode())

    for name in ("latest.pt", "best.pt", "warmstart.pt"):
        d = load_checkpoint(os.path.join(ckpt_dir, name))
        feed({k: d.get(k) for k in ("model", "optimizer", "pool", "progress", "eval", "env")})
    # stop_reason, saved_iteration and stages joined train's result after the digest was
    # recorded; the run they describe is what the digest guards (its counters are in "progress")
    feed({k: v for k, v in out.items()
          if k not in ("seconds", "checkpoint", "stop_reason", "saved_iteration", "stages")})
    return h.hexdigest()


def _run(tmp_path, tag: str) -> tuple[str, dict]:
    args = cfg.from_dict({**CONFIG, "runs_dir": str(tmp_path / tag / "runs"),
                          "checkpoint_dir": str(tmp_path / tag / "ck")})
    out = train(args, log=lambda *a: None)
    return run_digest(str(tmp_path / tag / "ck" / "same"), out), out


def test_the_same_seed_gives_the_same_bits_and_evaluations(tmp_path):
    first, out = _run(tmp_path, "a")
    second, again = _run(tmp_path, "b")
    assert first == second
    assert out["iterations"] == again["iterations"] > 2 and out["decisions"] >= 800
    assert repr(out["eval"]) == repr(again["eval"]) and len(out["eval"]) == 1  # repr: NaN figures
    evals = load_checkpoint(out["checkpoint"])["eval"]
    # after the warm start, every 2 iterations, then the final one
    assert [e["iteration"] for e in evals] == [0, *range(2, out["iterations"] + 1, 2),
                                               out["iterations"]]
    assert evals[0]["after"] == "warm start" and evals[-1]["final"] is True
    recorded = RECORDED.get(_platform())
    if recorded is None:
        pytest.skip(f"no digest recorded on {_platform()} (recorded: {sorted(RECORDED)})")
    assert first == recorded
