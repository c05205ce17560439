"""The C exact endgame solver (``spades_env/_native/playout.c``: ``sp_solve``) against the Python
``solver.solve``, through ``solver.solve_many``.

The Python search is the reference: the C port tries the same cards in the same order with the
same cut-offs, so every test asserts the values (and the leaves, the final trick counts of the line
of each value) are equal with ``==``, not approximately. The positions come from real games
(legal states of the engine) with every seat to move, 0 to 3 cards in the trick, 1 to 5 tricks
left, spades broken or not, ``forced_spade_lead_breaks`` on and off, the standard deck and the
jokers' deck, and utilities that are not monotone in the tricks (Nil bids, bags, random tables).
"""

from __future__ import annotations

import random

import pytest

from spades_env import Rules, SpadesGame
from spades_env.bots import solver
from spades_env.bots.pimc import HardBot
from spades_env.bots.solver import HandUtility, finish_trick, native_playouts, solve, solve_many
from spades_env.engine import Phase

pytestmark = pytest.mark.skipif(not native_playouts(),
                                reason="no C compiler: the Python solver only")


def _position(rnd: random.Random, rules: Rules, tricks_left: int, in_trick: int) -> SpadesGame:
    """A game of random legal moves stopped with ``tricks_left`` tricks left (the trick in
    progress counted) and ``in_trick`` cards played to the trick in progress."""
    while True:
        g = SpadesGame(rules, seed=rnd.randrange(2**31))
        while not g.hand_results:
            if g.phase == Phase.PLAY and 13 - g.trick_number == tricks_left \
                    and len(g.trick) == in_trick:
                return g
            g.apply(rnd.choice(g.legal_actions()))


def _utilities(rnd: random.Random, rules: Rules) -> list:
    """A ``HandUtility`` with Nil bids (not monotone: a Nil's first trick costs its bonus), one for
    team 1, and a table of random values (no order at all)."""
    bids = tuple(rnd.choice((0, 0, 1, 2, 3, 4, 5)) for _ in range(4))
    table: dict = {}

    def noise(won):
        return table.setdefault(tuple(won), float(rnd.randrange(-50, 50)))

    return [HandUtility(bids, [False] * 4, (rnd.randrange(10), rnd.randrange(10)), (0, 0), rules,
                        0),
            HandUtility(bids, [False] * 4, (0, 0), (rnd.randrange(400), 0), rules, 1),
            noise]


def _compare(g: SpadesGame, util, broken: bool, rows_with_start: bool = True) -> int:
    """``solve_many`` of every legal card of the seat to move (and of the position as it is) in C
    and in Python, and each row with ``solve`` itself: equal values and leaves. Returns the rows."""
    v = g.view(g.current_player)
    trick = [c for _s, c in v.current_trick]
    leader = v.trick_leader if trick else v.seat
    flb, deck = g.rules.forced_spade_lead_breaks, g.rules.deck
    cards = list(v.legal_actions) + ([-1] if rows_with_start else [])
    deals = [tuple(g.hands)] * len(cards)
    args = (deals, cards, trick, leader, v.tricks_won, broken, v.seat, util, flb)
    c_vals, c_wons = solve_many(*args, deck=deck, leaves=True)
    p_vals, p_wons = solve_many(*args, deck=deck, leaves=True, native=False)
    assert c_vals == p_vals
    assert c_wons == p_wons
    assert solve_many(*args, deck=deck) == c_vals  # without the leaves: the same values
    for r, card in enumerate(cards):  # and the reference itself, row by row
        if card >= 0:
            pos = finish_trick(g.hands, trick, leader, v.tricks_won, broken, card, v.seat, flb,
                               deck)
        else:
            pos = (g.hands, trick, leader, v.tricks_won, broken)
        assert solve(*pos, util, flb, deck) == c_vals[r]
        assert util(c_wons[r]) == c_vals[r]  # the leaf is the line of the value
        assert sum(c_wons[r]) == 13
    return len(cards)


