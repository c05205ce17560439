"""Labels made beside PPO (``training.labelling.LabelsBeside``, the config field
``distill_beside_ppo``): the background processes make exactly the chunks ``produce_labels``
makes, hold the label folder while they run, and a training run's round 1 learns them."""

import os
import re
import time

import numpy as np
import pytest

from spades_env.agents.checkpoint import load_checkpoint

LABEL_KEYS = ("seed", "scores", "bags", "moves", "agent_team", "values", "bid_values", "regret")


def _wait_for_chunks(beside, n: int, seconds: float = 120.0) -> None:
    t0 = time.time()
    while len(beside.chunk_paths()) < n:
        assert time.time() - t0 < seconds, f"{len(beside.chunk_paths())} of {n} chunks"
        time.sleep(0.2)


def test_labels_beside_are_the_chunks_produce_labels_makes(tiny, tmp_path):
    from spades_env.training.labelling import LabelsBeside, lock_labels, produce_labels
    from spades_env.training.labels import load_labels
    kw = dict(chunks=3, chunk_hands=2, seed=7, samples=2)
    beside = LabelsBeside(tiny, str(tmp_path / "beside"), 2, **kw)
    try:
        with pytest.raises(ValueError, match="is in use by another labelling run"):
            lock_labels(str(tmp_path / "beside"))  # held while the processes run
        _wait_for_chunks(beside, 3)
    finally:
        paths = beside.stop()
    assert [os.path.basename(p) for p in paths] == [f"chunk_0000{c}.npz" for c in range(3)]
    assert beside.stop() == paths  # a second stop does nothing more
    lock_labels(str(tmp_path / "beside")).release()  # released by stop
    lock = lock_labels(str(tmp_path / "plain"))
    try:
        plain = produce_labels(tiny, str(tmp_path / "plain"), 10.0, workers=1, log=lambda *a: None,
                               **kw)
    finally:
        lock.release()
    for a, b in zip(paths, plain):  # the same hands, moves and values, bit for bit
        la, lb = load_labels(a), load_labels(b)
        for k in LABEL_KEYS:
            np.testing.assert_array_equal(la[k], lb[k], err_msg=k)


def test_produce_labels_with_no_minutes_keeps_the_chunks_there_and_makes_none(tiny, tmp_path):
    from spades_env.training.labelling import lock_labels, produce_labels
    folder = str(tmp_path / "labels")
    kw = dict(chunk_hands=2, seed=7, samples=2, workers=1, log=lambda *a: None)
    lines: list[str] = []
    lock = lock_labels(folder)
    try:
        made = produce_labels(tiny, folder, 10.0, chunks=1, **kw)
        stats: dict = {}
        kept = produce_labels(tiny, folder, 0.0, chunks=5, stats=stats,
                              **dict(kw, log=lines.append))
    finally:
        lock.release()
    assert lines[0].startswith("chunk_00000.npz: made before this round (2 hands)")
    assert kept == made and len(made) == 1
    assert stats["kept_hands"] == 2 and stats["made_chunks"] == 0 and stats["chunks"] == 1
    assert [f for f in os.listdir(folder) if f.startswith("chunk_")] == ["chunk_00000.npz"]


def test_distill_with_no_minutes_learns_the_chunks_of_its_label_source(tiny, tmp_path):
    """``spades distill --minutes 0`` with another network's chunks (as round 1 after PPO): the
    chunks must be that network's; none are made; an empty folder is refused by name."""
    import torch

    from spades_env.agents.model import Agent
    from spades_env.training.checkpoint import save_checkpoint
    from spades_env.training.distill import distill_checkpoint
    from spades_env.training.labelling import lock_labels, produce_labels
    folder = str(tmp_path / "labels")
    lock = lock_labels(folder)
    try:
        produce_labels(tiny, folder, 10.0, chunks=1, chunk_hands=2, seed=7, samples=2,
                       workers=1, log=lambda *a: None)
    finally:
        lock.release()
    torch.manual_seed(5)
    src = str(tmp_path / "src.pt")
    save_checkpoint(src, {"config": {"name": "s"},
                          "model": Agent(hidden=[32], head_hidden=16).state_dict(),
                          "model_shape": {"hidden": [32], "head_hidden": 16},
                          "progress": {"iteration": 9}, "eval": []})
    kw = dict(minutes=0.0, chunks=4, chunk_hands=2, samples=2, seed=7, bid_deals=0, epochs=1,
              log=lambda *a: None)
    r = distill_checkpoint(src, str(tmp_path / "out.pt"), labels=folder, label_source=tiny, **kw)
    assert (r["hands"], r["chunks"], r["kept_hands"]) == (2, 1, 2)
    d = load_checkpoint(str(tmp_path / "out.pt"))
    assert d["source"] == src and d["progress"]["iteration"] == 9
    assert [f for f in os.listdir(folder) if f.startswith("chunk_")] == ["chunk_00000.npz"]
    with pytest.raises(ValueError, match="belongs to another labelling run"):  # not src's chunks
        distill_checkpoint(src, str(tmp_path / "out2.pt"), labels=folder, **kw)
    with pytest.raises(ValueError, match=r"no label chunk in .*empty to learn \(--minutes 0"):
        distill_checkpoint(src, str(tmp_path / "out3.pt"), labels=str(tmp_path / "empty"),
                           label_source=tiny, **kw)


