"""The C play-outs of the PIMC bots (``spades_env/_native/playout.c``) against the Python ones.

The Python ``solver.playout`` is the reference: the C port must play the same card at every step,
so every test compares trick counts (or whole games) with both and asserts they are equal. The
positions come from real games (legal states of the engine) with random bids, Nil included.
"""

from __future__ import annotations

import random

import pytest

from spades_env import Rules, SpadesGame
from spades_env.bots import solver
from spades_env.bots.pimc import HardBot
from spades_env.bots.solver import finish_trick, native_playouts, playout, playouts
from spades_env.engine import Phase

pytestmark = pytest.mark.skipif(not native_playouts(),
                                reason="no C compiler: Python play-outs only")


def _positions(n: int, seed: int, flb: bool, jokers: bool = False):
    """``n`` play-phase positions of real games (random legal play), with the seat's legal cards:
    ``(hands, trick, leader, won, broken, mover, legal, rules)``."""
    rnd = random.Random(seed)
    rules = Rules(forced_spade_lead_breaks=flb, jokers=jokers)
    out = []
    while len(out) < n:
        g = SpadesGame(rules, seed=rnd.randrange(2**31))
        stop = rnd.randrange(4, 56)
        for _ in range(stop):
            g.apply(rnd.choice(g.legal_actions()))
        if g.phase != Phase.PLAY:
            continue
        v = g.view(g.current_player)
        hands = tuple(g.hands)  # 4 masks by seat
        trick = [c for _s, c in v.current_trick]
        leader = v.trick_leader if trick else v.seat
        out.append((hands, trick, leader, tuple(v.tricks_won), v.spades_broken, v.seat,
                    list(v.legal_actions)))
    return out


@pytest.mark.parametrize("flb", [False, True], ids=["standard", "forced_lead_breaks"])
def test_c_playouts_equal_python_playouts(flb):
    rnd = random.Random(7)
    rows = 0
    for hands, trick, leader, won, broken, mover, legal in _positions(150, 11 + flb, flb):
        # bids: contracts 1..7 and Nil (0), so every branch of the policy is met
        bids = [tuple(rnd.choice((0, 0, 1, 2, 3, 4, 5, 7)) for _ in range(4)) for _ in legal]
        deals = [hands] * len(legal)
        got = playouts(deals, bids, legal, trick, leader, won, broken, mover, flb)
        want = playouts(deals, bids, legal, trick, leader, won, broken, mover, flb, native=False)
        assert got == want
        for r, card in enumerate(legal):  # and the reference itself, card by card
            h2, t2, l2, w2, b2 = finish_trick(hands, trick, leader, won, broken, card, mover, flb)
            assert got[r] == tuple(playout(h2, t2, l2, w2, b2, bids[r], flb))
            assert sum(got[r]) == 13
        rows += len(legal)
    assert rows > 300


def test_rows_without_a_card_start_at_the_position():
    hands, trick, leader, won, broken, mover, _legal = _positions(1, 3, False)[0]
    bids = (3, 0, 4, 4)
    got = playouts([hands] * 2, bids, [-1, -1], trick, leader, won, broken, mover)
    assert got[0] == got[1] == tuple(playout(hands, trick, leader, won, broken, bids))


def test_hard_plays_the_same_game_with_c_and_python_playouts(monkeypatch):
    def game(native: bool) -> list[int]:
        if not native:
            monkeypatch.setattr(solver, "_kernel", False)
        g = SpadesGame(Rules(), seed=21)
        bots = [HardBot(seed=s, samples=10, bid_samples=10) for s in range(4)]
        moves = []
        while len(g.hand_results) < 1:
            a = bots[g.current_player].act(g.view(g.current_player))
            g.apply(a)
            moves.append(a)
        monkeypatch.undo()
        return moves

    with_c = game(True)
    assert len(with_c) == 56
    assert with_c == game(False)


