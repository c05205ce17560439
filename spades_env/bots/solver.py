"""Fast perfect-information play-outs on bit masks, an exact endgame solver, a hand-strength
estimator and the hand utility used by the PIMC bots (``pimc.py``).

Everything works on a *sampled* deal (all four hands known), so these functions may look at every
hand: they are only ever fed determinizations, never the real hidden cards.

Representation: hands are 52-bit ints (bit = card id ``suit * 13 + rank``); a trick in progress is a
list of card ids in play order plus the seat that led it; ``won`` is 4 trick counts by seat.

Every function takes the rules' ``Deck`` (``Rules.deck``, default the standard deck): which suit a
card follows and how the cards of a suit rank come from its tables, so under ``Rules.jokers`` the
jokers and the 2 of diamonds are the top spades here as in the engine, in Python and in C.
"""

from __future__ import annotations

from array import array
from itertools import chain
from operator import index

import numpy as np

from ..cards import NEXT_SEAT, OPPONENTS, PARTNER, TEAM
from ..native import NativeUnavailable, c_deck, load_kernel
from ..rules import (
    STANDARD_DECK, Deck, HandScorer, Rules, legal_cards_mask, pooled_tricks, spades_broken_after,
    trick_winner_unchecked,
)

__all__ = ["playout", "playouts", "finish_trick", "solve", "solve_many", "estimate_tricks",
           "HandUtility", "nil_risk"]

# ABOVE[c]: cards of higher id than c (restricted to c's suit by the caller): the standard deck's
# order (Deck.above and Deck.below are the same restricted to the suit, for any deck).
ABOVE = tuple(~((1 << (c + 1)) - 1) & ((1 << 52) - 1) for c in range(52))
BELOW = tuple((1 << c) - 1 for c in range(52))
INF = float("inf")
# The play-out policy fights for tricks to set the opponents when they still need ``oneed`` tricks
# and at most ``SET_MARGIN`` of the remaining tricks are to spare for them.
SET_MARGIN = 2


def low_rank(m: int, deck: Deck = STANDARD_DECK) -> int:
    """Card of lowest rank in ``m`` (non-spades before spades at equal rank); ``m`` non-zero
    (``Deck.low_rank``; the standard deck's by its 13-bit suits)."""
    if deck.promoted:
        return deck.low_rank(m)
    best = -1
    br = 99
    for s in (0, 1, 2, 3):
        ch = (m >> (13 * s)) & 0x1FFF
        if ch:
            r = (ch & -ch).bit_length() - 1
            if r < br:
                br = r
                best = 13 * s + r
    return best


def high_rank(m: int, deck: Deck = STANDARD_DECK) -> int:
    """Card of highest rank in ``m`` (spades first at equal rank); ``m`` non-zero
    (``Deck.high_rank``; the standard deck's by its 13-bit suits)."""
    if deck.promoted:
        return deck.high_rank(m)
    best = -1
    br = -1
    for s in (3, 2, 1, 0):
        ch = (m >> (13 * s)) & 0x1FFF
        if ch:
            r = ch.bit_length() - 1
            if r > br:
                br = r
                best = 13 * s + r
    return best


def _can_beat(hand: int, win: int, led: int, deck: Deck = STANDARD_DECK,
              _legal=legal_cards_mask) -> bool:
    """Whether a player holding ``hand`` can beat ``win`` in a trick led in suit ``led``."""
    return bool(_legal(hand, led, True, deck) & deck.beaters[win])


def playout(hands, trick, leader: int, won, broken: bool, bids, flb: bool = False,
            log: list | None = None, fnc: bool = False, deck: Deck = STANDARD_DECK,
            _legal=legal_cards_mask) -> list:
    """Play the hand to the end with a fast rule-based policy for all four seats.

    The policy sees all four hands (it runs on a determinization). Habits: a Nil bidder plays the
    highest card that loses; its partner covers (wins high); the Nil's opponents play low under it
    and lead suits it holds; a side that still needs tricks for its contract (or can set the
    opponents: they need all but at most ``SET_MARGIN`` of the remaining tricks) wins tricks
    cheaply with the lowest safe winner; a side whose contract is safe ducks (plays its highest
    losing card) to avoid bags. About 1 microsecond per card on CPython 3.11.

    Args:
        hands: 4 masks by seat (cards still held; not modified).
        trick: card ids of the trick in progress, in play order (not modified).
        leader: seat that led ``trick`` (or leads next when ``trick`` is empty).
        won: 4 trick counts by seat so far.
        broken: whether spades are broken.
        bids: 4 ints by seat (0 = Nil).
        flb: ``Rules.forced_spade_lead_breaks``.
        log: optional list; the cards played are appended to it in order (for tests).
        fnc: ``Rules.failed_nil_tricks_count`` (a failed Nil's tricks count toward its
            partner's contract, so the policy's trick needs include them).
        deck: the rules' ``Deck`` (``Rules.deck``).
    Returns:
        list of 4 final trick counts by seat.
    """
    h = list(hands)
    won = list(won)
    trick = list(trick)
    nil = [b == 0 for b in bids]
    contract = (bids[0] * (bids[0] > 0) + bids[2] * (bids[2] > 0),
                bids[1] * (bids[1] > 0) + bids[3] * (bids[3] > 0))
    n = len(trick)
    p = (leader + n) & 3
    beats, suit_of, spades = deck.beats, deck.suit_of, deck.spades
    if n:
        led = suit_of[trick[0]]
        win = trick[0]
        wseat = leader
        for i in range(1, n):
            if beats[trick[i]][win]:
                win = trick[i]
                wseat = (leader + i) & 3
    else:
        led = -1
        win = -1
        wseat = -1
    left = h[0].bit_count() + h[1].bit_count() + h[2].bit_count() + h[3].bit_count()
    while left:
        hand = h[p]
        legal = _legal(hand, led, broken, deck)
        if not (legal & (legal - 1)):
            card = legal.bit_length() - 1
        else:
            card = _choose(p, h, legal, n, led, win, wseat, won, nil, contract, broken, fnc,
                           deck)
        # ---- apply
        if log is not None:
            log.append(card)
        h[p] = hand & ~(1 << card)
        left -= 1
        if not broken and (spades >> card) & 1:  # otherwise nothing can change
            broken = spades_broken_after(card, led, broken, flb, deck)
        if n == 0:
            led = suit_of[card]
            win = card
            wseat = p
        elif beats[card][win]:
            win = card
            wseat = p
        n += 1
        if n == 4:
            won[wseat] += 1
            p = wseat
            n = 0
            led = -1
        else:
            p = NEXT_SEAT[p]
    return won


