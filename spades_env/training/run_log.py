"""The run's clock, evaluations and logs (``training.ppo_selfplay.train`` uses them): the
training games' figures, the in-run duplicate-deal evaluations (the same deals every time, bags
at their long-run cost, each point against the best one before it), the learning curve, the
TensorBoard scalars and the progress bar's figures."""

from __future__ import annotations

import math
import os
import time

import numpy as np

from spades_env import Rules
from spades_env.agents.model import Agent

from .config import Args
from .evaluate import NetPlayer, duplicate_match, hand_stats, paired_difference
from .opponents import Opponents


SLOW_BOTS = ("hard", "insane")  # PIMC search bots: tens of ms a decision


def game_metrics(hands, opp: Opponents) -> dict:
    """Training-game figures of the learner from ``(HandResult, ctrl row)`` pairs.

    Point difference and win rate per opponent kind (bots by name, ``snapshot``) for games against
    the pool; bidding figures (``evaluate.hand_stats``) over every learner team.
    """
    out, by_opp, learner_hands = {}, {}, {0: [], 1: []}
    for hr, ctrl in hands:
        for team in (0, 1):
            if ctrl[team] == 0:
                learner_hands[team].append(hr)
                other = ctrl[1 - team]
                if other != 0:
                    d = hr.teams[team].hand_points - hr.teams[1 - team].hand_points
                    by_opp.setdefault(opp.name(int(other)), []).append(d)
    for name, ds in by_opp.items():
        out[f"train/diff_vs_{name}"] = float(np.mean(ds))
        out[f"train/win_rate_vs_{name}"] = float(np.mean([(d > 0) + 0.5 * (d == 0) for d in ds]))
    stats = [hand_stats(learner_hands[t], t) for t in (0, 1) if learner_hands[t]]
    if stats:
        for k in stats[0]:
            vals = [s[k] for s in stats if not math.isnan(s[k])]
            if vals:
                out[f"game/{k}"] = float(np.mean(vals))
    return out


def run_eval(agent: Agent, args: Args, deals: int, seed: int) -> list[dict]:
    """Duplicate-deal evaluation (greedy policy) against each of ``args.eval_opponents``:
    ``deals`` duplicate deals each, ``args.slow_eval_deals`` against the search bots; on the Ray
    cluster ``args.ray_address`` when set (``duplicate_match``)."""
    agent.eval()
    net = NetPlayer(agent, args.device, greedy=True)
    rows = [duplicate_match(net, o, args.slow_eval_deals if o in SLOW_BOTS else deals, seed=seed,
                            rules=Rules.parse(args.rules), ray_address=args.ray_address or None)
            for o in args.eval_opponents]
    agent.train()
    return rows


def write_curve(eval_results: list[dict], ckpt_dir: str, log=print) -> None:
    """Redraw ``<ckpt_dir>/curve.png`` (``training.plot``); a plotting failure is logged, never
    fatal (the run's work is in the checkpoints)."""
    try:
        from .plot import plot_curve
        plot_curve(eval_results, os.path.join(ckpt_dir, "curve.png"))
    except Exception as e:  # noqa: BLE001 - matplotlib missing or a drawing error
        log(f"learning curve not drawn: {type(e).__name__}: {e}")


def eval_summary(rows: list[dict]) -> str:
    """One evaluation in a line: ``easy +61.0 (bags at cost +58.2, vs best +1.3 [-0.4, +3.0])``
    by opponent: points per hand, the bag-adjusted figure and, on the same deals as the best
    evaluation before, the deal-by-deal difference to it."""
    out = []
    for r in rows:
        t = f"{r['opponent']} {r['diff']:+.1f}"
        if "adj" in r:
            t += f" (bags at cost {r['adj']:+.1f}"
            if "vs_best" in r:
                v = r["vs_best"]
                t += f", vs best {v['diff']:+.1f} [{v['lo']:+.1f}, {v['hi']:+.1f}]"
            t += ")"
        out.append(t)
    return " ".join(out)


