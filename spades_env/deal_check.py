"""The checks of a chosen deal: ``SpadesGame.from_deal``'s arguments (four hands as card ids, card
strings or masks; the dealer; the rules; the team totals and bags before the hand) made into the
plain values the engine keeps, or a ``ValueError`` that says what is wrong.
"""

from __future__ import annotations

import numpy as np

from .cards import FULL_DECK, card_str, parse_card, parse_cards
from .rules import Rules, game_outcome
from .saved_game import TOTAL_LIMIT


def check_deal(hands, dealer, scores, bags, rules):
    """``from_deal``'s arguments checked, as ``(masks, dealer, scores, bags, rules)``: 4 hand
    masks, the dealer as an int, the two totals and the two bag counts as new lists of ints, and
    the rules (``Rules()`` for ``None``).

    Raises:
        ValueError: not 4 hands of 13 distinct cards covering the deck, a bad dealer, rules that
            are not a ``Rules``, totals or bags out of range, or starting totals that already end
            the game (``game_outcome``).
    """
    jokers = isinstance(rules, Rules) and rules.jokers  # card names of the jokers deck
    masks = _hand_masks(hands, jokers)
    if isinstance(dealer, (bool, np.bool_)) or not isinstance(dealer, (int, np.integer)) \
            or dealer not in (0, 1, 2, 3):
        raise ValueError(f"dealer must be a seat 0..3 (int), got {dealer!r}")
    dealer = int(dealer)
    rules = rules if rules is not None else Rules()
    if not isinstance(rules, Rules):
        raise ValueError(f"rules must be a spades_env.Rules, got {type(rules).__name__}")
    scores = _int_pair(scores, "scores")
    bags = _int_pair(bags, "bags")
    _check_totals(scores, bags, rules)
    return masks, dealer, scores, bags, rules


def _hand_masks(hands, jokers: bool) -> list[int]:
    """The 4 hands as masks: 13 cards each, together the whole deck."""
    if isinstance(hands, (str, bytes, dict)):
        raise ValueError(f"hands must be a list of 4 hands, got {type(hands).__name__}")
    try:
        hands = list(hands)
    except TypeError:
        raise ValueError(
            f"hands must be a list of 4 hands, got {type(hands).__name__}") from None
    if len(hands) != 4:
        raise ValueError(f"need 4 hands, got {len(hands)}")
    masks = [_hand_mask(seat, h, jokers) for seat, h in enumerate(hands)]
    if any(m.bit_count() != 13 for m in masks):
        raise ValueError(f"each hand needs 13 cards, got {[m.bit_count() for m in masks]}")
    if masks[0] | masks[1] | masks[2] | masks[3] != FULL_DECK:
        raise ValueError("the 4 hands must hold each of the 52 cards exactly once")
    return masks


def _hand_mask(seat: int, h, jokers: bool) -> int:
    """One seat's hand (a 52-bit mask, a string of card names, or card ids and names) as a
    mask; a card named twice is refused."""
    if isinstance(h, (int, np.integer)) and not isinstance(h, bool):
        m = int(h)
        if not 0 <= m <= FULL_DECK:
            raise ValueError(f"hand mask of seat {seat} is not a 52-bit mask: {m}")
        return m
    if isinstance(h, str):
        h = parse_cards(h, jokers)
    m = 0
    try:
        items = list(h) if not isinstance(h, (bytes, dict, bool, np.bool_)) else None
    except TypeError:
        items = None
    if items is None:
        raise ValueError(f"hand of seat {seat} must be card ids, card strings or a "
                         f"mask, got {h!r}")
    for c in items:
        if isinstance(c, str):
            cid = parse_card(c, jokers)
        elif isinstance(c, (int, np.integer)) and not isinstance(c, bool):
            cid = int(c)
        else:
            raise ValueError(f"not a card: {c!r} in the hand of seat {seat}")
        if not 0 <= cid < 52:
            raise ValueError(f"card id {cid} out of range 0..51")
        if (m >> cid) & 1:
            raise ValueError(f"card {card_str(cid, jokers=jokers)} appears twice "
                             f"in one hand")
        m |= 1 << cid
    return m


def _check_totals(scores: list[int], bags: list[int], rules: Rules) -> None:
    """Totals within ``TOTAL_LIMIT``, bags below the bag limit, and a game not already over."""
    for t in (0, 1):
        if abs(scores[t]) > TOTAL_LIMIT:
            raise ValueError(f"score of team {t} must be within +-{TOTAL_LIMIT}, got "
                             f"{scores[t]}")
        if not 0 <= bags[t] < rules.bag_limit:
            raise ValueError(f"bags of team {t} must be in 0..{rules.bag_limit - 1} between "
                             f"hands, got {bags[t]}")
    if game_outcome(scores, rules) is not None:
        raise ValueError(f"starting totals {scores} already end the game under these rules "
                         f"(target {rules.target_score}, loss threshold "
                         f"{rules.loss_threshold}): nothing left to play")


def _int_pair(x, name: str) -> list[int]:
    """Two ints (by team) from ``x``; ``ValueError`` naming ``name`` otherwise."""
    try:
        vals = list(x)
    except TypeError:
        raise ValueError(f"{name} must be 2 ints (one per team), got {x!r}") from None
    if len(vals) != 2 or any(isinstance(v, bool) or not isinstance(v, (int, np.integer))
                             for v in vals):
        raise ValueError(f"{name} must be 2 ints (one per team), got {x!r}")
    return [int(vals[0]), int(vals[1])]
