"""Command line of the training run.

``spades train --config configs/default.yaml [--device cuda] [--resume PATH]
[--overwrite] [--vs BOT ... [--games N]] [--ray ADDRESS] [--set name=value ...]
[--<field> value ...]``

Runs ``spades_env.training.ppo_selfplay.train``: TensorBoard logs in ``runs/<name>/`` (open with
``tensorboard --logdir runs``), checkpoints in ``checkpoints/<name>/`` (``latest.pt``, ``best.pt``),
a tqdm progress bar, and at the end the evaluation table against ``eval_opponents``.

Before any work every config value, bot name, the device and (with ``--resume``) every section of
the checkpoint are checked; a run never writes into the folders of an earlier or a running run
with the same name (it takes ``NAME-2``... unless ``--overwrite``). Errors (bad input, a full disk,
a folder that cannot be written, a missing package) end with one ``error: ...`` line and exit
status 2; Ctrl-C with one ``interrupted: ...`` line naming the checkpoint to resume (or saying
that none was written yet) and exit status 130.
"""

from __future__ import annotations

import argparse
import os
import sys

from spades_env import options as opt

from .config import add_cli, args_from_cli, field_table, resume_base


def _empty_value(ns) -> str | None:
    """The first option given an empty value (``--config ""``, ``--lr ""``, ``--set lr=``), as
    the message says it; None when there is none. An empty value would otherwise mean "none"
    (a run from the defaults, a fresh run instead of ``--resume``) or be read as YAML null."""
    for option, value in (("--config", ns.config), ("--resume", ns.resume)):
        if value is not None and not value.strip():
            return f"{option}: an empty value"
    for name, value in vars(ns).items():
        if name.startswith("field_") and isinstance(value, str) and not value.strip():
            return f"--{name[len('field_'):].replace('_', '-')}: an empty value"
    for pair in ns.set:
        if "=" in pair and not pair.split("=", 1)[1].strip():
            return f"--set {pair}: an empty value (write NAME=VALUE)"
    return None


def interrupted_message() -> str:
    """What ``spades train`` says on Ctrl-C: the checkpoint a ``--resume`` continues from (the
    run's ``latest.pt``, as last saved), or that the run has written none yet."""
    from .checkpoint import held_runs
    runs = held_runs()
    if not runs:
        return "interrupted: spades train, before the run started (nothing was written)"
    run = runs[-1]
    latest = os.path.join(run.ckpt_dir, "latest.pt")
    if os.path.isfile(latest):
        return (f"interrupted: the latest checkpoint is {latest} (its last periodic save); "
                f"continue with spades train --resume {latest}")
    return f"interrupted: no checkpoint was written yet (in {run.ckpt_dir})"


def build_parser() -> argparse.ArgumentParser:
    """The parser of ``spades train``: the config fields (``config.add_cli``), the run's own
    options and the final evaluation's (``--vs``, ``--games``: ``spades_env.options``)."""
    p = argparse.ArgumentParser(
        prog="spades train",
        description="Self-play PPO for Spades. Any config field can be overridden with "
                    "--<field> VALUE or --set field=VALUE (e.g. --lr 1e-4, --set num_envs=128).")
    add_cli(p)
    p.add_argument("--resume", metavar="PATH",
                   help="continue a run exactly from its checkpoint (e.g. "
                        "checkpoints/default/latest.pt); the saved config is used, and options "
                        "given here change it where that is safe (total_decisions, max_minutes, "
                        "run_minutes, "
                        "eval settings, device...); other changes are refused by name")
    p.add_argument("--overwrite", action="store_true",
                   help="replace the checkpoints, label folders and TensorBoard logs of an "
                        "earlier run with the same name (default: the run takes a free name "
                        "NAME-2, NAME-3... and says so)")
    opt.add_vs(p, None, "after training, evaluate the run's final checkpoint against these bots "
                        "(spades eval --vs; full games in duplicate pairs): the checkpoint of "
                        "this run, whatever name it took", old=("--evaluate",))
    opt.add_games(p, "full games per opponent for --vs", old=("--evaluate-games",))
    opt.add_ray(p, "label and evaluate on this Ray cluster (auto or HOST:PORT; the config field "
                   "ray_address; pip install -e '.[ray]')", dest="field_ray_address")
    p.add_argument("--fields", action="store_true",
                   help="print the table of config fields (type, allowed values, --resume "
                        "policy, default) and exit")
    return p