class Clock:
    """The wall clock of a run, kept in its ``progress`` dict across resumes.

    ``progress["seconds"]``: the run's seconds up to the last ``bank`` (the time since is added by
    the next); ``progress["ppo_seconds"]``: the seconds of PPO, which ``max_minutes`` limits.
    """

    def __init__(self, progress: dict):
        self.progress = progress
        self.since = time.time()
        self.ppo_before, self.ppo_since = 0.0, self.since

    def total(self) -> float:
        """The run's seconds until now (nothing stored)."""
        return self.progress.get("seconds", 0.0) + time.time() - self.since

    def bank(self) -> None:
        """Add the seconds since the last ``bank`` to ``progress["seconds"]`` (before a save)."""
        now = time.time()
        self.progress["seconds"] = self.progress.get("seconds", 0.0) + (now - self.since)
        self.since = now

    def start_ppo(self) -> None:
        """PPO starts (or resumes) now; its earlier seconds are ``progress["ppo_seconds"]``."""
        self.ppo_before = float(self.progress.get("ppo_seconds", 0.0))
        self.ppo_since = time.time()

    def ppo_seconds(self) -> float:
        """Store and return the seconds of PPO until now, across resumes."""
        self.progress["ppo_seconds"] = self.ppo_before + time.time() - self.ppo_since
        return self.progress["ppo_seconds"]


def record_eval(agent: Agent, args: Args, deals: int, seed: int, clock: Clock, evals: list[dict],
                writer, ckpt_dir: str, log=print, notes: dict | None = None,
                final: bool = False) -> tuple[list[dict], bool]:
    """Evaluate ``agent`` (``run_eval``) and record it where a run keeps its evaluations.

    Appends ``{"iteration", "decisions", "deals", "rows", **notes, "seconds"}`` to ``evals``
    (counters from ``clock.progress``; a ``final`` entry has ``"final": True`` before the notes),
    redraws ``<ckpt_dir>/curve.png`` and writes ``eval/diff_vs_<bot>`` and
    ``eval/win_rate_vs_<bot>`` (final: ``eval/final_diff_vs_<bot>``) at step ``decisions``.

    The figure that ranks evaluations is the bag-adjusted difference (``adj``: bags at their
    long-run cost, as the arena's bag-adjusted figure), averaged over the opponents. Each row of
    an evaluation on the same deals as the best one before it (same ``deals_digest``) gets
    ``vs_best``: ``{"iteration", "diff", "lo", "hi"}``, the deal-by-deal difference of the two
    (``evaluate.paired_difference``), whose interval is much narrower than either point's.

    Returns:
        ``(rows, best)``: ``duplicate_match``'s rows, one per ``args.eval_opponents``; ``best`` is
        True when the mean bag-adjusted difference beats ``progress["best_score"]`` (not for a
        ``final`` one), which then holds it, with ``best_iteration``: the caller saves
        ``best.pt``.
    """
    progress = clock.progress
    rows = run_eval(agent, args, deals, seed=seed)
    step = progress["decisions"]
    prev = best_eval(evals)
    if prev is not None:
        for r in rows:
            old = next((q for q in prev["rows"] if q["opponent"] == r["opponent"]), None)
            if old is not None and "per_deal_adj" in old and "per_deal_adj" in r \
                    and old.get("deals_digest") == r.get("deals_digest"):
                m, lo, hi = paired_difference(r["per_deal_adj"], old["per_deal_adj"])
                r["vs_best"] = {"iteration": int(prev["iteration"]), "diff": m, "lo": lo,
                                "hi": hi}
    evals.append({"iteration": progress["iteration"], "decisions": step, "deals": deals,
                  "rows": rows, **({"final": True} if final else {}), **(notes or {}),
                  "seconds": clock.total()})
    write_curve(evals, ckpt_dir, log)
    for r in rows:
        if final:
            writer.add_scalar(f"eval/final_diff_vs_{r['opponent']}", r["diff"], step)
            if "adj" in r:
                writer.add_scalar(f"eval/final_adj_vs_{r['opponent']}", r["adj"], step)
        else:
            writer.add_scalar(f"eval/diff_vs_{r['opponent']}", r["diff"], step)
            if "adj" in r:
                writer.add_scalar(f"eval/adj_vs_{r['opponent']}", r["adj"], step)
            writer.add_scalar(f"eval/win_rate_vs_{r['opponent']}", r["win_rate"], step)
            if "vs_best" in r:
                writer.add_scalar(f"eval/adj_vs_{r['opponent']}_minus_best", r["vs_best"]["diff"],
                                  step)
    score = eval_score(rows)
    best = not final and (progress.get("best_score") is None or score > progress["best_score"])
    if best:
        progress["best_score"] = score
        progress["best_iteration"] = progress["iteration"]
    return rows, best


