"""Strip a training checkpoint to what playing needs (weights, network shape, config, progress,
evaluation results) and write it atomically.

    spades export checkpoints/default/best.pt checkpoints/shipped/agent.pt

The optimizer, RNG, environment and opponent-pool states are dropped (a stripped checkpoint cannot
be resumed, only played and evaluated), which makes the file a few MB.
"""

from __future__ import annotations

import argparse
import sys

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
    check_not_input(dst, [src], "destination")
    data = load_checkpoint(src)
    out = {k: data[k] for k in KEEP if k in data}
    out["source"] = src
    if note:
        out["note"] = note
    save_checkpoint(dst, out)
    return out


def main(argv=None) -> int:
    """``spades export SRC DST [--note TEXT]``; returns the exit status (0 written, 2 an error)."""
    p = argparse.ArgumentParser(
        prog="spades export",
        description="Strip a training checkpoint to what playing needs (weights, network shape, "
                    "config, progress, evaluation results) and write it atomically. The "
                    "result can be played and evaluated, not resumed.")
    p.add_argument("src", help="a checkpoint (e.g. checkpoints/default/best.pt)")
    p.add_argument("dst", help="the stripped checkpoint to write, in an existing folder")
    p.add_argument("--note", default=None, help="free text stored in the file")
    ns = p.parse_args(argv)
    try:
        check_not_input(ns.dst, [ns.src], "destination")  # before reading or writing anything
        check_output_file(ns.dst, "destination")  # a missing folder is refused (as --json is)
        export_checkpoint(ns.src, ns.dst, ns.note)
    except (ValueError, FileNotFoundError, OSError) as e:  # bad file, full disk, a folder...
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(f"wrote {ns.dst}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