def finish_trick(hands, trick, leader: int, won, broken: bool, card: int, p: int, flb: bool,
                 deck: Deck = STANDARD_DECK):
    """Apply ``card`` by seat ``p`` to a position (arguments as ``playout``).

    Returns:
        the new ``(hands, trick, leader, won, broken)``; a completed trick is scored (its winner
        leads next, ``trick`` empty). The inputs are not modified.
    """
    hands = list(hands)
    hands[p] &= ~(1 << card)
    broken = spades_broken_after(card, deck.suit_of[trick[0]] if trick else -1, broken, flb, deck)
    trick = list(trick) + [card]
    if len(trick) == 4:
        ws = trick_winner_unchecked(trick, leader, deck)
        won = list(won)
        won[ws] += 1
        return hands, [], ws, won, broken
    return hands, trick, leader, won, broken


_kernel = None  # the native library once loaded; False when it cannot be (Python play-outs)


def native_playouts() -> bool:
    """Whether ``playouts`` runs in C (``spades_env/_native/playout.c``, built with the batched
    engine's kernel with the package, loaded by ``spades_env.native``); False when the kernel is
    not built (or refused), and then the Python ``playout`` gives the same trick counts, about 35 times slower
    (``benchmarks/bench_playout.py``)."""
    global _kernel
    if _kernel is None:
        try:
            _kernel = load_kernel()
        except NativeUnavailable:
            _kernel = False
    return _kernel is not False


def playouts_array(hands: np.ndarray, bids, cards: np.ndarray, trick, leader: int, won,
                   broken: bool, mover: int, flb: bool = False, fnc: bool = False,
                   deck: Deck = STANDARD_DECK) -> np.ndarray:
    """``playouts`` in C on arrays, for many rows of one position with one set of bids (the PIMC
    label search's card decisions: no Python list per row).

    Args:
        hands: uint64 ``[R, 4]`` hand masks by seat (the mover's card still in its hand).
        bids: 4 ints by seat (0 = Nil), shared by the rows.
        cards: int8 ``[R]``: the mover's card of each row (-1: the position as it is).
        trick, leader, won, broken, mover, flb, fnc, deck: as ``playouts``.
    Returns:
        int8 ``[R, 4]``: the final trick counts by seat, those of ``playouts``.
    Raises:
        RuntimeError: the kernel is not built (``native_playouts()`` is False).
        ValueError: a bad position, or a row's card that is not in the mover's hand.
    """
    if not native_playouts():
        raise RuntimeError("playouts_array needs the C kernel (pip install -e .)")
    why = _position_problem(trick, leader, won, mover)
    if why is not None:
        raise ValueError(f"playouts: {why}")
    hands = np.ascontiguousarray(hands, np.uint64)
    cards = np.ascontiguousarray(cards, np.int8)
    rows = len(cards)
    if hands.shape != (rows, 4):
        raise ValueError(f"playouts: hands must be [{rows}, 4], got {list(hands.shape)}")
    b = np.tile(np.asarray(bids, np.int8), rows)
    t = np.array(list(trick) or [0], np.int8)
    w = np.asarray(won, np.int8)
    out = np.empty((rows, 4), np.int8)
    bad = _kernel.sp_playouts(c_deck(deck), rows, hands.ctypes.data, b.ctypes.data,
                              cards.ctypes.data, t.ctypes.data, len(trick), leader, w.ctypes.data,
                              int(bool(broken)), mover, int(bool(flb)), int(bool(fnc)),
                              out.ctypes.data)
    if bad:
        _not_in_hand(hands.tolist(), cards.tolist(), mover, bad - 1)
    return out