def test_labels_beside_ppo_need_one_round_when_no_minutes_follow():
    from spades_env.training import config as cfg
    args = cfg.from_dict({"distill_beside_ppo": 1, "distill_minutes": 0, "distill_rounds": 2})
    with pytest.raises(ValueError, match="0 allows one round only"):
        cfg.check_ready(args)
    cfg.check_ready(cfg.from_dict({"distill_beside_ppo": 1}))
    assert cfg.has_distill_stage(cfg.from_dict({"distill_beside_ppo": 1}))
    assert not cfg.has_distill_stage(cfg.from_dict({}))
    with pytest.raises(ValueError, match="distill_beside_ppo: 0"):
        cfg.check_ready(cfg.from_dict({"distill_beside_ppo": 1, "rules": "suicide"}))


@pytest.mark.slow
def test_a_training_run_labels_beside_ppo_and_its_round_learns_them(tmp_path):
    from spades_env.training import config as cfg
    from spades_env.training.labels import file_sha256, load_labels
    from spades_env.training.distill_stage import BESIDE_SNAPSHOT
    from spades_env.training.ppo_selfplay import train
    from tests.training.test_distill import _nano_run
    base = _nano_run(tmp_path, "beside", total_decisions=3000, distill_beside_ppo=1,
                     distill_beside_from=2, distill_minutes=0.01, distill_samples=2,
                     distill_chunk_hands=2, distill_chunks=50, distill_epochs=1,
                     distill_workers=1, distill_bid_deals=20)
    # stopped after 3 iterations: the snapshot of iteration 2 is written and recorded
    logs: list[str] = []
    first = train(cfg.from_dict({"stop_after_iterations": 3}, base), log=logs.append)
    folder = os.path.dirname(first["checkpoint"])
    snap = os.path.join(folder, BESIDE_SNAPSHOT)
    assert load_checkpoint(snap)["progress"]["iteration"] == 2
    rec = load_checkpoint(os.path.join(folder, "latest.pt"))["progress"]["beside"]
    assert rec == {"iteration": 2, "checkpoint": "label_policy.pt", "labels": "labels_beside_it2",
                   "settings": {"distill_samples": 2, "distill_chunk_hands": 2,
                                "distill_teacher": "hard", "distill_bid_samples": 0, "seed": 3}}
    rec = dict(rec, labels=os.path.join(folder, "labels_beside_it2"))
    assert any(m.startswith("labels beside PPO stopped:") for m in logs)
    sha = file_sha256(snap)
    # resumed: the same network goes on labelling (not saved again), round 1 learns its hands
    logs.clear()
    out = train(base, resume=os.path.join(folder, "latest.pt"), log=logs.append)
    assert file_sha256(snap) == sha
    assert out["checkpoint"] == os.path.join(folder, "distilled.pt")
    progress = load_checkpoint(os.path.join(folder, "latest.pt"))["progress"]
    r1 = progress["distill_rounds"][0]
    assert r1["label_source"] == snap and r1["hands"] >= 2
    chunks = sorted(f for f in os.listdir(rec["labels"]) if f.startswith("chunk_"))
    assert r1["hands"] == 2 * len(chunks)
    for f in chunks:  # every chunk the round learned is the snapshot's hands
        assert load_labels(os.path.join(rec["labels"], f))["source_sha256"] == sha
    assert any("the hands played by " + snap in m for m in logs)
    assert [s[0] for s in out["stages"]][-2:] == ["distillation round 1", "final evaluation"]