def main(argv=None) -> int:
    """``spades train [options]``; returns the exit status (0 done, 2 an error, 130 Ctrl-C)."""
    p = build_parser()
    ns = p.parse_args(argv)
    problem = opt.match_problem(ns)
    if problem:
        p.error(problem)
    if ns.fields:
        print(field_table())
        return 0
    empty = _empty_value(ns)
    if empty:
        print(f"error: {empty} (give a value, or leave the option out)", file=sys.stderr)
        return 2
    try:  # the run's TensorBoard logs (torch.utils.tensorboard) need it: say so before any work
        import tensorboard  # noqa: F401
    except ImportError:
        print("error: spades train needs tensorboard, which is not installed: pip install "
              "'spades_env[train]' (torch, tensorboard, pyyaml, matplotlib)", file=sys.stderr)
        return 2
    try:
        base = None
        if ns.resume is not None:
            from .checkpoint import load_checkpoint
            base = resume_base(load_checkpoint(ns.resume)["config"], ns.resume)
        args = args_from_cli(ns, base)
        if ns.vs:
            from spades_env.bots import make_bot, quoted_name
            for opp in ns.vs:  # a typo must not cost a training run
                try:
                    make_bot(opp, seed=0)
                except ValueError as e:  # a pasted file as a name is cut (bots.quoted_name)
                    shown = opp if len(opp) <= 80 else quoted_name(opp)
                    raise ValueError(f"--vs {shown}: {e}") from None
    except (ValueError, FileNotFoundError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    from spades_env.bots import bot_inputs

    from .ppo_selfplay import train
    # read after training, so the run's folders must not hold them (--overwrite removes best.pt)
    read = ([("--config", ns.config)] if getattr(ns, "config", None) else []) + \
        bot_inputs("--vs", ns.vs or [])
    try:
        out = train(args, resume=ns.resume, overwrite=ns.overwrite, inputs=read)
    except (ValueError, FileNotFoundError, OSError) as e:  # bad input, full disk, permissions
        print(f"error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(interrupted_message(), file=sys.stderr)
        from .checkpoint import held_runs
        for run in held_runs():  # the run's folder lock (the process may go on: a library call)
            run.close()
        return 130
    if out.get("stop_reason") == "stop_after_iterations":  # stops as a killed run: no final save
        print(f"stopped after {out['iterations']} iterations by stop_after_iterations, without "
              f"a final save; checkpoint: {out['checkpoint']} holds iteration "
              f"{out['saved_iteration']}, the last periodic save (save_every: {args.save_every});"
              f" --resume continues from there")
    else:
        print(f"checkpoint: {out['checkpoint']} ({out['iterations']} iterations, "
              f"{out['decisions']} learner decisions, {out['seconds'] / 60:.1f} min)")
    return _final_tables(out, ns, args)


def _final_tables(out: dict, ns, args) -> int:
    """The end of ``spades train``: with ``--vs``, the final checkpoint in the arena (full games
    in duplicate pairs, greedy, seed 1: ``spades eval``'s table), then the run's summary
    (``run_log.format_summary``: minutes per stage, the agent against each bot). Returns the
    exit status."""
    import time

    from spades_env import Rules

    from .evaluate import format_arena_table, vs_bots
    from .run_log import format_summary
    stages, results = out.get("stages", []), []
    if ns.vs:
        t0 = time.time()
        rules = Rules.parse(args.rules)
        try:
            results = vs_bots(out["checkpoint"], ns.vs, ns.games, None, 1, rules,
                              ray_address=args.ray_address or None)
        except (ValueError, RuntimeError) as e:  # RuntimeError: a Ray node cannot run it
            print(f"error: {e}", file=sys.stderr)
            return 2
        print(format_arena_table(results, f"{out['checkpoint']} vs bots: {ns.games} full games "
                                          f"to {rules.target_score} per opponent, seed 1, "
                                          f"greedy policy"))
        stages = stages + [(f"arena (--vs, {ns.games} games each)", (time.time() - t0) / 60,
                            "the table above")]
    # stop_after_iterations makes no final save: the checkpoint is older than the stages
    if stages and out.get("stop_reason") != "stop_after_iterations":
        print()
        print(format_summary(stages, results, f"summary of {out['checkpoint']}:"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