def _position_problem(trick, leader: int, won, mover: int) -> str | None:
    """What is wrong with a position's seats, trick counts and trick in progress (the checks
    ``playouts`` and ``solve_many`` share), or None."""
    if not (0 <= mover < 4 and 0 <= leader < 4 and len(won) == 4):
        return f"mover and leader must be seats 0..3 and won 4 counts; got {mover}, {leader}, {won}"
    if len(trick) > 3 or (len(trick) and (leader + len(trick)) & 3 != mover):
        return (f"the trick in progress holds at most 3 cards, led by leader and followed in "
                f"turn up to the mover; got {list(trick)} led by {leader}, mover {mover}")
    return None


def playouts(deals, bids, cards, trick, leader: int, won, broken: bool, mover: int,
             flb: bool = False, native: bool = True, fnc: bool = False,
             deck: Deck = STANDARD_DECK) -> list:
    """Many ``playout`` calls from one position: row ``r`` plays ``cards[r]`` for ``mover``
    (``finish_trick``), then plays the hand out on ``deals[r]`` with ``bids[r]``.

    Args:
        deals: R deals, each 4 masks by seat (the mover's card still in its hand).
        bids: R tuples of 4 ints by seat (0 = Nil), or one tuple for every row.
        cards: R card ids, or -1 for a row that starts at the position as it is.
        trick, leader, won, broken, flb: the position, as for ``playout`` (shared by the rows).
        mover: the seat to play.
        native: use the C play-out when it is available (``native_playouts``); False forces the
            Python one (the reference; the same trick counts).
        fnc: ``Rules.failed_nil_tricks_count``, as for ``playout``.
        deck: the rules' ``Deck`` (``Rules.deck``): the C play-outs read the same tables
            (``native.c_deck``), so under jokers they run in C too.
    Returns:
        R tuples of 4 final trick counts by seat.
    Raises:
        ValueError: lengths that do not match (deals, bids, cards, 4 masks or bids a row), a seat
            outside 0..3, a trick of 4 cards or more, or a row's card that is not in the mover's
            hand; nothing is played then. The deals themselves are not checked (the bots draw
            them from the information set): overlapping hands give meaningless counts.
    """
    rows = len(deals)
    one = len(bids) == 4 and not isinstance(bids[0], (tuple, list))
    why = None
    if len(cards) != rows or (not one and len(bids) != rows):
        why = (f"{rows} deals need {rows} cards and 4 bids or {rows} rows of bids; got "
               f"{len(cards)} cards and {len(bids)} bids")
    elif any(n != 4 for n in set(map(len, deals))) \
            or (not one and any(n != 4 for n in set(map(len, bids)))):
        why = "every deal must be 4 masks and every row of bids 4 bids, by seat"
    else:
        why = _position_problem(trick, leader, won, mover)
    if why is not None:
        raise ValueError(f"playouts: {why}")
    if not rows:
        return []
    if native and native_playouts():
        try:
            hands = array("Q", chain.from_iterable(deals))
            b = array("b", tuple(bids) * rows if one else chain.from_iterable(bids))
            # out of range: clipped to -2 or 52 and refused by the C call (named below)
            c = array("b", cards if -2 <= min(cards) and max(cards) <= 52
                      else [max(-2, min(52, x)) for x in cards])
        except (OverflowError, TypeError) as e:
            raise ValueError(f"playouts: masks must be ints in [0, 2**52) and bids ints 0..13 "
                             f"({e})") from None
        t = array("b", trick or [0])
        w = array("b", won)
        out = array("b", bytes(4 * rows))
        bad = _kernel.sp_playouts(c_deck(deck), rows, hands.buffer_info()[0], b.buffer_info()[0],
                                  c.buffer_info()[0], t.buffer_info()[0], len(trick), leader,
                                  w.buffer_info()[0], int(bool(broken)), mover, int(bool(flb)),
                                  int(bool(fnc)), out.buffer_info()[0])
        if bad:
            _not_in_hand(deals, cards, mover, bad - 1)
        it = iter(out)
        return list(zip(it, it, it, it))
    for r in range(rows):
        c = cards[r]
        if c != -1 and not (0 <= c < 52 and deals[r][mover] >> c & 1):
            _not_in_hand(deals, cards, mover, r)
    res = []
    for r in range(rows):
        bd = bids if one else bids[r]
        if cards[r] >= 0:
            h2, t2, l2, w2, b2 = finish_trick(deals[r], trick, leader, won, broken, cards[r],
                                              mover, flb, deck)
        else:
            h2, t2, l2, w2, b2 = deals[r], trick, leader, won, broken
        res.append(tuple(playout(h2, t2, l2, w2, b2, bd, flb, fnc=fnc, deck=deck)))
    return res


def _not_in_hand(deals, cards, mover, r):
    raise ValueError(f"playouts: row {r}: card {cards[r]!r} is not in the hand of the mover "
                     f"(seat {mover}); a row's card must be one of its cards, or -1")


