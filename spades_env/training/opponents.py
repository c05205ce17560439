"""The opponent pool: who plays each seat of each training game.

In a share ``opponent_share`` of the episodes one team (chosen at random) is played by a pool
member: a scripted bot (``pool_bots``, searched with ``pool_search_samples``) or a frozen past
snapshot of the learner (the last ``pool_size``, one added every ``pool_every`` iterations; with
``pool_anchor`` also the network PPO started from). The other episodes are pure self-play. Only
the learner's seats make training transitions (``ppo_selfplay.rollout``).
"""

from __future__ import annotations

import numpy as np
import torch

from spades_env.agents.model import Agent
from spades_env.bots import make_bot

from .config import Args


def pool_bot_options(args: Args, name: str) -> dict:
    """``make_bot`` options of pool bot ``name``: the ``pool_search_samples`` of a search bot
    (``hard``, ``insane``), else none."""
    if name in ("hard", "insane") and args.pool_search_samples:
        card, bid = args.pool_search_samples
        return {"samples": int(card), "bid_samples": int(bid)}
    return {}


class Opponents:
    """Who plays each seat: ``ctrl[i, s]`` = 0 learner, -(k+1) bot ``pool_bots[k]``, >0 snapshot id.

    Snapshots are frozen copies of the learner (``Agent`` in eval mode) kept in ``agents``.
    A resumed pool is checked against these ids by ``checkpoint._check_pool``.
    """

    def __init__(self, args: Args, num_envs: int):
        self.args = args
        self.ctrl = np.zeros((num_envs, 4), np.int64)
        self.bots = []
        self.pool: list[int] = []  # snapshot ids, oldest first
        self.agents: dict[int, Agent] = {}
        self.next_id = 1
        self.anchor = 0  # id of the permanent warm-start snapshot (``pool_anchor``), 0 = none

    def members(self) -> list[int]:
        """Snapshot ids an episode may draw: the anchor (if any) and the recent ring."""
        return ([self.anchor] if self.anchor else []) + self.pool

    def _freeze(self, agent: Agent) -> int:
        """Keep a frozen copy of ``agent`` (eval mode, on ``args.device``); return its new id."""
        snap = Agent(agent.hidden, agent.head_hidden, agent.obs_size,
                     agent.critic_hidden).to(self.args.device)
        snap.load_state_dict(agent.state_dict())
        snap.eval()
        self.agents[self.next_id] = snap
        self.next_id += 1
        return self.next_id - 1

    def add_anchor(self, agent: Agent):
        """Freeze ``agent`` as it is now as a permanent pool member (``pool_anchor``)."""
        self.anchor = self._freeze(agent)

    def reseed_bots(self, seed: int, iteration: int):
        """Fresh ``pool_bots`` for an iteration, bot k seeded from ``(seed, iteration, k)``."""
        self.bots = [make_bot(name, seed=int(np.random.default_rng([seed, iteration, k])
                                             .integers(2**31)), **pool_bot_options(self.args, name))
                     for k, name in enumerate(self.args.pool_bots)]

    def add_snapshot(self, agent: Agent):
        """Freeze ``agent`` into the ring of the last ``pool_size`` snapshots (the oldest leaves;
        a snapshot still playing a game, or the anchor, is kept until it is free)."""
        if self.args.pool_size <= 0:
            return
        self.pool.append(self._freeze(agent))
        while len(self.pool) > self.args.pool_size:
            self.pool.pop(0)
        in_use = set(self.ctrl[self.ctrl > 0].tolist()) | set(self.members())
        for k in list(self.agents):
            if k not in in_use:
                del self.agents[k]

    def assign(self, i: int, rng: np.random.Generator):
        """Choose the players of a new episode in env ``i``."""
        self.ctrl[i] = 0
        a = self.args
        members = self.members()
        have_bots, have_snaps = len(a.pool_bots) > 0, len(members) > 0
        if not (have_bots or have_snaps) or rng.random() >= a.opponent_share:
            return
        use_bot = have_bots and (not have_snaps or rng.random() < a.pool_bot_share)
        who = (-(int(rng.integers(len(a.pool_bots))) + 1) if use_bot
               else members[int(rng.integers(len(members)))])
        team = int(rng.integers(2))
        self.ctrl[i, team] = who
        self.ctrl[i, team + 2] = who

    def name(self, who: int) -> str:
        """What controller ``who`` is, for the figures: ``self``, a bot's name, ``warmstart``
        (the anchor) or ``snapshot``."""
        if who == self.anchor and who > 0:
            return "warmstart"
        return "self" if who == 0 else (self.args.pool_bots[-who - 1] if who < 0 else "snapshot")

    def state_dict(self) -> dict:
        """The assignments, the pool and every snapshot's weights (a checkpoint's ``pool``)."""
        return {"ctrl": torch.as_tensor(self.ctrl), "pool": list(self.pool),
                "next_id": self.next_id, "anchor": self.anchor,
                "agents": {str(k): v.state_dict() for k, v in self.agents.items()}}

    def load_state_dict(self, d: dict, args: Args):
        """Restore ``state_dict``'s output; the snapshots are built with ``args``' network shape."""
        self.ctrl = d["ctrl"].numpy().copy()
        self.pool = list(d["pool"])
        self.next_id = int(d["next_id"])
        self.anchor = int(d.get("anchor", 0))
        self.agents = {}
        for k, sd in d["agents"].items():
            a = Agent(args.hidden, args.head_hidden, critic_hidden=args.critic_hidden).to(args.device)
            a.load_state_dict(sd)
            a.eval()
            self.agents[int(k)] = a


__all__ = ["Opponents", "pool_bot_options"]