def eval_score(rows: list[dict]) -> float:
    """The figure that ranks evaluations: the mean over opponents of the bag-adjusted points per
    hand (``adj``; the plain ``diff`` for rows recorded before it existed)."""
    return float(np.mean([r.get("adj", r["diff"]) for r in rows]))


def best_eval(evals: list[dict]) -> dict | None:
    """The best in-run evaluation so far (highest ``eval_score``, the earliest of equals; final
    ones and distilled networks left out), or None."""
    best = None
    for e in evals:
        if e.get("final") or e.get("network") == "distilled" or not e.get("rows"):
            continue
        if best is None or eval_score(e["rows"]) > eval_score(best["rows"]):
            best = e
    return best


def log_iteration(writer, step: int, figs: dict, charts: dict, games: dict) -> None:
    """One iteration's TensorBoard scalars at ``step``: ``losses/<k>`` of the update's ``figs``,
    ``charts/<k>`` of ``charts``, and the training games' figures (``game_metrics``; NaN
    skipped)."""
    for k, v in figs.items():
        writer.add_scalar("losses/" + k, v, step)
    for k, v in charts.items():
        writer.add_scalar("charts/" + k, v, step)
    for k, v in games.items():
        if not math.isnan(v):
            writer.add_scalar(k, v, step)


def ppo_status(args: Args, progress: dict, ppo_seconds: float, rate: float,
               run_left: float = math.inf) -> str:
    """The head of a PPO progress line: ``PPO 4.1 of 20 min (15.9 left), it 400, 3.58 M
    decisions``. The minutes left are those of ``max_minutes`` or, when sooner at ``rate``
    (learner decisions per second of PPO), of ``total_decisions``, or ``run_left`` (seconds,
    ``run_minutes``' last estimate of PPO's time left) when sooner still."""
    left = run_left
    if args.max_minutes > 0:
        left = min(left, args.max_minutes * 60 - ppo_seconds)
    if rate > 0:
        left = min(left, (args.total_decisions - progress["decisions"]) / rate)
    used = ppo_seconds / 60
    head = (f"PPO {used:.1f} of {args.max_minutes:g} min" if args.max_minutes > 0
            else f"PPO {used:.1f} min")
    if math.isfinite(left):
        head += f" ({max(0.0, left) / 60:.1f} left)"
    return (f"{head}, it {progress['iteration']}, {progress['decisions'] / 1e6:.2f} M decisions "
            f"({rate:,.0f}/s)")


