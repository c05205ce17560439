"""The trainer's parts: the run's one clock (``Clock``), its one evaluation helper
(``record_eval``, in ``training.run_log``, re-exported by ``ppo_selfplay``) and the opponent
pool's frozen snapshots."""

import time

import pytest

import spades_env.training.opponents as opponents
import spades_env.training.run_log as run_log
from spades_env.training.config import Args


class _FakeTime:
    def __init__(self, now: float):
        self.now = now

    def __call__(self) -> float:
        return self.now


def test_clock_banks_the_seconds_of_a_run_and_of_ppo_across_resumes(monkeypatch):
    fake = _FakeTime(100.0)
    monkeypatch.setattr(time, "time", fake)
    progress = {"seconds": 10.0, "ppo_seconds": 50.0}  # from the run before a resume
    clock = run_log.Clock(progress)
    fake.now = 103.0
    assert clock.total() == 13.0 and progress["seconds"] == 10.0  # read only
    fake.now = 105.0
    clock.bank()
    assert progress["seconds"] == 15.0
    fake.now = 106.5
    assert clock.total() == 16.5
    clock.bank()
    clock.bank()  # nothing passed since: nothing added twice
    assert progress["seconds"] == 16.5
    fake.now = 200.0
    clock.start_ppo()
    fake.now = 230.0
    assert clock.ppo_seconds() == 80.0 and progress["ppo_seconds"] == 80.0
    fake.now = 231.0
    assert clock.ppo_seconds() == 81.0
    fresh = run_log.Clock({"iteration": 0})  # a new run: no seconds yet
    fake.now = 232.0
    assert fresh.total() == 1.0
    fresh.bank()
    assert fresh.progress["seconds"] == 1.0


class _Writer:
    def __init__(self):
        self.scalars = []

    def add_scalar(self, tag, value, step):
        self.scalars.append((tag, value, step))


def test_record_eval_appends_the_entry_draws_the_curve_logs_and_keeps_the_best(monkeypatch,
                                                                             tmp_path):
    answers = [[{"opponent": "random", "diff": 10.0, "win_rate": 0.75},
                {"opponent": "easy", "diff": -2.0, "win_rate": 0.5}],   # mean 4.0
               [{"opponent": "random", "diff": 3.0, "win_rate": 0.5},
                {"opponent": "easy", "diff": 1.0, "win_rate": 0.5}],    # mean 2.0: not better
               [{"opponent": "random", "diff": 20.0, "win_rate": 1.0},
                {"opponent": "easy", "diff": 8.0, "win_rate": 0.75}]]   # final: never "best"
    calls = []

    def fake_run_eval(agent, args, deals, seed):
        calls.append((deals, seed))
        return answers[len(calls) - 1]

    monkeypatch.setattr(run_log, "run_eval", fake_run_eval)
    fake = _FakeTime(1000.0)
    monkeypatch.setattr(time, "time", fake)
    progress = {"iteration": 3, "decisions": 600, "seconds": 5.0}
    clock = run_log.Clock(progress)
    fake.now = 1002.0
    evals, writer, logs = [], _Writer(), []
    books = dict(clock=clock, evals=evals, writer=writer, ckpt_dir=str(tmp_path), log=logs.append)
    rows, best = run_log.record_eval(None, Args(), 7, 11, **books, notes={"after": "warm start"})
    assert rows == answers[0] and best is True and calls == [(7, 11)]
    assert list(evals[0]) == ["iteration", "decisions", "deals", "rows", "after", "seconds"]
    assert evals[0] == {"iteration": 3, "decisions": 600, "deals": 7, "rows": answers[0],
                        "after": "warm start", "seconds": 7.0}
    assert (progress["best_score"], progress["best_iteration"]) == (4.0, 3)
    assert writer.scalars == [("eval/diff_vs_random", 10.0, 600),
                              ("eval/win_rate_vs_random", 0.75, 600),
                              ("eval/diff_vs_easy", -2.0, 600),
                              ("eval/win_rate_vs_easy", 0.5, 600)]
    assert (tmp_path / "curve.png").exists() or logs  # drawn, or why not said
    progress.update(iteration=5, decisions=1000)
    writer.scalars.clear()
    rows, best = run_log.record_eval(None, Args(), 7, 16, **books)
    assert best is False and (progress["best_score"], progress["best_iteration"]) == (4.0, 3)
    assert list(evals[1]) == ["iteration", "decisions", "deals", "rows", "seconds"]
    assert [s[0] for s in writer.scalars][:2] == ["eval/diff_vs_random", "eval/win_rate_vs_random"]
    writer.scalars.clear()
    rows, best = run_log.record_eval(None, Args(), 9, 10_011, **books, notes={"network": "PPO"},
                                 final=True)
    assert best is False and progress["best_score"] == 4.0  # 14.0 is better, but final
    assert evals[2] == {"iteration": 5, "decisions": 1000, "deals": 9, "rows": answers[2],
                        "final": True, "network": "PPO", "seconds": 7.0}
    assert list(evals[2])[4:6] == ["final", "network"]
    assert writer.scalars == [("eval/final_diff_vs_random", 20.0, 1000),
                              ("eval/final_diff_vs_easy", 8.0, 1000)]
    assert run_log.eval_summary(rows) == "random +20.0 easy +8.0"


