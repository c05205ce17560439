"""Learning curves of a training run as a PNG (matplotlib).

``plot_curve(eval_results, path)`` draws the run's evaluation points (``progress`` entries of a
checkpoint's ``eval`` list: points per hand of the greedy policy against each evaluation opponent
on duplicate deals, bags at their long-run cost where the entry has that figure, with their 95%
intervals) twice: against learner decisions (left) and against wall-clock minutes (right). Below,
where evaluations carry it (``vs_best``: the same deals as the best evaluation before), each
point's deal-by-deal difference to that best one, with its interval: whether a point is really
better than the best before it. The point at 0 decisions is the warm start; the last point, if marked
``final``, is the final evaluation. An entry with ``"network": "distilled"`` (the final
evaluation after the search-distillation stage, ``spades_env.training.distill_stage``) is drawn
as a star beside the line, not joined to it. The file is written atomically.

Command line: ``spades plot CHECKPOINT [--out PATH.png]`` (default: ``curve.png`` beside the
checkpoint).
"""

from __future__ import annotations

import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from spades_env.fileio import check_not_input, check_output_file, write_atomic  # noqa: E402

COLORS = {"random": "tab:gray", "easy": "tab:green", "medium": "tab:blue", "hard": "tab:red",
          "insane": "tab:purple"}


PLOT_FORMATS = ("png", "svg", "pdf")


def curve_series(eval_results: list[dict]) -> dict[str, tuple[list, list]]:
    """Per opponent, the points of the line (in order of decisions, a final one last) and the
    points drawn as stars (entries with ``"network": "distilled"``); each point is
    ``(decisions, minutes, value, low, high)``, the value the bag-adjusted difference (``adj``)
    where the row has it, else the plain ``diff``."""
    out: dict[str, tuple[list, list]] = {}
    for e in eval_results:
        star = e.get("network") == "distilled"
        for r in e["rows"]:
            line, stars = out.setdefault(r["opponent"], ([], []))
            key = ("adj", "adj_lo", "adj_hi") if "adj" in r else ("diff", "diff_lo", "diff_hi")
            v = r[key[0]]
            p = (e["decisions"], e.get("seconds", float("nan")) / 60, v, r.get(key[1], v),
                 r.get(key[2], v))
            (stars if star else line).append((p, bool(e.get("final"))))
    return {k: ([p for p, _f in sorted(line, key=lambda q: (q[0][0], q[1]))],
                [p for p, _f in stars]) for k, (line, stars) in out.items()}


def best_deltas(eval_results: list[dict]) -> dict[str, list]:
    """Per opponent, ``(decisions, diff, low, high)`` of every evaluation's ``vs_best`` (its
    deal-by-deal difference to the best evaluation before it, on the same deals)."""
    out: dict[str, list] = {}
    for e in eval_results:
        for r in e["rows"]:
            v = r.get("vs_best")
            if isinstance(v, dict):
                out.setdefault(r["opponent"], []).append((e["decisions"], v["diff"], v["lo"],
                                                          v["hi"]))
    return out