def _stopped_beside_run(tmp_path, name, **over):
    """A nano run with labels beside PPO from iteration 0, stopped after 2 iterations."""
    from spades_env.training import config as cfg
    from spades_env.training.ppo_selfplay import train
    from tests.training.test_distill import _nano_run
    base = _nano_run(tmp_path, name, total_decisions=3000, distill_beside_ppo=1,
                     distill_samples=2, distill_chunk_hands=2, distill_chunks=50,
                     distill_epochs=1, distill_workers=1, distill_bid_deals=20, **over)
    out = train(cfg.from_dict({"stop_after_iterations": 2}, base), log=lambda *a: None)
    return base, os.path.dirname(out["checkpoint"])


@pytest.mark.slow
def test_a_resume_that_would_spoil_the_labels_beside_ppo_is_refused_before_ppo(tmp_path):
    # regressions (a user's tries): another distill_samples, or a corrupt chunk, made the label
    # process die in the middle of PPO and the round fail after it
    from spades_env.training import config as cfg
    from spades_env.training.ppo_selfplay import train
    base, folder = _stopped_beside_run(tmp_path, "spoil")
    latest = os.path.join(folder, "latest.pt")
    before = load_checkpoint(latest)["progress"]["iteration"]
    with pytest.raises(ValueError, match=r"made with distill_samples 2 \(given: 8\); resume "
                                         r"with those values"):
        train(cfg.from_dict({"distill_samples": 8}, base), resume=latest, log=lambda *a: None)
    chunks = os.path.join(folder, "labels_beside_it0")
    os.makedirs(chunks, exist_ok=True)
    with open(os.path.join(chunks, "chunk_00000.npz"), "wb") as f:
        f.write(b"truncated")
    with pytest.raises(ValueError, match=r"chunk_00000\.npz: not a readable PIMC label file"):
        train(base, resume=latest, log=lambda *a: None)
    assert load_checkpoint(latest)["progress"]["iteration"] == before  # no PPO ran


@pytest.mark.slow
def test_a_round_with_no_labels_beside_ppo_says_how_to_label_after_it(tmp_path):
    from spades_env.training.ppo_selfplay import train
    from tests.training.test_distill import _nano_run
    base = _nano_run(tmp_path, "never", total_decisions=1000, distill_beside_ppo=1,
                     distill_beside_from=1000, distill_samples=2, distill_chunk_hands=2,
                     distill_epochs=1, distill_workers=1, distill_bid_deals=20)
    latest = os.path.join(str(tmp_path / "ck" / "never"), "latest.pt")
    with pytest.raises(ValueError, match=r"round 1 has no labels to learn: PPO stopped before "
                                         r"iteration distill_beside_from \(1000\), and "
                                         r"distill_minutes is 0; label after PPO with spades "
                                         r"train --resume " + re.escape(latest)
                                         + r" --distill-minutes N"):
        train(base, log=lambda *a: None)


@pytest.mark.slow
def test_a_copied_run_labels_beside_ppo_into_its_own_folder(tmp_path):
    import shutil

    from spades_env.training import config as cfg
    from spades_env.training.ppo_selfplay import train
    base, folder = _stopped_beside_run(tmp_path, "orig")
    copy = str(tmp_path / "ck" / "copy")
    shutil.copytree(folder, copy)
    shutil.rmtree(os.path.join(folder, "labels_beside_it0"), ignore_errors=True)
    os.remove(os.path.join(folder, "label_policy.pt"))  # the original's files are not read
    logs: list[str] = []
    out = train(cfg.from_dict({"name": "copy", "distill_minutes": 0.01}, base),
                resume=os.path.join(copy, "latest.pt"),
                overwrite=True, log=logs.append)
    assert os.path.dirname(out["checkpoint"]) == copy
    assert any(os.path.join(copy, "labels_beside_it0") in m for m in logs
               if m.startswith("labels beside PPO:"))
    assert not os.path.exists(os.path.join(folder, "labels_beside_it0"))


@pytest.mark.slow
def test_a_resume_whose_label_network_is_gone_says_so_at_the_round(tmp_path):
    from spades_env.training.ppo_selfplay import train
    base, folder = _stopped_beside_run(tmp_path, "gone")
    os.remove(os.path.join(folder, "label_policy.pt"))
    logs: list[str] = []
    with pytest.raises(ValueError, match="round 1 has no labels to learn: the network that "
                                         "played the labels beside PPO is gone, and "
                                         "distill_minutes is 0"):
        train(base, resume=os.path.join(folder, "latest.pt"), log=logs.append)
    assert any(m.startswith("labels beside PPO: the network ") and "is gone" in m for m in logs)


