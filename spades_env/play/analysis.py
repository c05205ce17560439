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

from ..cards import BID_OFFSET, BLIND_NIL_ACTION, action_parts
from ..engine import Phase
from .hint_line import blind_nil_note, outcome_odds, suggestion

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
            ``{"seat", "phase", "rows": [{"action", "label", "prob", "value", "make", "nil",
            "played"}], "checkpoint", "checkpoint_error", "search", "best_prob", "best_value",
            "suggestion", "notes"}``.
        Raises:
            ValueError: the view's seat has no legal action.
        """
        legal = sorted(int(a) for a in view.legal_actions)
        if not legal:
            raise ValueError(f"seat {view.seat} has no decision to analyse (not its turn)")
        with self._lock:
            probs, policy_error = self._probs(view)
            values, odds, pick = self._search(view, legal, probs, key)
            deficit = getattr(self._search_bot, "blind_nil_deficit", None)
        rows = [{"action": a, "label": action_label(a, view.rules.jokers),
                 "prob": None if probs is None else round(float(probs[a]), 4),
                 "value": values.get(a), "make": (odds.get(a) or {}).get("make"),
                 "nil": (odds.get(a) or {}).get("nil"), "played": played == a} for a in legal]
        best_prob = max(rows, key=lambda r: r["prob"])["action"] if probs is not None else None
        scored = [r for r in rows if r["value"] is not None]
        best_value = max(scored, key=lambda r: r["value"])["action"] if scored else None
        phase = ("bidding", "exchange", "play", "over")[view.phase]
        notes = [blind_nil_note(view, deficit)] if BLIND_NIL_ACTION in legal else []
        return {"seat": int(view.seat), "phase": phase,
                "rows": rows, "checkpoint": None if probs is None else os.path.basename(
                    self.checkpoint), "checkpoint_error": policy_error or self._policy_error,
                "search": self.search, "best_prob": best_prob, "best_value": best_value,
                "suggestion": suggestion(view, rows, best_prob, best_value, odds, pick,
                                         deficit),
                "notes": notes}

    def _probs(self, view):
        """The checkpoint's probabilities of ``view``'s actions, or None and why not."""
        policy = self._load_policy()
        if policy is None:
            return None, None
        try:
            return policy.action_probs(view), None
        except ValueError as e:  # a network without the rules piece, other rules
            return None, str(e)

    def _bot(self):
        if self._search_bot is None:
            from ..bots import make_bot
            self._search_bot = make_bot(self.search, seed=0)
        return self._search_bot

    def _search(self, view, legal, probs, key):
        """The search bot's side of the analysis: ``(values, odds, pick)``, ``values`` and
        ``odds`` (``hint_line.outcome_odds``) by action, ``pick`` its own choice where it values
        nothing (``hint_line.suggestion``: its Blind Nil rule, or legal cards all alike), else
        None. Its random numbers are seeded from ``key`` before each search, so a search gives
        the numbers it would give alone."""
        if view.phase == Phase.PLAY and len(legal) > 1:
            return self._card_search(view, legal, key)
        if view.phase != Phase.BIDDING or len(legal) < 2:
            return {}, {}, None
        bot = self._bot()
        if not view.looked:  # Blind Nil or look: the bot's rule (no random number drawn)
            return {}, {}, (int(bot.act(view)), "rule")
        agent = None
        if probs is not None:
            agent = max(legal, key=lambda a: probs[a]) - BID_OFFSET
        bot.rng = np.random.default_rng([int(x) for x in key])
        bids, vals, outs = bot.bid_outcomes(view)
        if agent is not None and agent not in bids:  # the agent's bid too, on the same deals
            bot.rng = np.random.default_rng([int(x) for x in key])
            bids, vals, outs = bot.bid_outcomes(view, sorted([*bids, agent]))
        values = {BID_OFFSET + b: round(float(v), 2) for b, v in zip(bids, vals)}
        odds = {BID_OFFSET + b: outcome_odds(view, o) for b, o in zip(bids, outs)}
        return values, odds, None

    def _card_search(self, view, legal, key):
        """``_search`` in play: ``card_outcomes``' values and chances by card, an equivalent card
        sharing its candidate's (it follows it in the deck's order)."""
        bot = self._bot()
        bot.rng = np.random.default_rng([int(x) for x in key])
        cards, vals, outs = bot.card_outcomes(view)
        bids = tuple(view.bids)
        by_card = {c: (v, outcome_odds(view, [(w, bids, [(1.0, won)]) for w, won in o]))
                   for c, v, o in zip(cards, vals, outs)}
        values, odds = {}, {}
        cur = None
        for c in sorted(legal, key=view.rules.deck.strength.__getitem__):
            if c in by_card:
                cur = c
            v, o = by_card.get(cur, (None, None))
            values[c] = None if v is None or math.isnan(v) else round(float(v), 2)
            if values[c] is not None:
                odds[c] = o
        return values, odds, ((cards[0], "equivalent") if len(cards) == 1 else None)
