"""Learning curves of a training run as a PNG (matplotlib).

``plot_curve(eval_results, path)`` draws the run's evaluation points (``progress`` entries of a
checkpoint's ``eval`` list: points per hand of the greedy policy against each evaluation opponent
on duplicate deals, with their 95% intervals) twice: against learner decisions (left) and against
wall-clock minutes (right). The point at 0 decisions is the warm start; the last point, if marked
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
    ``(decisions, minutes, diff, diff_lo, diff_hi)``."""
    out: dict[str, tuple[list, list]] = {}
    for e in eval_results:
        star = e.get("network") == "distilled"
        for r in e["rows"]:
            line, stars = out.setdefault(r["opponent"], ([], []))
            p = (e["decisions"], e.get("seconds", float("nan")) / 60, r["diff"],
                 r.get("diff_lo", r["diff"]), r.get("diff_hi", r["diff"]))
            (stars if star else line).append((p, bool(e.get("final"))))
    return {k: ([p for p, _f in sorted(line, key=lambda q: (q[0][0], q[1]))],
                [p for p, _f in stars]) for k, (line, stars) in out.items()}


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
    fig.suptitle(title or "evaluation over the run (duplicate single-hand deals, greedy policy; "
                          "decisions 0 = warm start)", fontsize=10)
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