def _duck(legal: int, n: int, win: int, deck: Deck = STANDARD_DECK) -> int:
    """Card that avoids the trick: lowest on lead, else the highest card that loses to ``win``,
    else (forced to win) the highest card."""
    if n == 0:
        return low_rank(legal, deck)
    lose = legal & ~deck.beaters[win]
    return high_rank(lose if lose else legal, deck)


def _choose(p, h, legal, n, led, win, wseat, won, nil, contract, broken, fnc=False,
            deck: Deck = STANDARD_DECK) -> int:
    """The play-out policy's card for seat ``p`` (``legal`` has at least 2 cards). "Lowest" and
    "highest" are by the deck's order (``Deck.lowest``, ``Deck.highest``), ranks across suits by
    ``Deck.rank``."""
    partner = PARTNER[p]
    # ---------------------------------------------------------------- Nil bidder
    if nil[p] and not won[p]:
        return _duck(legal, n, win, deck)
    # ---------------------------------------------------------------- partner of a live Nil
    if nil[partner] and not won[partner]:
        if n == 0:
            return high_rank(legal, deck)
        # partner still to play this trick, or partner winning: take the trick high
        if wseat == partner or n <= 1:
            b = legal & deck.beaters[win]
            if b:
                if n < 3:
                    return high_rank(b, deck)
                return deck.lowest(b)
            return low_rank(legal, deck)
    # ---------------------------------------------------------------- opponent of a live Nil
    o1, o2 = OPPONENTS[p]
    tnil = -1
    if nil[o1] and not won[o1]:
        tnil = o1
    elif nil[o2] and not won[o2]:
        tnil = o2
    if tnil >= 0:
        if n == 0:
            SM = deck.suit_masks
            lowest, highest = deck.lowest, deck.highest
            nh = h[tnil]
            best = -1
            st, rank = deck.strength, deck.rank
            for s in (0, 1, 2, 3):
                mine = legal & SM[s]
                theirs = nh & SM[s]
                if mine and theirs:
                    lo = lowest(mine)
                    if st[lo] < st[highest(theirs)]:
                        if best < 0 or rank[lo] < rank[best]:
                            best = lo
            if best >= 0:
                return best
            return low_rank(legal, deck)
        to_play = (tnil - p) % 4 <= 3 - n  # the Nil bidder plays after us in this trick
        if wseat == tnil:
            lose = legal & ~deck.beaters[win]
            if lose:
                return high_rank(lose, deck)
            return low_rank(legal, deck)
        if to_play:
            return low_rank(legal, deck)
    # ---------------------------------------------------------------- contract play
    team = TEAM[p]
    # a Nil bidder's tricks count only with Rules.failed_nil_tricks_count (fnc)
    need = contract[team] - (won[team] * (fnc or not nil[team])) \
        - (won[team + 2] * (fnc or not nil[team + 2]))
    ot = team ^ 1
    oneed = contract[ot] - (won[ot] * (fnc or not nil[ot])) \
        - (won[ot + 2] * (fnc or not nil[ot + 2]))
    tleft = 13 - won[0] - won[1] - won[2] - won[3]
    want = need > 0 or (oneed > 0 and tleft - oneed <= SET_MARGIN)
    if want:
        if n == 0:
            return _lead_to_win(h, legal, partner, o1, o2, deck)
        return _follow_to_win(h, legal, n, led, win, wseat, partner, o1, o2, deck)
    # ---------------------------------------------------------------- duck (contract safe)
    return _duck(legal, n, win, deck)


def _lead_to_win(h, legal, partner, o1, o2, deck: Deck = STANDARD_DECK) -> int:
    """The play-out policy's lead for a side that wants tricks (``_choose``): a sure winner, else
    low towards the partner's winner, else low from the longest suit."""
    SM = deck.suit_masks
    S3 = SM[3]
    lowest, highest, above = deck.lowest, deck.highest, deck.above
    # lead a sure winner (top card of its suit that no opponent can ruff)
    oh1 = h[o1]
    oh2 = h[o2]
    others = h[partner] | oh1 | oh2
    for s in (2, 1, 0, 3):
        mine = legal & SM[s]
        if not mine:
            continue
        top = highest(mine)
        if others & above[top]:
            continue
        if s != 3 and ((not oh1 & SM[s] and oh1 & S3) or (not oh2 & SM[s] and oh2 & S3)):
            continue
        return top
    # lead low towards partner's winner
    ph = h[partner]
    for s in (2, 1, 0):
        mine = legal & SM[s]
        pm = ph & SM[s]
        if mine and pm and not ((oh1 | oh2) & above[highest(pm)]):
            return lowest(mine)
    # else low from the longest suit
    bs = -1
    bl = -1
    for s in (0, 1, 2, 3):
        ln = (legal & SM[s]).bit_count()
        if ln > bl or (ln == bl and s != 3):
            if ln:
                bl = ln
                bs = s
    return lowest(legal & SM[bs])