@pytest.mark.parametrize("pool_size", [0, 2])
def test_snapshots_are_frozen_copies_and_the_anchor_stays(pool_size):
    import torch

    from spades_env.agents.model import Agent
    args = Args(hidden=[8], head_hidden=4, pool_size=pool_size)
    opp = opponents.Opponents(args, 2)
    torch.manual_seed(0)
    net = Agent([8], 4)
    opp.add_anchor(net)
    for _ in range(3):
        opp.add_snapshot(net)
    assert opp.anchor == 1 and opp.name(1) == "warmstart"
    assert opp.pool == ([3, 4] if pool_size else [])
    assert sorted(opp.agents) == ([1, 3, 4] if pool_size else [1])
    assert opp.next_id == (5 if pool_size else 2)
    snap = opp.agents[1]
    assert not snap.training and snap is not net
    with torch.no_grad():
        net.trunk[0].weight.add_(1.0)  # the learner moves on; the frozen copy does not
    assert not torch.equal(snap.trunk[0].weight, net.trunk[0].weight)


def test_learning_rate_falls_linearly_to_zero_at_total_decisions_when_annealed():
    from spades_env.training.ppo_selfplay import learning_rate
    args = Args(lr=2e-4, total_decisions=1000, anneal_lr=True)
    assert learning_rate(args, 0) == 2e-4
    assert learning_rate(args, 250) == pytest.approx(1.5e-4, rel=1e-12)
    assert learning_rate(args, 1000) == 0.0
    assert learning_rate(args, 1300) == 0.0  # past the total (a resumed run): never negative
    assert learning_rate(args, -100) == 2e-4  # never above lr
    assert learning_rate(Args(lr=2e-4, total_decisions=1000, anneal_lr=False), 900) == 2e-4