@pytest.mark.parametrize("native", [True, False], ids=["C", "Python"])
def test_bad_input_is_refused_with_the_reason_on_both_paths(native):
    # found by a break-it pass: the C path crashed (a mover of 100000, a trick of 200 cards) or
    # read past its buffers (fewer cards than deals) instead of refusing
    hands, trick, leader, won, broken, mover, legal = _positions(1, 5, False)[0]
    theirs = next(c for c in range(52) if hands[(mover + 1) & 3] >> c & 1)
    bids = (3, 3, 3, 3)
    cases = [
        (dict(mover=100000), "mover and leader must be seats"),
        (dict(leader=5), "mover and leader must be seats"),
        (dict(trick=[(x % 52) for x in range(200)]), "at most 3 cards"),
        (dict(cards=[legal[0]] * 2), "need 2 cards|1 deals need 1 cards"),
        (dict(deals=[hands] * 2), "2 deals need 2 cards"),
        (dict(deals=[hands[:3]]), "4 masks"),
        (dict(bids=[(3, 3, 3)]), "4 masks or bids|4 bids"),
        (dict(cards=[theirs]), "row 0: card .* not in the hand of the mover"),
        (dict(cards=[52]), "row 0: card 52 is not in the hand"),
        (dict(cards=[300]), "row 0: card 300 is not in the hand"),
    ]
    for change, match in cases:
        kw = dict(deals=[hands], bids=bids, cards=[legal[0]], trick=trick, leader=leader,
                  won=won, broken=broken, mover=mover)
        kw.update(change)
        with pytest.raises(ValueError, match=match):
            playouts(native=native, **kw)
    if trick:  # a mover that is not the next seat of the trick
        with pytest.raises(ValueError, match="in turn"):
            playouts([hands], bids, [legal[0]], trick, leader, won, broken, (mover + 1) & 3,
                     native=native)


def test_c_playouts_equal_python_playouts_failed_nil_tricks_count():
    """``fnc`` (``Rules.failed_nil_tricks_count``): the policy counts a failed Nil's tricks in its
    partner's need, in C as in Python; Nil-heavy bids so failed Nils are common."""
    rnd = random.Random(5)
    differ = 0
    for hands, trick, leader, won, broken, mover, legal in _positions(120, 17, False):
        bids = [tuple(rnd.choice((0, 0, 0, 2, 3, 4, 6)) for _ in range(4)) for _ in legal]
        deals = [hands] * len(legal)
        got = playouts(deals, bids, legal, trick, leader, won, broken, mover, False, fnc=True)
        want = playouts(deals, bids, legal, trick, leader, won, broken, mover, False,
                        native=False, fnc=True)
        assert got == want
        differ += got != playouts(deals, bids, legal, trick, leader, won, broken, mover, False)
    assert differ > 0  # the switch does change the policy somewhere


def test_c_playouts_equal_python_playouts_under_jokers():
    """``Rules.jokers`` (docs/rules.md, Jokers): the play-outs take the deck's tables
    (``native.c_deck``), so C plays the same cards as Python, each card legal by the engine's
    rules and the tricks counted with the jokers' order; and the order does change the counts."""
    from spades_env import rules as R
    deck = R.JOKERS_DECK
    rnd = random.Random(9)
    differ = rows = 0
    for hands, trick, leader, won, broken, mover, legal in _positions(120, 23, False, True):
        bids = [tuple(rnd.choice((0, 1, 2, 3, 4, 5, 7)) for _ in range(4)) for _ in legal]
        deals = [hands] * len(legal)
        got = playouts(deals, bids, legal, trick, leader, won, broken, mover, deck=deck)
        want = playouts(deals, bids, legal, trick, leader, won, broken, mover, native=False,
                        deck=deck)
        assert got == want
        differ += got != playouts(deals, bids, legal, trick, leader, won, broken, mover)
        rows += len(legal)
    for r in range(rows // 40):  # whole play-outs, card by card, against the reference rules
        hands, trick, leader, won, broken, mover, legal = _positions(1, 100 + r, False, True)[0]
        log: list = []
        out = playout(hands, trick, leader, won, broken, (3, 3, 3, 3), log=log, deck=deck)
        h, t, ldr, w, b = list(hands), list(trick), leader, list(won), broken
        for card in log:
            p = (ldr + len(t)) & 3
            led = deck.suit_of[t[0]] if t else -1
            assert (R.legal_cards_mask(h[p], led, b, deck) >> card) & 1
            h, t, ldr, w, b = finish_trick(h, t, ldr, w, b, card, p, False, deck)
        assert tuple(w) == tuple(out)
    assert rows > 200 and differ > 0
