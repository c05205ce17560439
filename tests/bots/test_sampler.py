"""Deal sampler (determinization) tests: sampled deals agree with the information set, every
consistent deal is possible (exhaustive enumeration on a small case), uniformity, speed under tight
constraints, and each sample's information-set key equals the real one; the batched draw
(``DealSampler.samples``) under every preset, its uniformity and its determinism."""

from __future__ import annotations

import functools
import itertools
import random
import time

import numpy as np
import pytest
from scipy import stats

from spades_env import Rules, SpadesGame
from spades_env.bots.sampler import DealSampler, check_deal, inferred_voids, sample_deals
from spades_env.cards import FULL_DECK, SUIT_MASKS, mask_to_cards, parse_cards


def _random_position(seed: int, plays: int, rules: Rules | None = None):
    """A seeded game after the bids (random bids 1..4) and ``plays`` random cards."""
    g = SpadesGame(rules, seed=seed)
    r = np.random.default_rng(seed)
    while g.phase == 0:  # bidding (with Blind Nil: look first)
        la = g.legal_actions()
        if 67 in la:
            g.apply(67)
        else:
            g.apply(52 + int(r.integers(1, 5)))
    for _ in range(plays):
        la = g.legal_actions()
        g.apply(la[int(r.integers(len(la)))])
    return g


def _rebuild(view, hands) -> SpadesGame:
    """A full game whose current hands are ``hands`` and whose public history is ``view``'s
    (standard rules, no Blind Nil exchange): deal = current hands + cards played, then replay the
    bids and plays. Raises IllegalActionError when the sample contradicts the history."""
    initial = [hands[s] | view.played[s] for s in range(4)]
    g = SpadesGame.from_deal(initial, view.dealer, view.scores, view.bags, view.rules)
    g.hand_number = view.hand_number
    for i in range(4):
        s = (view.dealer + 1 + i) & 3
        g.apply(52 + view.bids[s])
    for _s, c in view.play_history:
        g.apply(c)
    return g


def test_samples_agree_with_view_and_info_key():
    checked = 0
    for seed in range(12):
        g = _random_position(seed, plays=(seed * 7) % 45)
        for seat in range(4):
            v = g.view(seat)
            for hands in sample_deals(v, 15, rng=seed * 10 + seat):
                assert check_deal(v, hands) is None
                g2 = _rebuild(v, hands)
                assert g2.view(seat).info_key() == v.info_key()
                checked += 1
    assert checked == 12 * 4 * 15


def test_samples_respect_voids_seen_in_play():
    # find positions with voids shown by other seats, then check no sample breaks them
    found = 0
    for seed in range(40):
        g = _random_position(seed, plays=30)
        v = g.view(0)
        if not any(v.voids[1:]):
            continue
        found += 1
        for hands in sample_deals(v, 50, rng=seed):
            for s in (1, 2, 3):
                for suit in range(4):
                    if (v.voids[s] >> suit) & 1:
                        assert not hands[s] & SUIT_MASKS[suit]
            assert hands[0] == v.hand
            assert sum(h.bit_count() for h in hands) + sum(p.bit_count() for p in v.played) == 52
    assert found >= 10


def _small_constrained_view():
    """A late position (3 tricks left) where other seats show voids: deterministic search."""
    for seed in range(500):
        g = _random_position(seed, plays=40)  # 10 tricks done, 3 cards each
        v = g.view(0)
        nvoid = sum(bin(v.voids[s]).count("1") for s in (1, 2, 3))
        if nvoid >= 3:
            return g, v
    raise AssertionError("no constrained position found")


def _enumerate(view) -> set:
    """Every deal of the unseen cards to seats 1..3 that ``check_deal`` accepts (brute force)."""
    unseen = mask_to_cards(view.unseen)
    seats = [s for s in range(4) if s != view.seat]
    out = set()
    for owners in itertools.product(seats, repeat=len(unseen)):
        hands = [0, 0, 0, 0]
        hands[view.seat] = view.hand
        for c, s in zip(unseen, owners):
            hands[s] |= 1 << c
        if check_deal(view, hands) is None:
            out.add(tuple(hands))
    return out


def test_every_consistent_deal_appears_uniformly():
    g, v = _small_constrained_view()
    every = _enumerate(v)
    ds = DealSampler(v)
    assert ds.count == len(every)
    assert 2 <= len(every) <= 2000
    listed = [tuple(d) for d in ds.all_deals()]
    assert len(listed) == ds.count and set(listed) == every
    rnd = random.Random(7)
    n = 40 * len(every)
    counts = {}
    for _ in range(n):
        d = tuple(ds.sample(rnd))
        assert d in every
        counts[d] = counts.get(d, 0) + 1
    assert set(counts) == every  # no consistent deal is systematically excluded
    # uniform: chi-square goodness of fit (fixed seed, so the test is deterministic)
    obs = [counts[d] for d in sorted(every)]
    assert stats.chisquare(obs).pvalue > 1e-3


