"""The search bots' options checked together (``spades_env.bots.work``, docs/bots.md, Limits):
options allowed one by one whose product makes a decision too costly are refused when the bot is
built, with the estimate and the limit in the message, and the commands that start workers refuse
them before any worker starts."""

from __future__ import annotations

import os
import time

import pytest

from spades_env.bots import make_bot
from spades_env.bots import work
from spades_env.bots.work import LIMITS, search_work

from ..helpers import _main, _one_line_error

QUANTITIES = ("deals", "playouts", "network_rows", "peak_bytes", "seconds")


def _refused(level, **options) -> str:
    """The message of building ``level`` with ``options``, checked to come fast."""
    t = time.perf_counter()
    with pytest.raises(ValueError) as e:
        make_bot(level, seed=0, **options)
    assert time.perf_counter() - t < 5.0  # refused before any decision: no search was run
    msg = str(e.value)
    assert "over the limit of" in msg and "docs/bots.md, Limits" in msg and "lower " in msg
    return msg


@pytest.mark.parametrize("level", ["hard", "insane"])
def test_shipped_search_levels_are_well_inside_the_limits(level):
    est = make_bot(level, seed=0).work
    for q in QUANTITIES:
        assert getattr(est, q) <= LIMITS[q] / 10, (level, q, getattr(est, q))
    assert 50 * 4 * est.hand_seconds < LIMITS["task_seconds"] / 10  # a 50-hand label chunk


def test_shipped_expert_is_well_inside_the_limits():
    pytest.importorskip("torch")
    est = make_bot("expert", seed=0).work
    assert est.network_rows > 0  # the network's rows are counted
    for q in QUANTITIES:
        assert getattr(est, q) <= LIMITS[q] / 10, ("expert", q, getattr(est, q))


def test_samples_times_inference_factor_is_refused():
    # each allowed alone (and together with the other's default)
    make_bot("insane", seed=0, samples=2000)
    make_bot("insane", seed=0, inference_factor=1000)
    msg = _refused("insane", samples=2000, inference_factor=1000)
    assert msg.startswith("insane: samples=2000 x inference_factor=1000 = 2e+06 deals drawn "
                          "per decision, over the limit of 500,000 deals drawn"), msg
    assert "lower samples or inference_factor" in msg


def test_samples_times_exact_endgame_is_refused():
    make_bot("hard", seed=0, endgame_tricks=4)   # 100 deals solved exactly from 4 tricks left
    make_bot("hard", seed=0, samples=2000)       # 2000 deals, the last 3 tricks exact
    msg = _refused("hard", samples=2000, endgame_tricks=4)
    assert "samples=2000" in msg and "endgame_tricks=4" in msg, msg
    assert "4.8e+06 play-outs per decision, over the limit of 2e+06 play-outs" in msg, msg
    assert "lower samples or endgame_tricks" in msg


def test_bid_samples_times_bid_window_is_refused():
    make_bot("insane", seed=0, bid_samples=80_000)
    make_bot("insane", seed=0, bid_window=13)
    msg = _refused("insane", bid_samples=80_000, bid_window=13)
    assert "bid_samples=80000 x inference_factor=4 deals" in msg, msg
    assert "bid_samples=80000 x 14 candidate bids (bid_window=13)" in msg, msg
    assert "estimated seconds per decision, over the limit of 10 estimated seconds" in msg, msg
    assert "bid_window" in msg.split("lower ")[1]


def test_expert_rows_and_critic_together_are_refused():
    pytest.importorskip("torch")
    make_bot("expert", seed=0, samples=6500)   # about 1.8 GiB of network rows
    make_bot("expert", seed=0, leaf="critic")
    msg = _refused("expert", samples=6500, leaf="critic")
    assert "network rows" in msg and "critic rows" in msg and "GiB per decision" in msg, msg
    assert "over the limit of 2 GiB" in msg


def test_estimate_grows_with_every_option():
    base = search_work(100, 48)
    assert search_work(200, 48).playouts > base.playouts
    assert search_work(100, 48, infer_bids=True, inference_factor=8).deals > base.deals
    assert search_work(100, 48, endgame_tricks=4).playouts > base.playouts
    assert search_work(100, 4800, bid_window=6).playouts > search_work(100, 4800).playouts
    net = {"row_bytes": 7000, "card_rows": True}
    assert search_work(100, 48, network=net).peak_bytes > base.peak_bytes


def _no_workers(monkeypatch):
    import spades_env.workers

    def refuse(*a, **k):
        raise AssertionError("a worker pool was started")
    monkeypatch.setattr(spades_env.workers, "worker_pool", refuse)


def test_distill_refuses_a_chunk_over_the_limit_before_any_worker(tmp_path, monkeypatch, capsys):
    pytest.importorskip("torch")
    _no_workers(monkeypatch)
    out = tmp_path / "b.pt"
    t = time.perf_counter()
    r = _main("spades_env.training.distill", "checkpoints/shipped/agent.pt",
              "--out", str(out), "--samples", "2000", "--chunk-hands", "10000",
              "--workers", "2", "--bid-deals", "0", capsys=capsys)
    line = _one_line_error(r)
    assert time.perf_counter() - t < 30
    assert "10000 hands x 4 seats" in line and "per unit of work, over the limit" in line, line
    assert not os.path.exists(tmp_path / "b_labels") and not out.exists()