@pytest.mark.parametrize("jokers", [False, True], ids=["standard", "jokers"])
@pytest.mark.parametrize("flb", [False, True], ids=["broken_by_ruff", "forced_lead_breaks"])
def test_c_solver_equals_python_solver_1_to_3_tricks(flb, jokers):
    rnd = random.Random(11 + 2 * flb + jokers)
    rules = Rules(forced_spade_lead_breaks=flb, jokers=jokers)
    rows, movers = 0, set()
    for k in range(48):
        g = _position(rnd, rules, 1 + k % 3, (k // 3) % 4)
        movers.add(g.current_player)
        for util in _utilities(rnd, rules):
            for broken in (False, True):
                rows += _compare(g, util, broken)
    assert movers == {0, 1, 2, 3}
    assert rows > 700


@pytest.mark.parametrize("jokers", [False, True], ids=["standard", "jokers"])
def test_c_solver_equals_python_solver_4_and_5_tricks(jokers):
    rnd = random.Random(5 + jokers)
    rules = Rules(forced_spade_lead_breaks=jokers, jokers=jokers)
    rows, movers = 0, set()
    for k in range(16):
        g = _position(rnd, rules, 4 + k % 2, k % 4)
        movers.add(g.current_player)
        util = _utilities(rnd, rules)[k % 3]
        rows += _compare(g, util, g.spades_broken if k % 4 else False, rows_with_start=k % 2 == 0)
    assert movers == {0, 1, 2, 3}
    assert rows > 60


def test_many_rows_of_different_deals_in_one_call():
    """One call of many deals (the bot's rows; the C memo is shared by the rows of a call)
    equals each row alone and the Python search."""
    rnd = random.Random(3)
    rules = Rules()
    g = _position(rnd, rules, 4, 1)
    v = g.view(g.current_player)
    deals = [d for d, _w in HardBot(seed=2, samples=30)._deals(v, 30)]
    cands = list(v.legal_actions)
    rows = [d for d in deals for _c in cands]
    util = HandUtility((0, 3, 4, 4), [False] * 4, (3, 8), (0, 0), rules, 0)
    args = (rows, cands * len(deals), [c for _s, c in v.current_trick], v.trick_leader,
            v.tricks_won, v.spades_broken, v.seat, util)
    got = solve_many(*args, leaves=True)
    assert got == solve_many(*args, leaves=True, native=False)
    alone = [solve_many([r], [c], *args[2:], leaves=True) for r, c in zip(args[0], args[1])]
    assert got == ([a[0][0] for a in alone], [a[1][0] for a in alone])
    assert len(set(got[0])) > 1


def _views(seed: int, rules: Rules, n: int) -> list:
    """``n`` views of the seat to move with more than one legal card in the last 3 tricks of
    games of random play."""
    rnd = random.Random(seed)
    out = []
    while len(out) < n:
        g = SpadesGame(rules, seed=rnd.randrange(2**31))
        while not g.hand_results:
            if g.phase == Phase.PLAY and g.trick_number >= 10 and len(g.legal_actions()) > 1:
                out.append(g.view(g.current_player))
            g.apply(rnd.choice(g.legal_actions()))
    return out[:n]


@pytest.mark.parametrize("rules", [Rules(), Rules(forced_spade_lead_breaks=True, jokers=True),
                                   Rules(failed_nil_tricks_count=True, blind_nil=True)],
                         ids=["standard", "flb_jokers", "fnc_blind_nil"])
def test_card_values_and_outcomes_are_the_same_with_c_and_python(rules, monkeypatch):
    views = _views(7, rules, 120)
    with_c = [(HardBot(seed=i, samples=12).card_values(v),
               HardBot(seed=i, samples=12).card_outcomes(v)) for i, v in enumerate(views)]
    monkeypatch.setattr(solver, "_kernel", False)
    with_py = [(HardBot(seed=i, samples=12).card_values(v),
                HardBot(seed=i, samples=12).card_outcomes(v)) for i, v in enumerate(views)]
    assert repr(with_c) == repr(with_py)  # repr: exact floats, and nan (one candidate) too
    assert sum(len(cv[0]) > 1 for cv, _co in with_c) > 60  # real choices, solved


@pytest.mark.parametrize("native", [True, False], ids=["C", "Python"])
def test_bad_input_is_refused_with_the_reason_on_both_paths(native):
    rnd = random.Random(4)
    g = _position(rnd, Rules(), 3, 2)
    v = g.view(g.current_player)
    hands, mover = tuple(g.hands), v.seat
    trick = [c for _s, c in v.current_trick]
    theirs = next(c for c in range(52) if hands[(mover + 1) & 3] >> c & 1)
    legal = list(v.legal_actions)
    short = list(hands)
    short[mover] &= short[mover] - 1  # one card fewer
    extra = list(hands)
    extra[mover] |= 1 << theirs  # one card more (shared with the next seat)
    big = list(hands)
    big[mover] |= 1 << 60
    util = HandUtility((3, 3, 3, 3), [False] * 4, (0, 0), (0, 0), Rules(), 0)
    cases = [
        (dict(mover=100000), "mover and leader must be seats"),
        (dict(leader=5), "mover and leader must be seats"),
        (dict(won=(1, 2, 3)), "won 4 counts"),
        (dict(trick=[(x % 52) for x in range(200)]), "at most 3 cards"),
        (dict(trick=trick[:1] + [60]), "card ids 0..51"),
        (dict(cards=[legal[0]] * 2), "1 deals need 1 cards"),
        (dict(deals=[hands] * 2), "2 deals need 2 cards"),
        (dict(deals=[hands[:3]]), "4 masks"),
        (dict(deals=[hands, short], cards=[legal[0]] * 2), r"row 1: hand sizes .* do not fit"),
        (dict(deals=[extra]), r"row 0: hand sizes .* do not fit"),
        (dict(deals=[big]), r"row 0: masks must be ints in \[0, 2\*\*52\)"),
        (dict(deals=[[-1, 0, 0, 0]]), r"masks must be ints"),
        (dict(cards=[theirs]), "row 0: card .* not in the hand of the mover"),
        (dict(cards=[52]), "row 0: card 52 is not in the hand"),
        (dict(cards=[-300]), "row 0: card -300 is not in the hand"),
        (dict(cards=[2.0]), "row 0: card 2.0 is not in the hand"),
    ]
    for change, match in cases:
        kw = dict(deals=[hands], cards=[legal[0]], trick=trick, leader=v.trick_leader,
                  won=v.tricks_won, broken=v.spades_broken, mover=mover, util=util)
        kw.update(change)
        with pytest.raises(ValueError, match=match):
            solve_many(native=native, **kw)
    if native:  # the C search reads the utility as a table of numbers
        for bad, match in ((lambda w: float("nan"), "is NaN"), (lambda w: "x", "not a number")):
            with pytest.raises(ValueError, match=match):
                solve_many([hands], [legal[0]], trick, v.trick_leader, v.tricks_won,
                           v.spades_broken, mover, bad)
    assert solve_many([], [], trick, v.trick_leader, v.tricks_won, True, mover, util,
                      native=native, leaves=True) == ([], [])
