"""Strip a training checkpoint to what playing needs (weights, network shape, config, progress,
evaluation results) and write it atomically.

    spades export checkpoints/default/best.pt --out checkpoints/shipped/agent.pt

The optimizer, RNG, environment and opponent-pool states are dropped (a stripped checkpoint cannot
be resumed, only played and evaluated), which makes the file a few MB.
"""

from __future__ import annotations

import argparse
import sys

from spades_env import options as opt
from spades_env.fileio import check_not_input, check_output_file

from .checkpoint import load_checkpoint, save_checkpoint

KEEP = ("config", "model", "model_shape", "progress", "eval")


def export_checkpoint(src: str, dst: str, note: str | None = None) -> dict:
    """Load ``src`` (raises ValueError/FileNotFoundError on a bad file), keep ``KEEP`` keys (plus
    an optional ``note`` string), write ``dst`` atomically, return the written dict.

    Raises:
        ValueError, FileNotFoundError: a bad or missing ``src``, or ``dst`` naming ``src`` (the
            full checkpoint would be replaced by the stripped one).
        OSError: ``dst`` cannot be written (``could not write DST: REASON``; ``dst`` unchanged).
    """
    check_not_input(dst, [src], "--out")
    data = load_checkpoint(src)
    out = {k: data[k] for k in KEEP if k in data}
    out["source"] = src
    if note:
        out["note"] = note
    save_checkpoint(dst, out)
    return out


def build_parser() -> argparse.ArgumentParser:
    """The parser of ``spades export`` (its shared options: ``spades_env.options``)."""
    p = argparse.ArgumentParser(
        prog="spades export",
        description="Strip a training checkpoint to what playing needs (weights, network shape, "
                    "config, progress, evaluation results) and write it atomically. The "
                    "result can be played and evaluated, not resumed.")
    opt.add_checkpoint(p, "a checkpoint (e.g. checkpoints/default/best.pt)")
    opt.add_out(p, "the stripped checkpoint to write, in an existing folder (required)",
                old=("DST",))
    p.add_argument("--note", default=None, help="free text stored in the file")
    return p


def main(argv=None) -> int:
    """``spades export CHECKPOINT --out PATH [--note TEXT]``; returns the exit status (0 written,
    2 an error)."""
    p = build_parser()
    ns = p.parse_args(argv)
    opt.required(p, ns, "out", "--out")
    try:
        check_not_input(ns.out, [ns.checkpoint], "--out")  # before reading or writing anything
        check_output_file(ns.out, "--out")  # a missing folder is refused (as arena's is)
        export_checkpoint(ns.checkpoint, ns.out, ns.note)
    except (ValueError, FileNotFoundError, OSError) as e:  # bad file, full disk, a folder...
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(f"wrote {ns.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
