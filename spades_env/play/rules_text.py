"""What the page shows of a game's rules: the compact line and the full list (``rules_info``), the
fields the settings panel offers (``PANEL_FIELDS``), and a statistics record with its rules line
and rates (``stats_summary``).
"""

from __future__ import annotations

from ..rules import PRESETS, Rules

__all__ = ["PANEL_FIELDS", "rules_info", "stats_rates", "stats_summary"]

PANEL_FIELDS = ("target_score", "loss_threshold", "suicide", "mirror", "whiz", "min_team_bid",
                "bid_total_not_13", "blind_nil", "blind_nil_deficit", "nil_pass",
                "spades_lead_any_time", "bags_score_points", "two_of_clubs_leads",
                "big_bid_double", "moon_wins", "jokers")
"""The ``Rules`` fields the settings panel lets a player change (the others keep the preset's
values; the API takes any field)."""


def _rules_head(rules: Rules) -> str:
    """The name a rules line starts with: the preset the rules are, else the bidding variant
    (suicide, mirror, whiz), else the jokers' game (Joker Joker Deuce Deuce), else ``Custom``."""
    for name, r in PRESETS.items():
        if r == rules:
            return " ".join(w.capitalize() for w in name.split("_"))
    for name in ("suicide", "mirror", "whiz"):
        if getattr(rules, name):
            return name.capitalize()
    if rules.jokers:
        return _JJDD
    return "Custom"


_JJDD = "Joker Joker Deuce Deuce"


def rules_info(rules: Rules) -> dict:
    """What the page shows of a game's rules: ``spec`` (``Rules.spec()``), ``line`` (a compact
    line, e.g. ``"Suicide · board 4 · 500/-200"``), ``items`` (the full list, one sentence per
    rule), ``house`` (the items that differ from the standard rules': the house rules and
    variants of the game, in the list's order; empty for the standard rules) and ``fields``
    (``Rules.to_dict()``)."""
    items = _items(rules)
    standard = set(_items(PRESETS["standard"]))
    return {"spec": rules.spec(), "line": _line(rules), "items": items,
            "house": [x for x in items if x not in standard], "fields": rules.to_dict()}


def _line(r: Rules) -> str:
    """The compact rules line (``rules_info``)."""
    tags = []
    if r.min_team_bid:
        tags.append(f"board {r.min_team_bid}")
    if r.bid_total_not_13:
        tags.append("bids \u2260 13")
    if r.blind_nil:
        tags.append("Blind Nil" + (f" \u2265{r.blind_nil_deficit} behind"
                                   if r.blind_nil_deficit else ""))
    if r.nil_pass:
        tags.append(f"Nil pass {r.nil_pass}")
    if r.spades_lead_any_time:
        tags.append("spades any time")
    if not r.bags_score_points:
        tags.append("bags 0 pts")
    if r.two_of_clubs_leads:
        tags.append("2\u2663 leads")
    if r.big_bid_double:
        tags.append(f"{r.big_bid_double} for {20 * r.big_bid_double}")
    if r.moon_wins:
        tags.append("moon wins")
    head = _rules_head(r)
    if r.jokers and head != _JJDD:
        tags.append("jokers")
    length = str(r.target_score) + ("" if r.loss_threshold is None else f"/{r.loss_threshold}")
    return " \u00b7 ".join([head, *tags, length])


def _items(r: Rules) -> list[str]:
    """The full list of a game's rules, one sentence each (``rules_info``)."""
    bidding = ("suicide: in each partnership exactly one partner bids Nil" if r.suicide else
               "mirror: each player bids the number of spades it holds (Nil with none)"
               if r.mirror else
               "whiz: each player bids the number of spades it holds, or Nil" if r.whiz else
               "any bid from Nil to 13")
    items = [f"Game to {r.target_score} points",
             "No loss threshold" if r.loss_threshold is None else
             f"A team at {r.loss_threshold} points or below loses",
             f"Bidding: {bidding}"]
    if r.min_team_bid:
        items.append(f"Each partnership bids at least {r.min_team_bid} together (Nil counts 0)")
    if r.bid_total_not_13:
        items.append("The last bidder may not make the four bids total exactly 13")
    if r.blind_nil:
        items.append(f"Blind Nil allowed ({r.blind_nil_bonus} points, 3-card exchange)"
                     + (f", only for a team trailing by {r.blind_nil_deficit} or more"
                        if r.blind_nil_deficit else ""))
    else:
        items.append("No Blind Nil")
    items.append(f"Nil passing: a Nil bidder exchanges {r.nil_pass} card"
                 f"{'s' if r.nil_pass > 1 else ''} with its partner" if r.nil_pass
                 else "No Nil passing")
    items.append("Spades may be led at any time" if r.spades_lead_any_time
                 else "Spades may be led once broken")
    items.append("Overtricks (bags) score 1 point each" if r.bags_score_points
                 else "Bags score no points (a made contract scores 10 per trick bid)")
    if r.two_of_clubs_leads:
        items.append("The holder of the 2 of clubs leads it to the first trick")
    if r.big_bid_double:
        items.append(f"A made team bid of {r.big_bid_double} or more scores 20 per trick")
    if r.moon_wins:
        items.append("A team that bids 13 and takes every trick wins the game")
    if r.jokers:
        items.append("Joker Joker Deuce Deuce: a big and a little joker replace the 2\u2665 and "
                     "the 2\u2663; the trumps from the top are the big joker, the little joker, "
                     "the 2\u2666, the 2\u2660, then A\u2660 to 3\u2660 (the jokers and the "
                     "2\u2666 are spades)")
    items.append(f"Nil: {r.nil_bonus} points; every {r.bag_limit} bags cost {r.bag_penalty} "
                 f"points")
    if r.failed_nil_tricks_count:
        items.append("A failed Nil's tricks count toward the partner's contract")
    if r.forced_spade_lead_breaks:
        items.append("A forced spade lead breaks spades")
    return items


def stats_summary(rec: dict) -> dict:
    """One statistics record (``Store.stats`` item) with ``rules_line`` (its rules as the page's
    compact line) and the derived rates: ``win_rate`` (won /
    played), ``avg_points_per_hand`` (the player's team's hand points / hands), ``contract_rate``
    (made / with a contract); rates are None without games, hands or contracts."""
    out = stats_rates(rec)
    try:
        out["rules_line"] = _line(Rules.parse(rec["rules"]))
    except (ValueError, KeyError):
        out["rules_line"] = str(rec.get("rules"))
    out["win_rate"] = rec["wins"] / rec["games"] if rec["games"] else None
    return out


def stats_rates(rec: dict) -> dict:
    """``rec`` (``StatsDelta`` fields: a statistics record, or one game's) with what follows from
    its counts: ``sets`` (contracts missed: with a contract, not made), ``nil_failed`` (the
    player's Nil bids that took a trick), ``avg_points_per_hand``, ``contract_rate`` (made / with
    a contract) and ``bags_per_hand`` (bags / the hands they were counted over, ``bag_hands``);
    a rate is None without hands or contracts."""
    out = dict(rec)
    out["sets"] = rec["contracts"] - rec["contracts_made"]
    out["nil_failed"] = rec["nil_bids"] - rec["nil_made"]
    out["avg_points_per_hand"] = rec["points"] / rec["hands"] if rec["hands"] else None
    out["contract_rate"] = rec["contracts_made"] / rec["contracts"] if rec["contracts"] else None
    bag_hands = rec.get("bag_hands", 0)
    out["bags_per_hand"] = rec.get("bags", 0) / bag_hands if bag_hands else None
    return out