@pytest.mark.slow
def test_labels_beside_ppo_go_on_with_newer_networks_and_round_1_learns_them_all(tmp_path):
    """``distill_beside_every``: every 2 iterations the label processes go on with that
    iteration's network, each in a folder of its own with a seed of its own; round 1 learns the
    chunks of every network (the last one's as its own, the others' as ``also_labels``)."""
    from spades_env.training import config as cfg
    from spades_env.training.distill_stage import BESIDE_SNAPSHOT
    from spades_env.training.labelling import lock_labels, produce_labels
    from spades_env.training.labels import file_sha256, load_labels
    from spades_env.training.ppo_selfplay import train
    from tests.training.test_distill import _nano_run
    base = _nano_run(tmp_path, "every", total_decisions=3000, distill_beside_ppo=1,
                     distill_beside_every=2, distill_samples=2, distill_chunk_hands=2,
                     distill_chunks=50, distill_epochs=1, distill_workers=1,
                     distill_bid_deals=20)
    logs: list[str] = []
    train(cfg.from_dict({"stop_after_iterations": 5}, base), log=logs.append)
    folder = str(tmp_path / "ck" / "every")
    progress = load_checkpoint(os.path.join(folder, "latest.pt"))["progress"]
    settings = {"distill_samples": 2, "distill_chunk_hands": 2, "distill_teacher": "hard",
                "distill_bid_samples": 0, "seed": 3}
    # networks of iterations 0, 2 and 4; seeds 3, 1003, 2003
    assert progress["beside_done"] == [
        {"iteration": 0, "checkpoint": BESIDE_SNAPSHOT, "labels": "labels_beside_it0",
         "settings": settings},
        {"iteration": 2, "checkpoint": "label_policy_it2.pt", "labels": "labels_beside_it2",
         "settings": settings, "label_seed": 1003}]
    assert progress["beside"] == {"iteration": 4, "checkpoint": "label_policy_it4.pt",
                                  "labels": "labels_beside_it4", "settings": settings,
                                  "label_seed": 2003}
    for it, snap in ((0, BESIDE_SNAPSHOT), (2, "label_policy_it2.pt"), (4, "label_policy_it4.pt")):
        assert load_checkpoint(os.path.join(folder, snap))["progress"]["iteration"] == it
    assert sum(m.startswith("labels beside PPO: ") and "chunks of 2 hands of the network of "
               "iteration" in m for m in logs) == 2
    # the chunks each network's processes make (made here: how many finish is up to the clock)
    made = {}
    for it, snap, seed, n in ((0, BESIDE_SNAPSHOT, 3, 2), (2, "label_policy_it2.pt", 1003, 1),
                              (4, "label_policy_it4.pt", 2003, 1)):
        labels = os.path.join(folder, f"labels_beside_it{it}")
        for f in os.listdir(labels) if os.path.isdir(labels) else []:
            if f.startswith("chunk_"):
                os.remove(os.path.join(labels, f))
        lock = lock_labels(labels)
        try:
            produce_labels(os.path.join(folder, snap), labels, 60.0, chunks=n, chunk_hands=2,
                           seed=seed, samples=2, workers=1, log=lambda *a: None)
        finally:
            lock.release()
        made[it] = (file_sha256(os.path.join(folder, snap)), load_labels(
            os.path.join(labels, "chunk_00000.npz"))["seed"])
    assert len({tuple(s) for _, s in made.values()}) == 3  # three seeds, three sets of deals
    logs.clear()
    # resumed with no PPO left: round 1 learns the 4 chunks of the three networks
    out = train(cfg.from_dict({"total_decisions": progress["decisions"]}, base),
                resume=os.path.join(folder, "latest.pt"), log=logs.append)
    r1 = load_checkpoint(os.path.join(folder, "latest.pt"))["progress"]["distill_rounds"][0]
    assert r1["label_source"] == os.path.join(folder, "label_policy_it4.pt")
    assert (r1["hands"], r1["kept_hands"], r1["also_hands"]) == (8, 8, 6)
    d = load_checkpoint(out["checkpoint"])["distill"]
    assert d["also_labels"] == [os.path.join(folder, f"labels_beside_it{it}") for it in (0, 2)]
    assert (d["own_hands"], d["label_seed"], d["seed"]) == (2, 2003, 3)
    assert any("and the hands of 2 other network(s) in " in m for m in logs)


