"""The label search's fast path: deals drawn in C (``sampler.native_deals``,
``spades_env/_native/deals.c``) against the Python sampler, ``PIMCBot(native_deals=True)``'s card
values from those deals, and ``CheckpointBot(numpy_forward=True)`` against torch."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from spades_env import Rules, SpadesGame
from spades_env.bots import make_bot, pimc
from spades_env.bots.pimc import PIMCBot
from spades_env.bots.sampler import DealSampler, check_deal, native_deals
from spades_env.bots.solver import HandUtility, native_playouts, playouts

from .test_sampler import _late_views

pytestmark = pytest.mark.skipif(not native_playouts(), reason="the C kernel is not built")


def _play_views(games: int, seed: int = 0):
    """Every card decision's view of ``games`` hands four ``medium`` bots play (voids shown)."""
    bots = [make_bot("medium", seed=seed + i) for i in range(4)]
    for gi in range(games):
        g = SpadesGame(Rules(), seed=seed * 1000 + gi)
        while not g.hand_results:
            v = g.view(g.current_player)
            if v.phase == 2:
                yield v
            g.apply(bots[g.current_player].act(v))


def test_counts_equal_the_python_samplers_and_every_deal_agrees_with_the_view():
    views = voided = 0
    for v in _play_views(12):
        hands, count = native_deals(v, 30, views)
        want = DealSampler(v).count
        assert count == pytest.approx(want, rel=1e-12)
        if want <= 10**6:  # exact where it decides between drawing and enumerating
            assert count == want
        assert hands.shape == (30, 4) and hands.dtype == np.uint64
        for d in hands.tolist():
            assert check_deal(v, d) is None
        views += 1
        voided += any(v.known_voids[s] for s in range(4) if s != v.seat)
    assert views == 12 * 52 and voided >= 50


@pytest.mark.parametrize("case", [1, 2, 3, 4])
def test_the_c_draw_is_uniform(case):
    """20,000 C deals of a small case (1 to 4 pools) hit every consistent deal
    (``DealSampler.all_deals``) and only those, uniformly: chi-square, fixed seed, p > 1e-3."""
    v, _spades = _late_views()[case]
    every = {tuple(d) for d in DealSampler(v).all_deals()}
    hands, count = native_deals(v, 20_000, 12345)
    assert count == len(every) >= 2
    counts: dict = {}
    for d in hands.tolist():
        counts[tuple(d)] = counts.get(tuple(d), 0) + 1
    assert set(counts) == every
    assert stats.chisquare([counts[d] for d in sorted(every)]).pvalue > 1e-3


def test_the_seed_determines_the_deals():
    v = next(x for i, x in enumerate(_play_views(1, seed=3)) if i == 5)
    a, _ = native_deals(v, 40, 7)
    b, _ = native_deals(v, 40, 7)
    c, _ = native_deals(v, 40, 8)
    assert (a == b).all() and not (a == c).all()
    assert len({tuple(d) for d in a.tolist()}) > 30  # 40 draws of ~10**16 deals: distinct
    only, n = native_deals(v, 0, 7)
    assert only.shape == (0, 4) and n == DealSampler(v).count


def test_views_it_does_not_cover_return_none():
    """Not looked at (Blind Nil decision) or a card known from the exchange: the Python
    sampler's cases."""
    g = SpadesGame(Rules(blind_nil=True), seed=0)
    g.scores = [0, 200]  # team 0 trails by 200: Blind Nil is offered
    v = g.view(g.current_player)
    if not v.looked:
        assert native_deals(v, 5, 0) is None

    class Known:
        looked = True
        known_cards = (0, 1, 0, 0)

    assert native_deals(Known(), 5, 0) is None


def test_card_values_are_the_mean_utility_of_the_deals_drawn(monkeypatch):
    """``native_deals=True``: each candidate's value is the mean over the C deals of
    ``HandUtility`` (for the seat's team) of ``playouts``' trick counts: the per-team outcome
    codes and the hand's utility table change nothing."""
    drawn = []

    def spy(view, n, seed):
        got = native_deals(view, n, seed)
        drawn.append(got)
        return got

    monkeypatch.setattr(pimc, "native_deals", spy)
    bot = PIMCBot(seed=4, samples=30, native_deals=True)
    checked = nil_seen = 0
    for v in _play_views(6, seed=2):
        drawn.clear()
        cards, values = bot.card_values(v)
        if len(cards) == 1 or not drawn or drawn[0] is None or drawn[0][1] <= 30 \
                or 13 - v.trick_number <= bot.endgame_tricks:
            continue
        hands = [list(map(int, d)) for d in drawn[0][0].tolist()]
        rows = [h for h in hands for _c in cards]
        trick = [c for _s, c in v.current_trick]
        outs = playouts(rows, tuple(v.bids), cards * len(hands), trick,
                        v.trick_leader if trick else v.seat, v.tricks_won, v.spades_broken,
                        v.seat, v.rules.forced_spade_lead_breaks,
                        fnc=v.rules.failed_nil_tricks_count, native=False)
        util = HandUtility(v.bids, v.blind, v.bags, v.scores, v.rules, v.seat % 2)
        want = np.array([util(o) for o in outs]).reshape(len(hands), len(cards)).mean(0)
        np.testing.assert_allclose(values, want, rtol=1e-12, atol=1e-9)
        checked += 1
        nil_seen += 0 in v.bids
    assert checked >= 100 and nil_seen >= 1