def test_exhaustive_with_hand_built_voids():
    # 9 unseen cards; extra voids make a tight but feasible case; compare with brute force
    g = _random_position(3, plays=40)
    v = g.view(2)
    allowed = _enumerate(v)
    # pick a void (seat, suit) that some but not all consistent deals satisfy
    extra = None
    for s, suit in itertools.product((0, 1, 3), range(4)):
        n_void = sum(1 for d in allowed if not d[s] & SUIT_MASKS[suit])
        if 0 < n_void < len(allowed):
            extra = [0, 0, 0, 0]
            extra[s] = 1 << suit
            break
    assert extra is not None
    ds = DealSampler(v, extra_voids=extra)
    every = {d for d in allowed if not any(d[s] & SUIT_MASKS[suit] for s in range(4)
                                           for suit in range(4) if (extra[s] >> suit) & 1)}
    assert 0 < len(every) < len(allowed)
    assert ds.count == len(every) > 0
    assert sorted(tuple(d) for d in ds.all_deals()) == sorted(every)
    rnd = random.Random(1)
    seen = {tuple(ds.sample(rnd)) for _ in range(30 * len(every))}
    assert seen == every


def test_tight_constraints_are_fast():
    # first trick of a hand: 39 unseen cards; every other seat void in two suits
    g = SpadesGame.from_deal([
        parse_cards("AS KS QS JS 10S 9S 8S 7S 6S 5S 4S 3S 2S"),
        parse_cards("AH KH QH JH 10H 9H 8H 7H 6H 5H 4H 3H 2H"),
        parse_cards("AD KD QD JD 10D 9D 8D 7D 6D 5D 4D 3D 2D"),
        parse_cards("AC KC QC JC 10C 9C 8C 7C 6C 5C 4C 3C 2C"),
    ], dealer=3)
    for b in (1, 1, 1, 1):
        g.apply(52 + b)
    v = g.view(0)
    # seat 1 may hold only hearts/diamonds, seat 2 diamonds/clubs, seat 3 clubs/hearts
    extra = [0, 0b1001, 0b1100, 0b1010]
    ds = DealSampler(v, extra_voids=extra)
    # blind dealing would hit such a deal with probability count / (39! / 13!^3): tiny
    from math import factorial
    assert ds.count / (factorial(39) // factorial(13) ** 3) < 1e-6
    rnd = random.Random(0)
    t = time.perf_counter()
    deals = ds.samples(1000, rnd)
    elapsed = time.perf_counter() - t
    assert elapsed < 1.0
    for d in deals:
        for s in (1, 2, 3):
            for suit in range(4):
                if (extra[s] >> suit) & 1:
                    assert not d[s] & SUIT_MASKS[suit]
        assert sorted(h.bit_count() for h in d) == [13, 13, 13, 13]
        assert d[0] | d[1] | d[2] | d[3] == FULL_DECK


def test_inconsistent_constraints_raise():
    g = _random_position(1, plays=0)
    v = g.view(0)
    with pytest.raises(ValueError, match="inconsistent view"):
        DealSampler(v, extra_voids=[0, 0b1111, 0, 0])
    with pytest.raises(ValueError, match="non-negative"):
        sample_deals(v, -1)


def test_forced_spade_lead_reveals_only_spades():
    # seat 1 leads first and holds 13 spades: its forced spade lead shows it holds only spades
    g = SpadesGame.from_deal([
        parse_cards("AH KH QH JH 10H 9H 8H 7H 6H 5H 4H 3H 2H"),
        parse_cards("AS KS QS JS 10S 9S 8S 7S 6S 5S 4S 3S 2S"),
        parse_cards("AD KD QD JD 10D 9D 8D 7D 6D 5D 4D 3D 2D"),
        parse_cards("AC KC QC JC 10C 9C 8C 7C 6C 5C 4C 3C 2C"),
    ], dealer=0)
    for b in (3, 3, 3, 3):
        g.apply(52 + b)
    g.apply(parse_cards("2S")[0])  # seat 1's forced lead; spades were not broken
    v = g.view(0)
    assert v.voids[1] == 0  # the engine records no void for it...
    assert inferred_voids(v)[1] == 0b0111  # ...but the lead shows seat 1 holds only spades
    for hands in sample_deals(v, 30, rng=0):
        assert hands[1] == SUIT_MASKS[3] & ~(1 << parse_cards("2S")[0])


def test_blind_nil_exchange_cards_stay_known():
    rules = Rules(blind_nil=True)
    for seed in range(6):
        g = SpadesGame(rules, seed=seed)
        r = np.random.default_rng(seed)
        first = g.current_player
        g.apply(66)  # first bidder: Blind Nil
        for _ in range(3):
            g.apply(67)
            g.apply(52 + int(r.integers(1, 5)))
        while g.phase == 1:  # exchange
            la = g.legal_actions()
            g.apply(la[int(r.integers(len(la)))])
        # right after the exchange the Blind Nil bidder knows the 3 cards it passed back
        assert g.view(first).known_cards[(first + 2) & 3].bit_count() == 3
        for _ in range(int(r.integers(0, 20))):
            la = g.legal_actions()
            g.apply(la[int(r.integers(len(la)))])
        for seat in (first, (first + 2) & 3, (first + 1) & 3):
            v = g.view(seat)
            known = v.known_cards
            for hands in sample_deals(v, 20, rng=seed):
                assert check_deal(v, hands) is None
                for s in range(4):
                    if s != seat:
                        assert known[s] & ~hands[s] == 0


def test_spade_counts_keep_exactly_the_deals_with_those_spades():
    """``spade_counts`` (what a forced bid under ``mirror`` or ``whiz`` tells): the sampler counts,
    lists and draws exactly the consistent deals in which each named seat holds that many unseen
    spades, uniformly among them."""
    g, v = _small_constrained_view()
    every = _enumerate(v)
    seats = [s for s in range(4) if s != v.seat]
    s = seats[0]
    spades = sorted({(d[s] >> 39).bit_count() for d in every})
    n = spades[len(spades) // 2]
    want = {d for d in every if (d[s] >> 39).bit_count() == n}
    assert 0 < len(want) < len(every)
    ds = DealSampler(v, spade_counts={s: n})
    assert ds.count == len(want)
    assert {tuple(d) for d in ds.all_deals()} == want
    rnd = random.Random(3)
    counts = {}
    for _ in range(40 * len(want)):
        d = tuple(ds.sample(rnd))
        assert d in want
        counts[d] = counts.get(d, 0) + 1
    assert set(counts) == want
    assert stats.chisquare([counts[d] for d in sorted(want)]).pvalue > 1e-3


# ----------------------------------------------------------------------------- batched draw
PRESET_RULES = {
    "standard": Rules(),
    "blind-nil": Rules(blind_nil=True),
    "mirror": Rules.preset("mirror"),
    "whiz": Rules.preset("whiz"),
    "jokers": Rules.preset("joker_joker_deuce_deuce"),
    "jokers-mirror": Rules(jokers=True, mirror=True),
    "jokers-nil-pass": Rules(jokers=True, nil_pass=3, blind_nil=True),
}


def _forced_spades(view) -> dict:
    """``{seat: unseen spades}`` for the seats whose bid the rules force (``mirror``, ``whiz``),
    as ``PIMCBot._deals`` passes it: the bid less the spades the seat played or is known to hold;
    seats whose hand an exchange changed after the bids are left out."""
    from spades_env.bots.base import exchanged_seats
    from spades_env.bots.pimc import forced_bid
    spades = view.rules.deck.spades
    changed = exchanged_seats(view)
    return {s: view.bids[s] - ((view.played[s] | view.known_cards[s]) & spades).bit_count()
            for s in range(4) if s != view.seat and view.bids[s] is not None
            and not view.blind[s] and s not in changed and forced_bid(view.rules, view.bids[s])}


def _random_views(rules: Rules, seed: int):
    """Views of every seat at random points of a seeded game (random legal actions: bids, Blind
    Nil and looks, exchanges, cards; several hands), each with its forced spade counts."""
    g = SpadesGame(rules, seed=seed)
    r = random.Random(seed)
    while g.hand_number < 2 and not g.is_over:
        if r.random() < 0.15:
            for seat in range(4):
                v = g.view(seat)
                yield v, _forced_spades(v)
        la = g.legal_actions()
        g.apply(la[r.randrange(len(la))])


@pytest.mark.parametrize("name", list(PRESET_RULES))
def test_batched_deals_agree_with_random_views(name):
    """Every batched deal agrees with the view (``check_deal``) and holds the spades a forced
    bid tells, at random points of real games under each preset, for every seat: looked or not,
    bidding, exchange and play."""
    rules = PRESET_RULES[name]
    spades = rules.deck.spades
    views = forced_views = unlooked = 0
    pools = set()
    for seed in range(6):
        rnd = random.Random(seed)
        for v, forced in _random_views(rules, seed):
            ds = DealSampler(v, spade_counts=forced or None)
            pools.add(len(ds.pools))
            unlooked += not v.looked
            n = rnd.choice((4, 9, 40))
            deals = ds.samples(n, rnd, batched=True)
            assert len(deals) == n
            for hands in deals:
                assert check_deal(v, hands) is None
                for s in forced:  # the bid is the spades the seat was dealt
                    assert ((hands[s] | v.played[s] | v.known_cards[s]) & spades).bit_count() \
                        == v.bids[s]
            views += 1
            forced_views += bool(forced)
    assert views >= 100 and pools >= {1, 2, 3}
    assert (forced_views >= 20) is (rules.mirror or rules.whiz)
    assert (unlooked >= 10) is rules.blind_nil  # the observer's own hand sampled too


def test_a_view_with_no_unseen_card_has_one_deal():
    """Late in the last trick every card but the observer's may be played: the one consistent
    deal is the known hands (this raised ``IndexError`` before)."""
    g = _random_position(0, plays=51)  # the last trick, three cards played: seat 2 to play
    v = g.view(2)
    assert v.unseen == 0 and v.hand_sizes == (0, 0, 1, 0)
    ds = DealSampler(v)
    hands = [0, 0, v.hand, 0]
    assert ds.count == 1 and list(ds.all_deals()) == [hands]
    assert ds.sample(random.Random(0)) == hands
    assert ds.samples(40, random.Random(0)) == [hands] * 40


@functools.cache
def _late_views():
    """Small cases (count <= 400) with 1, 2, 3 and 4 pools, and one with a spade count."""
    out = {}
    for seed in range(300):
        g = _random_position(seed, plays=(36, 40, 44)[seed % 3])
        for seat in range(4):
            v = g.view(seat)
            ds = DealSampler(v)
            if 20 <= ds.count <= 400:
                out.setdefault(len(ds.pools), (v, None))
        if len(out) == 4:
            break
    g, v = _small_constrained_view()
    every = _enumerate(v)
    s = next(s for s in range(4) if s != v.seat)
    counts = sorted((d[s] >> 39).bit_count() for d in every)
    out["spades"] = (v, {s: counts[len(counts) // 2]})
    return out


@pytest.mark.parametrize("case", [1, 2, 3, 4, "spades"])
def test_batched_draw_is_uniform(case):
    """20,000 batched deals of a small case hit every consistent deal (``all_deals``) and only
    those, uniformly: chi-square goodness of fit, fixed seed, p > 1e-3."""
    v, spade_counts = _late_views()[case]
    ds = DealSampler(v, spade_counts=spade_counts)
    if case != "spades":
        assert len(ds.pools) == case
    every = {tuple(d) for d in ds.all_deals()}
    assert len(every) == ds.count >= 2
    counts: dict = {}
    for d in ds.samples(20_000, random.Random(11), batched=True):
        counts[tuple(d)] = counts.get(tuple(d), 0) + 1
    assert set(counts) == every
    assert stats.chisquare([counts[d] for d in sorted(every)]).pvalue > 1e-3


def test_batched_draw_is_determined_by_the_callers_generator(monkeypatch):
    """The same ``random.Random`` state gives the same deals (from a new sampler of the view
    too, and in batches of ``BATCH_ROWS`` deals); the generator is advanced (the next call draws
    others); ``batched=None`` batches from ``BATCH_MIN`` deals on and draws deal by deal
    (``sample``) below it."""
    from spades_env.bots import sampler
    g = _random_position(5, plays=9)
    v = g.view(1)
    ds = DealSampler(v)
    a = ds.samples(40, random.Random(3))
    assert a == ds.samples(40, random.Random(3), batched=True)
    assert a == DealSampler(v).samples(40, random.Random(3))
    rnd = random.Random(3)
    assert ds.samples(40, rnd) == a and ds.samples(40, rnd) != a
    assert a != ds.samples(40, random.Random(4))
    assert a != ds.samples(40, random.Random(3), batched=False)
    few = sampler.BATCH_MIN - 1
    rnd = random.Random(3)
    assert ds.samples(few, random.Random(3)) == [ds.sample(rnd) for _ in range(few)]
    assert ds.samples(0, random.Random(3)) == []
    monkeypatch.setattr(sampler, "BATCH_ROWS", 7)  # 40 deals in batches of 7: still valid
    b = ds.samples(40, random.Random(3))
    assert len(b) == 40 and all(check_deal(v, d) is None for d in b)
    assert b == ds.samples(40, random.Random(3))