def _chunks_of(folder: str, snap: str, seed: int, n: int) -> None:
    """Replace the chunks in ``folder`` by the first ``n`` its network's processes make."""
    from spades_env.training.labelling import lock_labels, produce_labels
    for f in os.listdir(folder) if os.path.isdir(folder) else []:
        if f.startswith("chunk_"):
            os.remove(os.path.join(folder, f))
    lock = lock_labels(folder)
    try:
        produce_labels(snap, folder, 60.0, chunks=n, chunk_hands=2, seed=seed, samples=2,
                       workers=1, log=lambda *a: None)
    finally:
        lock.release()


@pytest.mark.slow
def test_a_resumed_run_switches_networks_where_an_unbroken_run_would(tmp_path):
    # regressions (a review): a run resumed at a switch's iteration went on with the old network
    # for one more iteration (every later switch one late); a gone last network dropped the
    # chunks of all the others; an earlier network's chunks were never checked
    from spades_env.training import config as cfg
    from spades_env.training.ppo_selfplay import train
    from tests.training.test_distill import _nano_run
    base = _nano_run(tmp_path, "resume", total_decisions=5000, distill_beside_ppo=1,
                     distill_beside_every=2, distill_samples=2, distill_chunk_hands=2,
                     distill_chunks=50, distill_epochs=1, distill_workers=1,
                     distill_bid_deals=20)
    train(cfg.from_dict({"stop_after_iterations": 4}, base), log=lambda *a: None)
    folder = str(tmp_path / "ck" / "resume")
    latest = os.path.join(folder, "latest.pt")
    progress = load_checkpoint(latest)["progress"]
    assert progress["iteration"] == 4 and progress["beside"]["iteration"] == 2
    train(cfg.from_dict({"stop_after_iterations": 1}, base), resume=latest, log=lambda *a: None)
    progress = load_checkpoint(latest)["progress"]
    assert [r["iteration"] for r in progress["beside_done"]] == [0, 2]
    assert progress["beside"]["iteration"] == 4  # switched before iteration 4, not after it
    assert load_checkpoint(os.path.join(folder, "label_policy_it4.pt"))["progress"][
        "iteration"] == 4
    for it, snap, seed in ((0, "label_policy.pt", 3), (2, "label_policy_it2.pt", 1003),
                           (4, "label_policy_it4.pt", 2003)):
        _chunks_of(os.path.join(folder, f"labels_beside_it{it}"), os.path.join(folder, snap),
                   seed, 1)
    os.remove(os.path.join(folder, "label_policy_it4.pt"))  # the last network is gone
    bad = os.path.join(folder, "labels_beside_it2", "chunk_00001.npz")
    with open(bad, "wb") as f:
        f.write(b"truncated")
    no_ppo = cfg.from_dict({"total_decisions": progress["decisions"]}, base)
    with pytest.raises(ValueError, match=re.escape(bad) + ": not a readable PIMC label file"):
        train(no_ppo, resume=latest, log=lambda *a: None)
    os.remove(bad)
    train(no_ppo, resume=latest, log=lambda *a: None)
    r1 = load_checkpoint(latest)["progress"]["distill_rounds"][0]
    # the last network whose file is there plays round 1's own hands; all three are learned
    assert r1["label_source"] == os.path.join(folder, "label_policy_it2.pt")
    assert (r1["hands"], r1["also_hands"]) == (6, 4)


@pytest.mark.slow
def test_a_new_run_over_an_earlier_one_removes_its_labels(tmp_path):
    # regression (a review): --overwrite left the earlier run's labels beside PPO, and the new
    # run's processes refused them as another network's chunks when PPO started
    from spades_env.training.ppo_selfplay import train
    base, folder = _stopped_beside_run(tmp_path, "over")
    labels = os.path.join(folder, "labels_beside_it0")
    _chunks_of(labels, os.path.join(folder, "label_policy.pt"), 3, 1)
    stale = os.path.join(folder, "distilled_labels_it2")
    os.makedirs(stale)
    logs: list[str] = []
    from spades_env.training import config as cfg
    train(cfg.from_dict({"stop_after_iterations": 1, "seed": 4}, base), overwrite=True,
          log=logs.append)
    removed = next(m for m in logs if m.startswith("--overwrite: removed"))
    assert "distilled_labels_it2" in removed and "labels_beside_it0" in removed \
        and "label_policy.pt" in removed
    assert not os.path.exists(stale)
    assert any(m.startswith("labels beside PPO: 1 process(es)") for m in logs)
