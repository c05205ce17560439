"""Command line of the training run.

``python -m training.train --config configs/default.yaml [--device cuda] [--resume PATH]
[--set name=value ...] [--<field> value ...]``

Runs ``training.ppo_selfplay.train``: TensorBoard logs in ``runs/<name>/`` (open with
``tensorboard --logdir runs``), checkpoints in ``checkpoints/<name>/`` (``latest.pt``, ``best.pt``),
a tqdm progress bar, and at the end the evaluation table against ``eval_opponents``.
"""

from __future__ import annotations

import argparse
import sys

from .config import add_cli, args_from_cli


def main(argv=None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m training.train",
        description="Self-play PPO for Spades. Any config field can be overridden with "
                    "--<field> VALUE or --set field=VALUE (e.g. --lr 1e-4, --set num_envs=128).")
    add_cli(p)
    p.add_argument("--resume", metavar="PATH",
                   help="continue a run exactly from its checkpoint (e.g. "
                        "checkpoints/default/latest.pt); the saved config is used")
    ns = p.parse_args(argv)
    try:
        args = args_from_cli(ns)
    except ValueError as e:
        p.error(str(e))
    from .ppo_selfplay import train
    try:
        out = train(args, resume=ns.resume)
    except (ValueError, FileNotFoundError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(f"checkpoint: {out['checkpoint']} ({out['iterations']} iterations, "
          f"{out['decisions']} learner decisions, {out['seconds'] / 60:.1f} min)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