def _follow_to_win(h, legal, n, led, win, wseat, partner, o1, o2,
                   deck: Deck = STANDARD_DECK) -> int:
    """The play-out policy's card after the lead for a side that wants tricks (``_choose``): low
    under a partner's safe winner, else the cheapest sure winner, else second hand low and third
    hand high, else the lowest card."""
    SM = deck.suit_masks
    lowest, beaters = deck.lowest, deck.beaters
    if wseat == partner:
        # partner winning: is it safe against the opponent still to play?
        safe = True
        if n < 3 and _can_beat(h[o1], win, led, deck):
            safe = False
        if safe:
            lose = legal & ~beaters[win]
            return low_rank(lose if lose else legal, deck)
    b = legal & beaters[win]
    if b:
        if n == 3:
            bb = b & SM[led]
            if not bb:
                bb = b
            return lowest(bb)
        # lowest winner that the opponent(s) after us cannot beat (from the weakest up: the
        # plain cards by id, then the promoted trumps from the weakest)
        rest = b & deck.plain
        promoted = deck.promoted  # () in the standard deck
        i = 0
        while True:
            if rest:
                low = rest & -rest
                rest ^= low
                c = low.bit_length() - 1
            else:
                while i < len(promoted) and not (b >> promoted[i]) & 1:
                    i += 1
                if i == len(promoted):
                    break
                c = promoted[i]
                i += 1
            if _can_beat(h[o1], c, led, deck):
                continue
            if n == 1 and _can_beat(h[o2], c, led, deck):
                continue
            return c
        # cannot win for sure: second hand low, third hand high
        if n == 2:
            return high_rank(b & SM[led], deck) if b & SM[led] else lowest(b)
    lose = legal & ~b
    return low_rank(lose if lose else legal, deck)


# ============================================================================ exact endgame solver

def solve(hands, trick, leader: int, won, broken: bool, util, flb: bool = False,
          deck: Deck = STANDARD_DECK) -> float:
    """Exact minimax value of a perfect-information position (double-dummy) for team 0.

    Team 0 (seats 0 and 2) maximizes ``util(won)``, team 1 minimizes it; ``util`` maps the final
    4-tuple of tricks by seat to a number (e.g. ``HandUtility.value``). Cards adjacent in rank
    in one hand (nothing between them left in other hands or the trick) are played as one
    (equivalence pruning); alpha-beta pruning works inside each trick, and exact values of
    positions at trick boundaries are memoized. Meant for the last 3-4 tricks.

    Args:
        hands, trick, leader, won, broken, flb, deck: as in ``playout``.
        util: callable on a 4-tuple of trick counts.
    Returns:
        The value of the position under best play by both teams.
    """
    h = list(hands)
    tr = list(trick)
    w = list(won)
    rec = _minimax(h, tr, w, broken, util, flb, deck)
    p = (leader + len(tr)) & 3
    return rec(p, leader, -INF, INF)


def _minimax(h: list, tr: list, w: list, broken: bool, util, flb: bool, deck: Deck):
    """The search of ``solve``: returns ``rec(p, ldr, alpha, beta)``, the value of the position
    held in ``h`` (hands), ``tr`` (trick) and ``w`` (tricks won) with seat ``p`` to play in a
    trick led by ``ldr``; ``rec`` plays cards into these lists and restores them before it
    returns, and memoizes values at trick boundaries across its calls."""
    memo: dict = {}
    suit_of, st, above, below = deck.suit_of, deck.strength, deck.above, deck.below
    state = [broken]

    def rec(p: int, ldr: int, alpha: float, beta: float) -> float:
        n = len(tr)
        if n == 0:
            if not (h[0] | h[1] | h[2] | h[3]):
                return util(tuple(w))
            key = (h[0], h[1], h[2], h[3], p, state[0], w[0], w[1], w[2], w[3])
            v = memo.get(key)
            if v is not None:
                return v
            # search each trick with a full window so the memoized value is exact
            alpha = -INF
            beta = INF
        hand = h[p]
        led = suit_of[tr[0]] if n else -1
        legal = legal_cards_mask(hand, led, state[0], deck)
        maxi = TEAM[p] == 0
        best = None
        others = (h[0] | h[1] | h[2] | h[3]) & ~hand
        for x in tr:
            others |= 1 << x
        prev = -2
        m = legal
        while m:
            c = (m & -m).bit_length() - 1
            m &= m - 1
            # skip a card equivalent to the previous one tried (same suit, nothing between them
            # in the deck's order)
            if prev >= 0 and suit_of[prev] == suit_of[c]:
                lo, hi = (prev, c) if st[prev] < st[c] else (c, prev)
                if not (others & above[lo] & below[hi]):
                    prev = c
                    continue
            prev = c
            bit = 1 << c
            h[p] = hand & ~bit
            saved_broken = state[0]
            state[0] = spades_broken_after(c, led, saved_broken, flb, deck)
            tr.append(c)
            if n == 3:
                ws = trick_winner_unchecked(tr, ldr, deck)  # trick complete
                saved = tr[:]
                tr.clear()
                w[ws] += 1
                v = rec(ws, ws, alpha, beta)
                w[ws] -= 1
                tr.extend(saved)
            else:
                v = rec(NEXT_SEAT[p], ldr, alpha, beta)
            tr.pop()
            state[0] = saved_broken
            h[p] = hand
            if maxi:
                if best is None or v > best:
                    best = v
                    if v > alpha:
                        alpha = v
            elif best is None or v < best:
                best = v
                if v < beta:
                    beta = v
            if alpha >= beta:
                break
        if n == 0:
            memo[key] = best
        return best

    return rec