def test_distill_refuses_an_expert_teacher_over_the_limit(tmp_path, monkeypatch, capsys):
    pytest.importorskip("torch")
    _no_workers(monkeypatch)
    r = _main("spades_env.training.distill", "checkpoints/shipped/agent.pt",
              "--out", str(tmp_path / "b.pt"), "--teacher", "expert", "--samples", "100000",
              "--chunk-hands", "1", "--workers", "2", capsys=capsys)
    line = _one_line_error(r)
    assert line.startswith("error: expert: samples=100000 x inference_factor=4"), line
    assert "estimated seconds per decision, over the limit of 10" in line
    assert not os.path.exists(tmp_path / "b_labels")


def test_produce_labels_checks_before_its_folder_and_workers(tmp_path, monkeypatch):
    pytest.importorskip("torch")
    from spades_env.training.labelling import produce_labels
    _no_workers(monkeypatch)
    with pytest.raises(ValueError, match=r"labelling with hard: 10000 hands x 4 seats"):
        produce_labels("checkpoints/shipped/agent.pt", str(tmp_path / "labels"), 1.0, 4,
                       10_000, 1, 2000, 2)
    assert not (tmp_path / "labels").exists()


def test_arena_checks_the_workers_together_before_starting_them(monkeypatch, capsys):
    _no_workers(monkeypatch)
    monkeypatch.setitem(work.LIMITS, "parallel_bytes", 1000)  # 1000 bytes for all workers
    r = _main("spades_env.arena", "--team0", "hard", "--team1", "medium", "--hands", "8",
              "--workers", "2", "--quiet", capsys=capsys)
    line = _one_line_error(r)
    assert "arena player hard: 2 workers x" in line and "over the limit of" in line, line


def test_teacher_records_refuses_a_chunk_over_the_limit_before_any_worker(tmp_path, monkeypatch,
                                                                          capsys):
    # teacher-records started its workers on a chunk of 100,000 insane hands (about 100 hours)
    pytest.importorskip("torch")  # spades_env.training
    _no_workers(monkeypatch)
    folder = tmp_path / "recs"
    t = time.perf_counter()
    r = _main("spades_env.training.teacher_records", "--teacher", "insane", "--chunks", "1",
              "--chunk-hands", "100000", "--workers", "1", "--out", str(folder),
              capsys=capsys)
    line = _one_line_error(r)
    assert time.perf_counter() - t < 30
    assert line.startswith("error: --teacher 'insane': --chunk-hands 100000"), line
    assert "100000 hands x 4 seats" in line and "per unit of work, over the limit" in line, line
    assert not folder.exists()
    monkeypatch.setitem(work.LIMITS, "parallel_bytes", 1000)  # and the workers' memory together
    r = _main("spades_env.training.teacher_records", "--teacher", "hard", "--chunks", "4",
              "--chunk-hands", "1", "--workers", "2", "--out", str(folder), capsys=capsys)
    line = _one_line_error(r)
    assert "2 workers x" in line and "over the limit of" in line, line
    assert not folder.exists()


def test_training_config_checks_the_search_options_together():
    pytest.importorskip("torch")  # spades_env.training
    pytest.importorskip("yaml")
    import dataclasses

    from spades_env.training.config import Args, validate
    ok = dataclasses.replace(Args(), pool_bots=["hard"], pool_search_samples=[100_000, 48])
    validate(ok)  # hard with 100,000 deals per card: about 8.5 s per decision
    bad = dataclasses.replace(ok, pool_bots=["hard", "insane"])  # insane draws 4 times as many
    with pytest.raises(ValueError, match=r"bad config: pool_search_samples: insane: samples="
                                         r"100000 x inference_factor=4 .* over the limit of"):
        validate(bad)


def test_training_config_checks_the_warm_start_teacher_together():
    # bc_teacher insane with 100,000 warm-start hands (about 100 hours) passed every check
    pytest.importorskip("torch")  # spades_env.training
    pytest.importorskip("yaml")
    import dataclasses

    from spades_env.training.config import Args, check_ready
    bad = dataclasses.replace(Args(), device="cpu", bc_teacher="insane", bc_hands=100_000)
    t = time.perf_counter()
    with pytest.raises(ValueError, match=r"^bad config: bc_teacher/bc_hands/bc_dagger_rounds/"
                                         r"bc_dagger_hands: bc_teacher insane: 104000 hands x 4 "
                                         r"seats .* over the limit of 14,400"):
        check_ready(bad)
    assert time.perf_counter() - t < 10
    check_ready(dataclasses.replace(bad, bc_teacher="medium"))  # no search: no estimate
    check_ready(dataclasses.replace(bad, bc_teacher="hard", bc_hands=2000))  # about an hour


def test_docs_state_the_limits():
    from ..helpers import ROOT
    with open(os.path.join(ROOT, "docs", "bots.md"), encoding="utf-8") as f:
        doc = f.read()
    assert f"| deals drawn | {LIMITS['deals']:,} |" in doc
    assert f"| play-outs | {LIMITS['playouts']:,} |" in doc
    assert f"| network rows (`expert`) | {LIMITS['network_rows']:,} |" in doc
    assert f"| memory | {LIMITS['peak_bytes'] // 2**30} GiB |" in doc
    assert f"| time | {LIMITS['seconds']:g} s |" in doc
    assert f"**{LIMITS['task_seconds'] / 3600:g} hours**" in doc
    assert f"**{LIMITS['parallel_bytes'] // 2**30} GiB**" in doc