def test_numpy_forward_gives_torchs_probabilities():
    """The same probabilities as the torch forward pass (float32 rounding), the same greedy
    action, 0 off the legal actions, at bids and cards."""
    pytest.importorskip("torch")  # (the base install's lane runs these tests without it)
    from spades_env.agents import SHIPPED_CHECKPOINT
    from spades_env.bots.checkpoint_bot import CheckpointBot
    ref = CheckpointBot(str(SHIPPED_CHECKPOINT))
    fast = CheckpointBot(str(SHIPPED_CHECKPOINT), numpy_forward=True)
    phases = set()
    for gi in range(3):
        g = SpadesGame(Rules(), seed=gi)
        while not g.hand_results:
            v = g.view(g.current_player)
            p, q = ref.action_probs(v), fast.action_probs(v)
            np.testing.assert_allclose(q, p, atol=1e-5)
            legal = np.zeros(68, bool)
            legal[list(v.legal_actions)] = True
            assert (q[~legal] == 0).all() and q.sum() == pytest.approx(1.0)
            assert fast.act(v) == ref.act(v) == int(p.argmax())
            phases.add(int(v.phase))
            g.apply(ref.act(v))
    assert phases == {0, 2}
    with pytest.raises(ValueError, match="numpy_forward must be True or False"):
        CheckpointBot(str(SHIPPED_CHECKPOINT), numpy_forward=1)


def test_with_the_python_play_outs_forced_the_bot_searches_as_without_it(monkeypatch):
    """``solver._kernel = False`` (the Python play-outs, as ``benchmarks/bench_playout.py``
    forces them): ``native_deals=True`` falls back to the Python sampler before drawing anything,
    so it chooses exactly as ``native_deals=False`` (this raised ``RuntimeError`` in
    ``playouts_array`` before)."""
    from spades_env.bots import solver
    monkeypatch.setattr(solver, "_kernel", False)
    a = PIMCBot(seed=5, samples=8, native_deals=True)
    b = PIMCBot(seed=5, samples=8)
    n = 0
    for v in _play_views(1, seed=4):
        got, want = a.card_values(v), b.card_values(v)
        if len(want[0]) > 1:
            assert got == want
            n += 1
    assert n >= 20


def test_an_exchange_view_returns_none_and_bad_arguments_are_refused():
    """During a Blind Nil exchange a hand briefly holds more than 13 cards: not the C draw's case
    (this raised RuntimeError before); ``n`` and ``seed`` are checked."""
    g = SpadesGame(Rules(blind_nil=True), seed=0)
    g.scores = [0, 200]  # team 0 trails by 200: seat 0 may bid Blind Nil
    bots = [make_bot("easy", seed=i) for i in range(4)]
    while True:
        seat = g.current_player
        v = g.view(seat)
        if v.phase == 1 and max(v.hand_sizes) > 13:
            break
        g.apply(66 if 66 in v.legal_actions and seat == 0 else bots[seat].act(v))
    w = g.view(1)  # an opponent, who knows no card of the exchange
    assert not any(w.known_cards) and max(w.hand_sizes) > 13
    assert native_deals(w, 2, 0) is None
    v = next(iter(_play_views(1)))
    for bad in (-1, True, 1.5):
        with pytest.raises(ValueError, match="n must be a non-negative int"):
            native_deals(v, bad, 0)
    for bad in (-1, 2**64, 1.5, "7"):
        with pytest.raises(ValueError, match=r"seed must be an int in \[0, 2\*\*64\)"):
            native_deals(v, 1, bad)
    assert native_deals(v, 1, 2**64 - 1)[0].shape == (1, 4)


def test_card_outcomes_give_card_values_values_with_native_deals():
    """``card_outcomes`` promises ``card_values``' cards and values from the same deals: with
    ``native_deals`` too (it took the Python path before, and other values); each value is the
    mean utility of its outcomes."""
    checked = 0
    for v in _play_views(2, seed=6):
        a = PIMCBot(seed=1, samples=40, native_deals=True)
        b = PIMCBot(seed=1, samples=40, native_deals=True)
        cards, values = a.card_values(v)
        c2, v2, outs = b.card_outcomes(v)
        assert c2 == cards
        np.testing.assert_array_equal(v2, values)  # (NaN where one candidate)
        if len(cards) > 1 and 13 - v.trick_number > 3 and len(outs[0]) == 40:
            util = HandUtility(v.bids, v.blind, v.bags, v.scores, v.rules, v.seat % 2)
            for i, o in enumerate(outs):
                assert values[i] == pytest.approx(np.mean([util(won) for _w, won in o]))
            checked += 1
    assert checked >= 20