def test_ppo_status_gives_the_minutes_left_of_the_budget_or_of_the_decisions():
    progress = {"iteration": 400, "decisions": 3_580_000}
    # 240 s of a 20-minute budget: 16.0 min left; 16.42 M decisions at 1000/s would take longer
    args = Args(max_minutes=20, total_decisions=20_000_000)
    assert run_log.ppo_status(args, progress, 240.0, 1000.0) == \
        "PPO 4.0 of 20 min (16.0 left), it 400, 3.58 M decisions (1,000/s)"
    # 420,000 decisions to go at 1000/s: 7.0 min, before the budget's 16
    args = Args(max_minutes=20, total_decisions=4_000_000)
    assert run_log.ppo_status(args, progress, 240.0, 1000.0).startswith("PPO 4.0 of 20 min (7.0 left)")
    # no budget: the decisions alone; no rate yet (the first line): nothing left to say
    args = Args(max_minutes=0, total_decisions=4_000_000)
    assert run_log.ppo_status(args, progress, 240.0, 1000.0).startswith("PPO 4.0 min (7.0 left),")
    assert run_log.ppo_status(args, progress, 0.0, 0.0) == \
        "PPO 0.0 min, it 400, 3.58 M decisions (0/s)"
    # run_minutes' estimate leaves 150 s: sooner than the budget's 16 min and the decisions' 7
    args = Args(max_minutes=20, total_decisions=4_000_000)
    assert run_log.ppo_status(args, progress, 240.0, 1000.0, 150.0).startswith(
        "PPO 4.0 of 20 min (2.5 left),")
    assert run_log.ppo_status(args, progress, 240.0, 1000.0, -30.0).startswith(
        "PPO 4.0 of 20 min (0.0 left),")


class _Side:
    games_won = 138


class _Arena:
    mode, games, point_diff_per_hand, point_diff_ci, sides = "games", 200, 7.6, (5.0, 10.2), \
        [_Side()]


def test_the_end_summary_has_minutes_per_stage_and_the_agent_against_each_bot():
    progress = {"iteration": 2055, "decisions": 18_410_952, "warmstart_seconds": 204.0,
                "warmstart": {"decisions": 720_000, "accuracy": 0.9451},
                "ppo_seconds": 1200.0, "final_eval_seconds": 12.0,
                "distill_rounds": [{"round": 1, "minutes": 9.5, "hands": 12_000,
                                    "label_minutes": 6.0}]}
    row = {"opponent": "medium", "diff": -1.7, "adj": 4.5}
    evals = [{"iteration": 0, "after": "warm start", "rows": [dict(row, adj=-6.6)]},
             {"iteration": 200, "rows": [dict(row, adj=-1.7)]},
             {"iteration": 2000, "rows": [dict(row, adj=5.0)]},
             {"iteration": 2055, "final": True, "network": "distilled", "deals": 1000,
              "rows": [dict(row, adj=4.5)]}]
    stages = run_log.stage_rows(progress, evals)
    assert stages == [
        ("warm start", 3.4, "720,000 decisions cloned, accuracy 0.945; vs medium -6.6"),
        ("PPO", 20.0, "18.41 M decisions, 2055 iterations; vs medium +5.0"),
        ("distillation round 1", 9.5, "12,000 hands labelled in 6.0 min"),
        ("final evaluation", 0.2, "1000 deals per opponent; vs medium +4.5")]
    text = run_log.format_summary(stages + [("arena", 3.0, "")], [("medium", _Arena())],
                                  "summary:")
    lines = text.splitlines()
    assert lines[0] == "summary:"
    assert "| all | 36.1 | |" in lines  # 3.4 + 20.0 + 9.5 + 0.2 + 3.0
    assert lines[-1] == "| medium | +7.6 | [+5.0, +10.2] | 138/200 |"
    # a round of an earlier PPO network (PPO went on after it) is not a stage of this one
    progress["distill_rounds"][0]["ppo_iteration"] = 1800
    assert [s[0] for s in run_log.stage_rows(progress, evals)] == \
        ["warm start", "PPO", "final evaluation"]
    # one duplicate pair has no interval (regression: "[+nan, +nan]")
    one = _Arena()
    one.point_diff_ci = (float("nan"), float("nan"))
    assert run_log.format_summary([], [("random", one)]).splitlines()[-1] == \
        "| random | +7.6 | none (1 duplicate pair) | 138/200 |"
    # a run resumed from a checkpoint without a warm start: no such row
    assert [s[0] for s in run_log.stage_rows({"iteration": 1, "decisions": 5, "ppo_seconds": 6.0},
                                             [])] == ["PPO"]
