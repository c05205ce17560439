"""What the agent thinks of a decision: the play app's hint and the replay view's analysis.

For one seat's ``PlayerView`` (its information set only: the view holds no other hand),
``Analyst.analyse`` gives one row per legal action with

- ``prob``: the trained checkpoint's probability of the action
  (``spades_env.bots.checkpoint_bot.CheckpointBot.action_probs``; default checkpoint
  ``checkpoints/shipped/agent.pt``), None when no checkpoint can be loaded (the reason is in
  ``checkpoint_error``; torch is an optional extra);
- ``value``: the search bot's estimate of the move in points (``make_bot("hard")``: the average
  over its sampled deals of the hand's score difference for the seat's team). In play a card's
  (``card_outcomes``, the numbers ``card_values`` gives; equivalent cards, ``HardBot._candidates``,
  share their value; with one candidate the value is None: nothing to compare); in bidding with
  the cards seen a bid's, for the bids the search tests (``bid_outcomes``) and the agent's
  choice, all on the same deals; None elsewhere (the exchange, Blind Nil or look);
- ``make`` / ``nil``: over the same deals' outcomes, the weighted share in which the seat's team
  makes its contract / its Nil holds after that move (``outcome_odds``), where
  ``value`` is given.

and ``suggestion`` (``suggestion``: the move of the one-line hint and its text) and
``notes`` (what the table must say of the decision: a Blind Nil one, ``blind_nil_note``).
Each chance and value costs a few ms on two cores (the hint answers in 2-15 ms once loaded).

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

from ..cards import BID_OFFSET, BLIND_NIL_ACTION, LOOK_ACTION, PARTNER, TEAM, action_parts
from ..engine import Phase, score_hand  # (the rules' scoring, as the engine scores a hand)

__all__ = ["Analyst", "action_label", "default_checkpoint", "outcome_odds", "suggestion",
           "blind_nil_note", "pct"]


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


# ------------------------------------------------------------------ the hint in one line
def pct(p: float) -> str:
    """A chance as the line writes it: ``78%`` (halves up, as the page's ``toFixed``), ``<1%``
    above 0, ``>99%`` below 1."""
    if 0 < p < 0.005:
        return "<1%"
    if 0.995 <= p < 1:
        return ">99%"
    return f"{math.floor(100 * p + 0.5)}%"


def _pts(v: float) -> str:
    return f"{'+' if v > 0 else ''}{v:.1f}"


def outcome_odds(view, outcomes) -> dict:
    """The chances of a move over its deals' outcomes.

    Args:
        view: the seat's ``PlayerView``.
        outcomes: ``(weight, seat_bids, shares)`` triples, one per deal, ``shares`` the
            ``[(share, won)]`` final trick counts by seat (``PIMCBot.bid_outcomes``' form).
    Returns:
        ``{"make", "nil", "contract", "nils", "deals"}``: the weighted share of outcomes in
        which the seat's team makes its contract (None when it has none: two Nils), in which
        every Nil of the team still standing (``nils``: the seat's, or its partner's when bid,
        not yet failed) takes no trick (None without one), the team's contract when every deal
        has the same one (else None: a partner's bid still to come, estimated per deal), and
        the number of deals.
    """
    team = TEAM[view.seat]
    seats = (team, team + 2)
    scored: dict = {}
    made = total = held = nil_total = 0.0
    contracts = set()
    nils: list = []
    for w, bids, shares in outcomes:
        nils = [s for s in seats if bids[s] == 0 and (s == view.seat or view.bids[s] == 0)
                and not view.tricks_won[s]]  # the same on every deal: known or this bid
        for f, won in shares:
            key = (bids, won)
            ts = scored.get(key)
            if ts is None:
                ts = scored[key] = score_hand(list(bids), list(won), list(view.bags), view.rules,
                                              list(view.blind), list(view.scores))[team]
            if ts.made is not None:
                total += w * f
                made += w * f * ts.made
                contracts.add(ts.contract)
            if nils:
                nil_total += w * f
                held += w * f * all(won[s] == 0 for s in nils)
    return {"make": round(made / total, 4) if total else None,
            "nil": round(held / nil_total, 4) if nil_total else None,
            "contract": contracts.pop() if len(contracts) == 1 else None,
            "nils": nils, "deals": len(outcomes)}


def _nil_whose(view, nils) -> str:
    """``your Nil holds``, ``your partner's Nil holds`` or ``your team's Nils hold`` (two)."""
    if len(nils) == 2:
        return "your team's Nils hold"
    return "your Nil holds" if nils[0] == view.seat else "your partner's Nil holds"


def _odds_text(view, row: dict | None) -> str:
    """``78% to make your team's contract of 7 and 64% that your Nil holds (100 deals played
    out)``, or '' without chances."""
    if row is None:
        return ""
    parts = []
    if row.get("make") is not None:
        of = f" of {row['contract']}" if row.get("contract") else ""
        parts.append(f"{pct(row['make'])} to make your team's contract{of}")
    if row.get("nil") is not None:
        parts.append(f"{pct(row['nil'])} that {_nil_whose(view, row['nils'])}")
    if not parts:
        return ""
    guess = ", your partner's bid estimated" if view.bids[PARTNER[view.seat]] is None else ""
    return " and ".join(parts) + f"{guess} ({row['deals']} deals played out)"


def _move(view, a: int, label: str) -> str:
    if a < BID_OFFSET:
        return f"{'Pass' if view.phase == Phase.EXCHANGE else 'Play'} {label}"
    if a == LOOK_ACTION:
        return "Look at your cards"
    return f"Bid {label[4:] if label.startswith('bid ') else label}"


def blind_nil_note(view, deficit: int) -> str:
    """What the table says of a Blind Nil decision: why the rules offer it now, that the agent's
    probability is its network's output, and the search bot's rule (``deficit``)."""
    r = view.rules
    team = TEAM[view.seat]
    behind = view.scores[1 - team] - view.scores[team]
    why = ("these rules offer it at any score" if not r.blind_nil_deficit else
           f"these rules offer it to a team trailing by {r.blind_nil_deficit} or more, and yours "
           f"trails by {behind}")
    return (f"Blind Nil is allowed now: {why}. The agent's Blind Nil probability is its "
            f"network's output for bidding Nil before looking, not a chance of making it; the "
            f"search bot does not value this choice: it bids Blind Nil only when its team "
            f"trails by {deficit} or more.")


TIE_POINTS = 1.0  # in play, cards this close to the best card are "about equal"
TIE_NAMED = 3  # the most cards the line names as about equal (the best included)


def _close_cards(view, rows: list[dict], row: dict, groups: dict | None) -> list[dict]:
    """In play, the other cards the search valued within ``TIE_POINTS`` of the best ``row``,
    best first: one row per other candidate (``groups``: each card's candidate, the card whose
    value it shares; a card equivalent to one already named is never named again)."""
    if view.phase != Phase.PLAY or row["value"] is None:
        return []
    group = (groups or {}).get
    best: dict = {}
    for r in rows:  # each candidate's first row (in action order, as ``best_value`` picks)
        g = group(r["action"], r["action"])
        if r["value"] is not None and g != group(row["action"], row["action"]) \
                and g not in best:
            best[g] = r
    close = [r for r in best.values() if round(row["value"] - r["value"], 2) <= TIE_POINTS]
    return sorted(close, key=lambda r: -r["value"])


def _names(labels: list[str]) -> str:
    return labels[0] if len(labels) == 1 else f"{', '.join(labels[:-1])} or {labels[-1]}"


def _tie_line(view, row: dict, close: list[dict], agent: dict | None, odds: dict) -> str:
    """``Play J♦ or 10♣: about equal for the search (+12.9, +12.6 for your team against
    theirs); with J♦, 81% to make ... The agent prefers 2♦ (38%).``"""
    named = [row, *close[:TIE_NAMED - 1]]
    more = len(close) - len(named) + 1
    vals = ", ".join(_pts(r["value"]) for r in named)
    why = f"about equal for the search ({vals} for your team against theirs" + (
        f"; {more} other card{'s' if more > 1 else ''} as close)" if more > 0 else ")")
    if any(agent is r for r in named):
        why += f", the agent prefers {agent['label']} ({pct(agent['prob'])})"
    chances = _odds_text(view, odds.get(row["action"]))
    text = f"{_move(view, row['action'], _names([r['label'] for r in named]))}: {why}"
    if chances:
        text += f"; with {row['label']}, {chances}"
    if agent is not None and not any(agent is r for r in named):
        text += f". The agent prefers {agent['label']} ({pct(agent['prob'])})"
    return text + "."


def suggestion(view, rows: list[dict], best_prob, best_value, odds: dict, pick=None,
               deficit: int | None = None, groups: dict | None = None) -> dict | None:
    """The hint's move and its line.

    The search's best (the most points expected: ``best_value``) where it valued the moves (play,
    and bidding with the cards seen), else the search's own ``pick`` (``(action, "rule")``: its
    Blind Nil rule, ``blind_nil_deficit`` ``deficit``; ``(action, "equivalent")``: legal cards
    that are all alike), else the agent's choice (``best_prob``: the exchange); the only legal
    move as such. ``odds``: ``outcome_odds`` by action. In play, when other cards (not the
    best's equivalent cards: ``groups``, each card's candidate) are within ``TIE_POINTS`` of
    the best, the line names them with it as about equal (``tie``: the others named, at most
    ``TIE_NAMED - 1``; the line counts any more).

    Returns:
        ``{"action", "by": "search" / "rule" / "equivalent" / "agent" / "only", "text", "value",
        "make", "nil", "contract", "deals", "tie"}`` (the chances and the contract as
        ``outcome_odds``, None where not counted; ``tie`` the other cards named as about equal),
        or None when nothing picks a move.
    """
    by_action = {r["action"]: r for r in rows}
    agent = by_action.get(best_prob)
    if len(rows) == 1:
        r = rows[0]
        kind = "card" if r["action"] < BID_OFFSET else "move"
        return _out(r, "only", f"{_move(view, r['action'], r['label'])}: your only legal "
                               f"{kind}.", odds)
    if best_value is not None:
        row, by = by_action[best_value], "search"
        close = _close_cards(view, rows, row, groups)
        if close:
            return _out(row, by, _tie_line(view, row, close, agent, odds), odds,
                        [r["action"] for r in close[:TIE_NAMED - 1]])
        why = f"the most points expected by the search ({_pts(row['value'])} for your team " \
              f"against theirs)"
    elif pick is not None:
        row, by = by_action[pick[0]], pick[1]
        why = ("your cards here are all alike: any of them does the same" if by == "equivalent"
               else f"the search bot bids Blind Nil only when its team trails by {deficit} or "
                    f"more" if pick[0] == LOOK_ACTION
               else f"the search bot bids it when its team trails by {deficit} or more")
    elif agent is not None:
        row, by, why = agent, "agent", f"the agent's choice ({pct(agent['prob'])})"
    else:
        return None
    if by != "agent" and agent is row:
        why += f", also the agent's choice ({pct(agent['prob'])})"
    chances = _odds_text(view, odds.get(row["action"]))
    text = f"{_move(view, row['action'], row['label'])}: {why}" + (f"; {chances}" if chances
                                                                    else "")
    if by not in ("agent", "equivalent") and agent is not None and agent is not row:
        lean = "leans to" if row["action"] in (LOOK_ACTION, BLIND_NIL_ACTION) else "prefers"
        text += f". The agent {lean} {agent['label']} ({pct(agent['prob'])})"
    return _out(row, by, text + ".", odds)


def _out(row: dict, by: str, text: str, odds: dict, tie: list | None = None) -> dict:
    o = odds.get(row["action"]) or {}
    return {"action": row["action"], "by": by, "text": text, "value": row["value"],
            **{k: o.get(k) for k in ("make", "nil", "contract", "deals")}, "tie": tie or []}


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
            values, odds, pick, groups = self._search(view, legal, probs, key)
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
                                         deficit, groups),
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
        """The search bot's side of the analysis: ``(values, odds, pick, groups)``, ``values``
        and ``odds`` (``outcome_odds``) by action, ``pick`` its own choice where it values
        nothing (``suggestion``: its Blind Nil rule, or legal cards all alike), else
        None; ``groups`` in play each card's candidate (equivalent cards share one), else None. Its random numbers are seeded from ``key`` before each search, so a search gives
        the numbers it would give alone."""
        if view.phase == Phase.PLAY and len(legal) > 1:
            return self._card_search(view, legal, key)
        if view.phase != Phase.BIDDING or len(legal) < 2:
            return {}, {}, None, None
        bot = self._bot()
        if not view.looked:  # Blind Nil or look: the bot's rule (no random number drawn)
            return {}, {}, (int(bot.act(view)), "rule"), None
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
        return values, odds, None, None

    def _card_search(self, view, legal, key):
        """``_search`` in play: ``card_outcomes``' values and chances by card, an equivalent card
        sharing its candidate's (it follows it in the deck's order), and each card's candidate."""
        bot = self._bot()
        bot.rng = np.random.default_rng([int(x) for x in key])
        cards, vals, outs = bot.card_outcomes(view)
        bids = tuple(view.bids)
        by_card = {c: (v, outcome_odds(view, [(w, bids, [(1.0, won)]) for w, won in o]))
                   for c, v, o in zip(cards, vals, outs)}
        values, odds, groups = {}, {}, {}
        cur = None
        for c in sorted(legal, key=view.rules.deck.strength.__getitem__):
            if c in by_card:
                cur = c
            groups[c] = cur
            v, o = by_card.get(cur, (None, None))
            values[c] = None if v is None or math.isnan(v) else round(float(v), 2)
            if values[c] is not None:
                odds[c] = o
        return values, odds, ((cards[0], "equivalent") if len(cards) == 1 else None), groups