def plot_curve(eval_results: list[dict], path: str, title: str = "") -> None:
    """Draw the evaluation points in ``eval_results`` into ``path`` (PNG, SVG or PDF, by the
    file's suffix).

    Args:
        eval_results: entries ``{"decisions": int, "seconds": float (optional), "rows": [{
            "opponent": str, "diff": float, "diff_lo": float, "diff_hi": float}, ...]}``.
        path: output file ending in ``.png``, ``.svg`` or ``.pdf``, replaced atomically.
    Raises:
        ValueError: no evaluation points, or another suffix (nothing is written).
    """
    fmt = os.path.splitext(path)[1].lower().lstrip(".")
    if fmt not in PLOT_FORMATS:
        raise ValueError(f"{path}: the plot is written as {', '.join(PLOT_FORMATS)} (by the "
                         f"file's suffix), not {('.' + fmt) if fmt else 'a file without suffix'}")
    if not eval_results:
        raise ValueError("no evaluation points to plot")
    series = curve_series(eval_results)
    deltas = best_deltas(eval_results)
    if deltas:
        fig = plt.figure(figsize=(12, 7.4))
        grid = fig.add_gridspec(2, 2, height_ratios=(1.6, 1))
        axes = [fig.add_subplot(grid[0, 0])]
        axes.append(fig.add_subplot(grid[0, 1], sharey=axes[0]))
        low = fig.add_subplot(grid[1, :], sharex=axes[0])
    else:
        fig, axes = plt.subplots(1, 2, figsize=(12, 4.6), sharey=True)
    for ax, x_i, label in ((axes[0], 0, "learner decisions"), (axes[1], 1, "wall-clock minutes")):
        for name, (pts, stars) in series.items():
            xs = [p[x_i] for p in pts]
            c = COLORS.get(name, None)
            ax.plot(xs, [p[2] for p in pts], "o-", ms=3, color=c, label=f"vs {name}")
            ax.fill_between(xs, [p[3] for p in pts], [p[4] for p in pts], color=c, alpha=0.15)
            for p in stars:
                ax.errorbar([p[x_i]], [p[2]], yerr=[[p[2] - p[3]], [p[4] - p[2]]], fmt="*",
                            ms=11, color=c, capsize=3,
                            label=f"vs {name}, after search distillation")
        ax.axhline(0, color="black", lw=0.8)
        ax.set_xlabel(label)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("points per hand (agent - opponent), 95% CI")
    axes[0].legend(loc="best", fontsize=8)
    if deltas:
        span = max(p[0] for pts in deltas.values() for p in pts) or 1
        for k, (name, pts) in enumerate(deltas.items()):
            shift = (k - (len(deltas) - 1) / 2) * 0.012 * span  # side by side, not on top
            xs = [p[0] + shift for p in pts]
            ys = [p[1] for p in pts]
            low.errorbar(xs, ys, yerr=[[y - p[2] for y, p in zip(ys, pts)],
                                       [p[3] - y for y, p in zip(ys, pts)]],
                         fmt="o", ms=4, capsize=3, color=COLORS.get(name, None),
                         label=f"vs {name}")
        low.axhline(0, color="black", lw=0.8)
        low.set_xlabel("learner decisions")
        low.set_ylabel("minus the best before\n(same deals, 95% CI)")
        low.grid(alpha=0.3)
        low.legend(loc="best", fontsize=8)
    fig.suptitle(title or "evaluation over the run (the same duplicate single-hand deals at every "
                          "point, greedy policy, bags at their long-run cost; decisions 0 = warm "
                          "start)", fontsize=10)
    fig.tight_layout()
    import io
    buf = io.BytesIO()
    fig.savefig(buf, format=fmt, dpi=110)
    plt.close(fig)
    write_atomic(path, buf.getvalue())


def build_parser():
    """The parser of ``spades plot`` (its shared options: ``spades_env.options``)."""
    import argparse

    from spades_env import options as opt
    p = argparse.ArgumentParser(prog="spades plot",
                                description="Draw a run's evaluation points as a PNG.")
    opt.add_checkpoint(p, "a checkpoint of the run (e.g. checkpoints/default/latest.pt)")
    opt.add_out(p, "the image to write: .png, .svg or .pdf (default: curve.png beside the "
                   "checkpoint)", old=("OUT",))
    return p


def main(argv=None) -> int:
    """``spades plot CHECKPOINT [--out PATH]``; returns the exit status (0 written, 2 an
    error)."""
    from .checkpoint import check_eval, load_checkpoint
    ns = build_parser().parse_args(sys.argv[1:] if argv is None else argv)
    out = ns.out or os.path.join(os.path.dirname(ns.checkpoint), "curve.png")
    try:
        data = load_checkpoint(ns.checkpoint)
        check_eval(data.get("eval", []), ns.checkpoint)
        check_not_input(out, [ns.checkpoint], "--out")
        check_output_file(out, "--out")  # a missing folder is refused (as arena's is)
        plot_curve(data.get("eval", []), out)
    except (ValueError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