class _Leaf(float):
    """A value of ``solve`` that remembers the final trick counts (``won``) it was computed from:
    it compares and adds as the float it is, so the search and its result are unchanged."""

    __slots__ = ("won",)

    @classmethod
    def of(cls, util):
        """``util`` returning ``_Leaf`` values."""
        def leaf(won):
            v = cls(util(won))
            v.won = tuple(won)
            return v
        return leaf


_INCREMENTS: dict = {}  # r -> [(table index, (d0, d1, d2, d3))] for d0 + d1 + d2 + d3 == r


def _increments(r: int) -> list:
    """The ways ``r`` tricks split among 4 seats, each with its index in ``sp_solve``'s utility
    table (``((d0 * k + d1) * k + d2) * k + d3``, ``k = r + 1``)."""
    out = _INCREMENTS.get(r)
    if out is None:
        k = r + 1
        out = [(((a * k + b) * k + c) * k + (r - a - b - c), (a, b, c, r - a - b - c))
               for a in range(k) for b in range(k - a) for c in range(k - a - b)]
        _INCREMENTS[r] = out
    return out


def solve_many(deals, cards, trick, leader: int, won, broken: bool, mover: int, util,
               flb: bool = False, native: bool = True, deck: Deck = STANDARD_DECK,
               leaves: bool = False):
    """Many ``solve`` calls from one position, in one C call (``playouts``' rows for the exact
    solver): row ``r`` plays ``cards[r]`` for ``mover`` (``finish_trick``), then solves
    ``deals[r]`` exactly for team 0 with ``util``.

    Args:
        deals: R deals, each 4 masks by seat (the mover's card still in its hand); every seat
            holds one card for each trick left, less the card it has played to ``trick``.
        cards: R card ids, or -1 for a row that starts at the position as it is.
        trick, leader, won, broken, flb: the position, as for ``solve`` (shared by the rows).
        mover: the seat to play.
        util: callable on a 4-tuple of final trick counts (``solve``'s), returning a real number;
            the C search reads it as a table of float64 over the ways the r tricks left can
            split (at most 560 calls, 56 with 5 tricks left).
        native: use the C solver (``spades_env/_native/playout.c``: ``sp_solve``) when the
            kernel is available (``native_playouts``); False forces the Python ``solve`` (the
            reference).
        deck: the rules' ``Deck`` (``Rules.deck``; the C search reads its tables).
        leaves: also return each row's leaf: the final trick counts of the line of best play
            whose value it is (the Python search's leaf, with either path).
    Returns:
        R values (float: each exactly what ``solve`` returns, one of ``util``'s values), or with
        ``leaves`` ``(values, wons)``, ``wons`` R tuples of 4 final trick counts by seat.
    Raises:
        ValueError: lengths that do not match (cards, 4 masks a row, 4 counts in ``won``), a seat
            outside 0..3, a trick of 4 cards or more or a card id outside 0..51 in it, a mask
            outside [0, 2**52), hand sizes that do not fit the trick (above) or more than 13
            tricks left, a row's card that is not in the mover's hand, or a ``util`` value that is
            not a number or is NaN (C path); nothing is searched then. Hands that overlap are not
            checked (the bots draw them from the information set): they give meaningless values.
    """
    rows = len(deals)
    why = None
    if len(cards) != rows:
        why = f"{rows} deals need {rows} cards; got {len(cards)}"
    elif set(map(len, deals)) - {4}:
        why = "every deal must be 4 masks, by seat"
    else:
        why = _position_problem(trick, leader, won, mover)
        if why is None and any(not 0 <= c < 52 for c in trick):
            why = f"the trick's cards must be card ids 0..51; got {list(trick)}"
    if why is None and rows:
        try:
            r = (sum(m.bit_count() for m in deals[0]) + len(trick) + 3) // 4
        except (AttributeError, TypeError):
            why = f"masks must be ints in [0, 2**52); got {deals[0]!r}"
        else:
            if r > 13:
                why = f"row 0 holds {r} tricks left; at most 13"
    if why is not None:
        raise ValueError(f"solve_many: {why}")
    if not rows:
        return ([], []) if leaves else []
    if native and native_playouts():
        try:
            hands = array("Q", chain.from_iterable(deals))
        except (OverflowError, TypeError) as e:
            raise ValueError(f"solve_many: masks must be ints in [0, 2**52) ({e})") from None
        try:
            c = array("b", cards)
        except (OverflowError, TypeError):  # out of range: refused below
            c = array("b", [max(-2, min(52, x)) if isinstance(x, int) else -2 for x in cards])
        _check_solve_row(deals, cards, trick, leader, mover, r, 0)  # r is row 0's: checked
        table = array("d", bytes(8 * (r + 1) ** 4))
        for i, d in _increments(r):
            final = (won[0] + d[0], won[1] + d[1], won[2] + d[2], won[3] + d[3])
            x = util(final)
            try:
                v = float(x)
            except (TypeError, ValueError):
                raise ValueError(f"solve_many: util{final} is not a number: {x!r}") from None
            if v != v:
                raise ValueError(f"solve_many: util{final} is NaN")
            table[i] = v
        t = array("b", trick or [0])
        out = array("d", bytes(8 * rows))
        lv = array("b", bytes(4 * rows)) if leaves else None
        bad = _kernel.sp_solve(c_deck(deck), rows, hands.buffer_info()[0], c.buffer_info()[0],
                               t.buffer_info()[0], len(trick), leader, int(bool(broken)), mover,
                               int(bool(flb)), r, table.buffer_info()[0], out.buffer_info()[0],
                               lv.buffer_info()[0] if leaves else None)
        if bad:
            _check_solve_row(deals, cards, trick, leader, mover, r, abs(bad) - 1)
            raise AssertionError(f"sp_solve refused row {abs(bad) - 1} that passes the checks")
        if not leaves:
            return out.tolist()
        return out.tolist(), [(won[0] + lv[i], won[1] + lv[i + 1], won[2] + lv[i + 2],
                               won[3] + lv[i + 3]) for i in range(0, 4 * rows, 4)]
    for i in range(rows):
        _check_solve_row(deals, cards, trick, leader, mover, r, i)
    fn = _Leaf.of(util) if leaves else util
    values, wons = [], []
    for i in range(rows):
        if cards[i] >= 0:
            h2, t2, l2, w2, b2 = finish_trick(deals[i], trick, leader, won, broken, cards[i],
                                              mover, flb, deck)
        else:
            h2, t2, l2, w2, b2 = deals[i], trick, leader, won, broken
        v = solve(h2, t2, l2, w2, b2, fn, flb, deck)
        if leaves:
            values.append(float(v))
            wons.append(v.won)
        else:
            values.append(v)
    return (values, wons) if leaves else values


