"""What the agent thinks of a decision: the play app's hint and the replay view's analysis.

For one seat's ``PlayerView`` (its information set only: the view holds no other hand),
``Analyst.analyse`` gives one row per legal action with

- ``prob``: the trained checkpoint's probability of the action
  (``spades_env.bots.checkpoint_bot.CheckpointBot.action_probs``; default checkpoint
  ``checkpoints/shipped/agent.pt``), None when no checkpoint can be loaded (the reason is in
  ``checkpoint_error``; torch is an optional extra);
- ``value``: the search bot's estimate of a card in points (``make_bot("hard").card_values``: the
  average over sampled deals of the hand's score difference for the seat's team), in the play
  phase only (None while bidding or passing). Equivalent cards (``HardBot._candidates``) share
  their value; with one candidate the value is None (nothing to compare).

The search bot's random numbers are seeded from the caller's key, so the same decision gets the
same numbers. One analysis runs at a time (the bots are shared); callers run it off the server's
event loop.
"""

from __future__ import annotations

import math
import os
import threading
import time

import numpy as np

from ..cards import action_parts
from ..engine import Phase

__all__ = ["Analyst", "action_label", "default_checkpoint"]


def default_checkpoint() -> str | None:
    """The shipped agent (``agents.SHIPPED_CHECKPOINT``: in the installed package, or
    ``checkpoints/shipped/agent.pt`` of a checkout) when it exists, else None."""
    from ..agents import SHIPPED_CHECKPOINT
    return str(SHIPPED_CHECKPOINT) if SHIPPED_CHECKPOINT.is_file() else None


def action_label(action: int, jokers: bool = False) -> str:
    """``6♣`` for a card (``BJ``, ``LJ`` for the jokers with ``jokers``: ``Rules.jokers``), ``bid
    3`` / ``Nil`` / ``Blind Nil`` / ``look`` for the others."""
    kind, words = action_parts(action, True, jokers)
    if kind == "look":
        return "look at the cards"
    return f"bid {words}" if kind == "bid" and words.isdigit() else words


class Analyst:
    """The checkpoint and the search bot, loaded on first use and shared.

    Args:
        checkpoint: a checkpoint file for the probabilities (None: no probabilities).
        search: the ``make_bot`` name of the search bot (``hard``).
    """

    def __init__(self, checkpoint: str | None, search: str = "hard"):
        self.checkpoint = checkpoint
        self.search = search
        self._lock = threading.Lock()
        self._policy = None
        self._policy_error = None if checkpoint else "no checkpoint given"
        self._search_bot = None
        self._warm_started = None  # perf_counter() when ``warm`` started, then its seconds
        self._warm_seconds = None

    def warm(self, views) -> None:
        """Load the checkpoint and the search bot, and analyse ``views`` (throw-away decisions:
        ``session.warm_views()``), in a background thread (returns at once; once only), so the
        first hint does not pay for it."""
        with self._lock:
            if self._warm_started is not None:
                return
            self._warm_started = time.perf_counter()

        def run():
            try:
                for k, v in enumerate(views):
                    self.analyse(v, (k,))
            except Exception:  # noqa: BLE001 - the first real hint says what is wrong
                pass
            self._warm_seconds = round(time.perf_counter() - self._warm_started, 3)
        threading.Thread(target=run, name="spades-play-warm-analysis", daemon=True).start()

    def status(self) -> dict:
        """``{"key": "analysis", "label", "state", "seconds"}`` as ``BotPool.status``: ``ready``
        once loaded (by ``warm`` or a first analysis), ``loading`` while ``warm`` runs, else
        ``cold``."""
        out = {"key": "analysis", "label": "the hint (the agent and the search)"}
        if self._warm_seconds is not None:
            return {**out, "state": "ready", "seconds": self._warm_seconds}
        if self._warm_started is not None:
            return {**out, "state": "loading",
                    "seconds": round(time.perf_counter() - self._warm_started, 3)}
        if self._search_bot is not None and (self._policy is not None
                                             or self._policy_error is not None):
            return {**out, "state": "ready", "seconds": 0.0}
        return {**out, "state": "cold", "seconds": 0.0}

    def _load_policy(self):
        if self._policy is None and self._policy_error is None:
            try:
                from ..bots import make_bot
                self._policy = make_bot(f"checkpoint:{self.checkpoint}")
            except (ImportError, ValueError, OSError, RuntimeError) as e:
                self._policy_error = f"the checkpoint {self.checkpoint} cannot be loaded: {e}"
        return self._policy

    def analyse(self, view, key=(0,), played: int | None = None) -> dict:
        """The rows of ``view``'s decision (see the module docstring).

        Args:
            view: the ``PlayerView`` of the seat to act.
            key: ints seeding the search bot's random numbers.
            played: the action actually played (the replay view marks it), or None.
        Returns:
            ``{"seat", "phase", "rows": [{"action", "label", "prob", "value", "played"}],
            "checkpoint", "checkpoint_error", "search", "best_prob", "best_value"}``.
        Raises:
            ValueError: the view's seat has no legal action.
        """
        legal = sorted(int(a) for a in view.legal_actions)
        if not legal:
            raise ValueError(f"seat {view.seat} has no decision to analyse (not its turn)")
        with self._lock:
            probs = None
            policy_error = None
            policy = self._load_policy()
            if policy is not None:
                try:
                    probs = policy.action_probs(view)
                except ValueError as e:  # a network without the rules piece, other rules
                    policy_error = str(e)
            values = {}
            if view.phase == Phase.PLAY and len(legal) > 1:
                from ..bots import make_bot
                if self._search_bot is None:
                    self._search_bot = make_bot(self.search, seed=0)
                bot = self._search_bot
                bot.rng = np.random.default_rng([int(x) for x in key])
                cards, vals = bot.card_values(view)
                by_card = dict(zip(cards, vals))
                cur = None
                # an equivalent card follows its candidate in the deck's order
                for c in sorted(legal, key=view.rules.deck.strength.__getitem__):
                    if c in by_card:
                        cur = c
                    v = by_card.get(cur)
                    values[c] = None if v is None or math.isnan(v) else round(float(v), 2)
        rows = [{"action": a, "label": action_label(a, view.rules.jokers),
                 "prob": None if probs is None else round(float(probs[a]), 4),
                 "value": values.get(a), "played": played == a} for a in legal]
        best_prob = max(rows, key=lambda r: r["prob"])["action"] if probs is not None else None
        scored = [r for r in rows if r["value"] is not None]
        best_value = max(scored, key=lambda r: r["value"])["action"] if scored else None
        phase = ("bidding", "exchange", "play", "over")[view.phase]
        return {"seat": int(view.seat), "phase": phase,
                "rows": rows, "checkpoint": None if probs is None else os.path.basename(
                    self.checkpoint), "checkpoint_error": policy_error or self._policy_error,
                "search": self.search, "best_prob": best_prob, "best_value": best_value}