def stage_rows(progress: dict, evals: list[dict]) -> list[tuple[str, float, str]]:
    """The run's stages as ``(stage, minutes, what it gave)``, from ``progress`` and the
    evaluations: the warm start, PPO, each distillation round and the final evaluation (those
    that ran; minutes across resumes). "What it gave" is the stage's last in-run evaluation
    (bags at cost, by opponent) where there is one."""
    def strength(entry) -> str:
        if entry is None:
            return ""
        return "; ".join(f"vs {r['opponent']} {r.get('adj', r['diff']):+.1f}" for r in entry["rows"])

    rows = []
    if "warmstart_seconds" in progress:
        ws = progress.get("warmstart", {})
        after = next((e for e in evals if e.get("after") == "warm start"), None)
        what = f"{ws.get('decisions', 0):,} decisions cloned, accuracy {ws.get('accuracy', 0):.3f}"
        rows.append(("warm start", progress["warmstart_seconds"] / 60,
                     "; ".join(x for x in (what, strength(after)) if x)))
    if progress.get("ppo_seconds"):
        last = next((e for e in reversed(evals) if not e.get("final") and "after" not in e
                     and e.get("network") != "distilled"), None)
        what = f"{progress['decisions'] / 1e6:.2f} M decisions, {progress['iteration']} iterations"
        rows.append(("PPO", progress["ppo_seconds"] / 60,
                     "; ".join(x for x in (what, strength(last)) if x)))
    for r in progress.get("distill_rounds", []):
        if r.get("ppo_iteration", progress["iteration"]) != progress["iteration"]:
            continue  # a round of an earlier PPO network (PPO went on after it)
        rows.append((f"distillation round {r['round']}", r["minutes"],
                     f"{r['hands']:,} hands labelled in {r['label_minutes']:.1f} min"
                     + ("" if not r.get("kept_hands") else
                        f" ({r['kept_hands']:,} of them beside PPO)" if r.get("label_source")
                        else f" ({r['kept_hands']:,} kept from a stopped run, whose minutes are "
                             f"not counted)")))
    if "final_eval_seconds" in progress:
        final = next((e for e in reversed(evals) if e.get("final")), None)
        rows.append(("final evaluation", progress["final_eval_seconds"] / 60,
                     f"{final['deals']} deals per opponent; " + strength(final) if final else ""))
    return rows


def format_summary(stages: list[tuple[str, float, str]], arena=(), title: str = "") -> str:
    """The end of a run in two short tables: minutes per stage (``stage_rows`` plus, e.g., the
    arena's own row) and, with ``arena`` (``(opponent, ArenaResult)`` pairs, agent = side A),
    the agent against each bot: points per hand with the 95% interval over duplicate pairs and
    games won. The ``all`` row sums the stages' minutes (the run's set-up and the evaluation after
    the warm start are in no stage)."""
    out = [title] if title else []
    out += ["| stage | minutes | what it gave (in-run: points per hand, bags at cost) |",
            "|---|---|---|"]
    out += [f"| {name} | {minutes:.1f} | {what} |" for name, minutes, what in stages]
    out.append(f"| all | {sum(m for _, m, _ in stages):.1f} | |")
    if arena:
        out += ["", "| agent vs | points/hand | 95% CI | games won |", "|---|---|---|---|"]
        for opp, r in arena:
            lo, hi = r.point_diff_ci
            ci = f"[{lo:+.1f}, {hi:+.1f}]" if lo == lo and hi == hi else \
                "none (1 duplicate pair)"  # nan: the interval needs 2 pairs
            won = f"{r.sides[0].games_won}/{r.games}" if r.mode == "games" else "-"
            out.append(f"| {opp} | {r.point_diff_per_hand:+.1f} | {ci} | {won} |")
    return "\n".join(out)


def bar_figures(iteration: int, per_second: float, figs: dict, games: dict,
                evals: list[dict]) -> dict:
    """The progress bar's figures: iteration, decisions per second, entropy, KL, the training
    difference against ``medium`` and the last evaluation's, by opponent."""
    post = {"it": iteration, "dec/s": f"{per_second:.0f}",
            "ent": f"{figs.get('entropy', float('nan')):.2f}",
            "kl": f"{figs.get('approx_kl', float('nan')):.3f}"}
    if "train/diff_vs_medium" in games:
        post["vs_med"] = f"{games['train/diff_vs_medium']:+.0f}"
    if evals:
        for r in evals[-1]["rows"]:
            post[f"ev_{r['opponent'][:4]}"] = f"{r['diff']:+.0f}"
    return post


__all__ = ["SLOW_BOTS", "game_metrics", "run_eval", "write_curve", "eval_summary", "Clock",
           "record_eval", "eval_score", "best_eval", "log_iteration", "ppo_status", "stage_rows",
           "format_summary", "bar_figures"]