def _check_solve_row(deals, cards, trick, leader, mover, r, i) -> None:
    """``solve_many``'s checks of row ``i`` (``r`` tricks left); raises ``ValueError``."""
    sizes = []
    for m in deals[i]:
        try:
            ok = 0 <= index(m) < 1 << 52
        except TypeError:
            ok = False
        if not ok:
            raise ValueError(f"solve_many: row {i}: masks must be ints in [0, 2**52); got {m!r}")
        sizes.append(index(m).bit_count())
    c = cards[i]
    if c != -1 and not (isinstance(c, int) and 0 <= c < 52 and index(deals[i][mover]) >> c & 1):
        raise ValueError(f"solve_many: row {i}: card {c!r} is not in the hand of the mover "
                         f"(seat {mover}); a row's card must be one of its cards, or -1")
    want = [r - (((s - leader) & 3) < len(trick)) for s in range(4)]
    if sizes != want:
        raise ValueError(f"solve_many: row {i}: hand sizes {sizes} by seat do not fit {r} "
                         f"trick(s) left with {len(trick)} card(s) played to the trick led by "
                         f"seat {leader}: want {want}")


# ============================================================================ hand estimator

def _side_value(ch: int) -> float:
    ln = ch.bit_count()
    v = 0.0
    if ch >> 12 & 1:
        v += 0.95 if ln <= 6 else 0.7
    if ch >> 11 & 1:
        v += (0.8 if ln >= 2 else 0.3) if ln <= 5 else 0.5
    if ch >> 10 & 1:
        v += 0.45 if 3 <= ln <= 4 else (0.15 if ln == 2 else 0.1)
    return v


def _spade_value(ch: int) -> float:
    ln = ch.bit_count()
    v = 0.0
    if ch >> 12 & 1:
        v += 1.0
    if ch >> 11 & 1:
        v += 0.9 if ln >= 2 else 0.5
    if ch >> 10 & 1:
        v += 0.65 if ln >= 3 else 0.25
    if ch >> 9 & 1 and ln >= 4:
        v += 0.35
    v += max(0, ln - 3) * 0.85
    return v


_SIDE = tuple(_side_value(c) for c in range(1 << 13))
_SPADE = tuple(_spade_value(c) for c in range(1 << 13))
_SHORT = (0.9, 0.55, 0.15)  # extra ruffing value of a void / singleton / doubleton


def estimate_tricks(hand: int, deck: Deck = STANDARD_DECK) -> float:
    """Rough expected tricks of a 13-card hand (high cards, long spades, ruffing shortness).

    A fast stand-in for a bidding model (docs/bots.md strategy notes): aces, guarded kings, queens in
    3-4 card suits, spade honours and length beyond three, and voids/singletons/doubletons worth a
    ruff each while spare spades last. Returns a float (about the tricks such a hand takes).
    Honours are a suit's top cards in the deck's order (``Deck.top_bits``: under jokers the big
    and little joker count as the ace and king of spades do in the standard deck).
    """
    if deck.promoted:
        c0, c1, c2, c3 = (deck.top_bits(hand, s) for s in range(4))
        n3 = (hand & deck.spades).bit_count()
    else:
        c0 = hand & 0x1FFF
        c1 = (hand >> 13) & 0x1FFF
        c2 = (hand >> 26) & 0x1FFF
        c3 = hand >> 39
        n3 = c3.bit_count()
    v = _SIDE[c0] + _SIDE[c1] + _SIDE[c2] + _SPADE[c3] + 0.85 * (n3 - c3.bit_count())
    spare = n3 - 1 - (c3 >> 12 & 1) - (c3 >> 11 & 1)
    if spare > 0:
        r = 0.0
        for ch in (c0, c1, c2):
            ln = ch.bit_count()
            if ln < 3:
                r += _SHORT[ln]
        v += min(r, spare * 0.8)
    return v


