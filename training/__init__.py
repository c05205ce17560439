"""Self-play training of a Spades policy (issue 6).

Modules:
- ``config``: the ``Args`` dataclass mirrored by ``configs/*.yaml``; YAML loading and CLI overrides.
- ``model``: ``Agent``, the shared-trunk network with bidding, card-play and value heads.
- ``envs``: ``ScalarBatchEnv`` (batched adapter over scalar games) and ``make_env``.
- ``ppo_selfplay``: warm start (behaviour cloning / DAgger) and PPO, in one file.
- ``train``: ``python -m training.train`` command line.
- ``checkpoint``: atomic save, ``weights_only`` load with clear errors; ``export``: strip for shipping.
- ``evaluate``: ``python -m training.evaluate`` (arena tables) and the batched duplicate-deal check.
- ``policy_bot``: ``CheckpointBot`` for ``make_bot("checkpoint:PATH")``.
"""
