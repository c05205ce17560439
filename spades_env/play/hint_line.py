"""The hint in one line (docs/play.md, What the agent thinks): the move to make and why, from the
analysis' rows, and the chances it quotes: how often, over the search's sampled deals, the
seat's team makes its contract and its Nil holds.

``outcome_odds`` counts the deals' outcomes (``PIMCBot.card_outcomes`` / ``bid_outcomes``) by the
rules' own scoring (``scoring.score_hand``: a contract is made or set as a hand would score it,
failed Nil tricks counted when ``failed_nil_tricks_count`` says so). ``suggestion`` picks the
move and writes its line. Both read the seat's view only.
"""

from __future__ import annotations

from ..cards import BID_OFFSET, BLIND_NIL_ACTION, LOOK_ACTION, PARTNER, TEAM
from ..engine import Phase
from ..scoring import score_hand

__all__ = ["outcome_odds", "suggestion", "blind_nil_note", "pct"]


def pct(p: float) -> str:
    """A chance as the line writes it: ``78%``, ``<1%`` above 0, ``>99%`` below 1."""
    if 0 < p < 0.005:
        return "<1%"
    if 0.995 <= p < 1:
        return ">99%"
    return f"{100 * p:.0f}%"


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


def suggestion(view, rows: list[dict], best_prob, best_value, odds: dict, pick=None,
               deficit: int | None = None) -> dict | None:
    """The hint's move and its line.

    The search's best (the most points expected: ``best_value``) where it valued the moves (play,
    and bidding with the cards seen), else the search's own ``pick`` (``(action, "rule")``: its
    Blind Nil rule, ``blind_nil_deficit`` ``deficit``; ``(action, "equivalent")``: legal cards
    that are all alike), else the agent's choice (``best_prob``: the exchange); the only legal
    move as such. ``odds``: ``outcome_odds`` by action.

    Returns:
        ``{"action", "by": "search" / "rule" / "equivalent" / "agent" / "only", "text", "value",
        "make", "nil", "contract", "deals"}`` (the chances and the contract as
        ``outcome_odds``, None where not counted), or None when nothing picks a move.
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


def _out(row: dict, by: str, text: str, odds: dict) -> dict:
    o = odds.get(row["action"]) or {}
    return {"action": row["action"], "by": by, "text": text, "value": row["value"],
            **{k: o.get(k) for k in ("make", "nil", "contract", "deals")}}