def nil_risk(hand: int, deck: Deck = STANDARD_DECK) -> float:
    """Rough danger of a Nil with this hand: high spades, long spades, and unguarded high cards
    (docs/bots.md: a safe Nil has no high spades, many low cards, no unguarded kings or queens).
    0 = very safe; above about 2.5 a Nil is unlikely. High cards are a suit's top ones in the
    deck's order (``Deck.top_bits``)."""
    c3 = deck.top_bits(hand, 3)
    risk = 0.0
    risk += 3.0 * (c3 >> 12 & 1) + 2.0 * (c3 >> 11 & 1) + 1.2 * (c3 >> 10 & 1) + 0.6 * (c3 >> 9 & 1)
    risk += max(0, (hand & deck.spades).bit_count() - 3) * 0.8
    for s in (0, 1, 2):
        ch = deck.top_bits(hand, s)
        ln = ch.bit_count()
        for r in (12, 11, 10, 9):
            if ch >> r & 1:
                lower = (ch & ((1 << r) - 1)).bit_count()
                risk += max(0.0, (r - 8) * 0.45 - 0.4 * lower)
        _ = ln
    return risk


# ============================================================================ utility

class HandUtility:
    """Value of a hand's final trick counts for one team: its score difference against the other.

    ``value(won)`` = (points of ``team``) - (points of the other team), where a team's points are
    its ``score_hand`` hand points (contract made/set, Nil bonus/penalty, a bag penalty if the bag
    count reaches ``bag_limit`` this hand) minus ``bag_value`` for each bag left on the bag count
    (bags carried over cost ``bag_penalty / bag_limit`` = 10 points each in the long run), so every
    bag costs its real price whether or not it trips the penalty now (docs/rules.md, Scoring a hand).
    Near the end of the game (a team within 100 of the target) carried bags are valued at half.

    Args:
        bids: 4 ints by seat (0 = Nil).
        blind: 4 bools by seat.
        bags: 2 team bag counts before the hand.
        scores: 2 team totals before the hand.
        rules: the ``Rules``.
        team: 0 or 1, the team whose difference is returned.
    """

    __slots__ = ("bids", "blind", "bags", "scores", "rules", "team", "cache", "bag_value",
                 "_score", "_table")

    def __init__(self, bids, blind, bags, scores, rules: Rules, team: int):
        self.bids = tuple(bids)
        self.blind = tuple(bool(b) for b in blind)
        self.bags = tuple(bags)
        self.scores = tuple(scores)
        self.rules = rules
        self.team = team
        bv = rules.bag_penalty / rules.bag_limit
        if max(scores) >= rules.target_score - 100:
            bv *= 0.5
        self.bag_value = bv
        self.cache: dict = {}
        self._score = HandScorer(self.bids, self.bags, rules, self.blind, self.scores)
        self._table = None  # ``values``: the value by pooled outcome code, NaN until met

    def value(self, won) -> float:
        """Score difference (float) for ``team`` given 4 final trick counts by seat."""
        key = tuple(won)
        v = self.cache.get(key)
        if v is None:
            t = self._score(key)
            pts = []
            for i in (0, 1):
                ts = t[i]
                # change of the carried bag count (negative when the penalty removed 10 bags)
                carried = ts.bags_after - self.bags[i]
                pts.append(ts.hand_points - self.bag_value * carried)
            v = pts[self.team] - pts[1 - self.team]
            self.cache[key] = v
        return v

    __call__ = value

    def values(self, won: np.ndarray) -> np.ndarray:
        """``value`` of many outcomes at once: ints ``[R, 4]`` of final trick counts by seat ->
        float64 ``[R]``. Each outcome is pooled as a hand's points read it
        (``scoring.pooled_tricks``) and valued once per ``HandUtility``: a table by the pooled
        counts (base 14), filled by ``value`` the first time one is met."""
        codes = pooled_tricks(self.bids, won) @ _BASE14
        if self._table is None:
            self._table = np.full(14 ** 4, np.nan)
        u = self._table[codes]
        new = np.isnan(u)
        if new.any():
            for c in np.unique(codes[new]).tolist():
                self._table[c] = self.value((c % 14, c // 14 % 14, c // 196 % 14, c // 2744))
            u = self._table[codes]
        return u


_BASE14 = np.array([1, 14, 196, 2744], np.int32)  # 4 trick counts (0..13) as one code
