"""Self-play training of a Spades policy (needs PyTorch: ``pip install -e '.[train]'``).

Builds on the library: the network and the checkpoint format are ``spades_env.agents`` (what play
needs); this package adds what only training needs.

Modules:
- ``config``: the ``Args`` dataclass mirrored by ``configs/*.yaml``; YAML loading and CLI overrides.
- ``envs``: ``ScalarBatchEnv`` (batched adapter over scalar games) and ``make_env``.
- ``ppo_selfplay``: PPO and the ``train`` loop (CleanRL's order), which runs the stages below.
- ``warm_start``: behaviour cloning and DAgger on a teacher bot, before PPO.
- ``opponents``: the opponent pool (bots, snapshots, the warm-start anchor).
- ``distill_stage``: the search-distillation stage after PPO (``distill`` labels and fits).
- ``distill``: one round of search distillation: the fit, and ``spades distill``.
- ``labels``: the PIMC label file (format, writer, checked reader).
- ``labelling``: producing labels, in worker processes or as Ray tasks.
- ``distill_targets``: the labels as training rows (soft targets, side-suit relabelling).
- ``train``: ``spades train`` command line.
- ``checkpoint``: atomic save, resume checks and run folders (loading is ``spades_env.agents``).
- ``export``: strip a checkpoint for shipping.
- ``evaluate``: ``spades eval`` (arena tables) and the batched duplicate-deal check.
- ``teacher_records``: compact records of a teacher bot's hands, replayed for behaviour cloning.
- ``plot``: the learning curve of a run as a PNG.
"""

try:
    import torch  # noqa: F401
    import yaml  # noqa: F401
except ImportError as _e:  # the base install lacks the trainer's packages: say what to install
    raise ImportError(f"training needs {_e.name}, which is not installed: pip install "
                      f"'spades_env[train]' (torch, tensorboard, pyyaml, matplotlib)") from None
