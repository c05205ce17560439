"""``PIMCBot.card_outcomes`` and ``bid_outcomes``: the search's deals' outcomes, behind the values
it chooses from (the play page's hint counts contracts and Nils made from them), added without
changing a single decision of ``hard`` or the random numbers it draws.
"""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from spades_env import Rules, SpadesGame
from spades_env.bots import make_bot, sampler
from spades_env.bots.pimc import MAX_SAMPLES
from spades_env.bots.solver import HandUtility
from spades_env.cards import BID_OFFSET, TEAM
from spades_env.engine import Phase
from spades_env.variants import PRESETS

# the moves of four ``hard`` bots on fixed seeds (sha256 of the action ids, first 16 hex
# digits); standard play with the default options, Blind Nils and their exchanges, failed Nil
# tricks counted, the 2 of clubs leading. Two digests per game: the sampler's batched draw (the
# default; its own random stream, so other deals and moves), then deal by deal (``BATCH_MIN``
# raised: the digest recorded before the outcomes were added, still played move for move)
RECORDED = [
    ("standard", Rules(), 1, 2, {}, 112, "b7cbbe5f2c7eaade", "cf2edc9d61915e9c"),
    ("house", PRESETS["house"], 2, 3, dict(samples=12, bid_samples=8, blind_nil_deficit=0), 200,
     "48f5f18d0e46641a", "329ca5e57ece24ab"),
    ("failed_nil", Rules(failed_nil_tricks_count=True), 3, 4, dict(samples=12, bid_samples=8), 224,
     "7948d5c2c1c9323e", "bf446c51b65c3778"),
    ("two_of_clubs", Rules(two_of_clubs_leads=True), 4, 2, dict(samples=12, bid_samples=8), 112,
     "facf251b23173c80", "8d86a80ba522325d"),
]


@pytest.mark.parametrize("batched", [True, False], ids=["batched", "deal-by-deal"])
@pytest.mark.parametrize("name,rules,seed,hands,kw,n,digest,digest_python", RECORDED,
                         ids=[r[0] for r in RECORDED])
def test_hard_plays_the_moves_it_played_before(name, rules, seed, hands, kw, n, digest,
                                               digest_python, batched, monkeypatch):
    if not batched:
        monkeypatch.setattr(sampler, "BATCH_MIN", MAX_SAMPLES * 1000)  # never batched
    g = SpadesGame(rules, seed=seed)
    bots = [make_bot("hard", seed=seed * 10 + s, **kw) for s in range(4)]
    moves = []
    while g.hand_number < hands and not g.is_over:
        a = bots[g.current_player].act(g.view(g.current_player))
        g.apply(a)
        moves.append(a)
    assert len(moves) == n
    assert hashlib.sha256(bytes(moves)).hexdigest()[:16] == (digest if batched else digest_python)


def _decisions(seed: int, phase: Phase, rules=Rules()):
    """Views of seat 2 at its decisions of ``phase`` through one hand of ``hard`` bots."""
    g = SpadesGame(rules, seed=seed)
    bot = make_bot("hard", seed=seed, samples=10, bid_samples=8)
    out = []
    while g.hand_number < 1:
        v = g.view(g.current_player)
        if v.seat == 2 and v.phase == phase and len(v.legal_actions) > 1 and v.looked:
            out.append(v)
        g.apply(bot.act(v))
    return out


def _same_draws(bot_a, bot_b) -> bool:
    return bot_a.rng.bit_generator.state == bot_b.rng.bit_generator.state


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_card_outcomes_are_the_deals_behind_card_values(seed):
    """Every decision of a hand, early (play-outs) to the last tricks (the exact solver): the
    same cards and values as ``card_values``, the same random numbers drawn, each value the
    weighted mean of the hand's utility over its outcomes, each outcome a whole hand."""
    views = _decisions(seed, Phase.PLAY)
    assert any(v.trick_number >= 10 for v in views) and any(v.trick_number < 5 for v in views)
    for k, v in enumerate(views):
        a, b = make_bot("hard", seed=k), make_bot("hard", seed=k)
        cards, values = a.card_values(v)
        cards2, values2, outcomes = b.card_outcomes(v)
        assert cards2 == cards and values2 == values or (len(cards) == 1 and len(values2) == 1)
        assert _same_draws(a, b)
        assert len(outcomes) == len(cards)
        if len(cards) == 1:
            assert outcomes == [[]]
            continue
        team = TEAM[v.seat]
        util = HandUtility(v.bids, v.blind, v.bags, v.scores, v.rules, team)
        for val, outs in zip(values, outcomes):
            total = sum(w for w, _won in outs)
            assert val == pytest.approx(sum(w * util(won) for w, won in outs) / total, abs=1e-9)
            for _w, won in outs:
                assert sum(won) == 13
                assert all(x >= t for x, t in zip(won, v.tricks_won))
        # the hard bot's own choice is the highest value
        assert make_bot("hard", seed=k).act(v) in v.legal_actions


def test_card_outcomes_checks_its_arguments():
    v = _decisions(1, Phase.PLAY)[0]
    bot = make_bot("hard", seed=0)
    with pytest.raises(ValueError, match="legal must be"):
        bot.card_outcomes(v, [99])
    bid = _decisions(1, Phase.BIDDING)[0]
    with pytest.raises(ValueError, match="play phase"):
        bot.card_outcomes(bid)


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_bid_outcomes_are_the_deals_behind_bid_values(seed):
    for k, v in enumerate(_decisions(seed, Phase.BIDDING)):
        a, b = make_bot("hard", seed=k), make_bot("hard", seed=k)
        bids, values = a.bid_values(v)
        bids2, values2, outcomes = b.bid_outcomes(v)
        assert (bids2, values2) == (bids, values)
        assert _same_draws(a, b)
        assert BID_OFFSET + bids[int(np.argmax(values))] == make_bot("hard", seed=k).act(v)
        team = TEAM[v.seat]
        for bid, val, outs in zip(bids, values, outcomes):
            total = 0.0
            acc = 0.0
            for w, seat_bids, shares in outs:
                assert seat_bids[v.seat] == bid and None not in seat_bids
                assert all(seat_bids[s] == v.bids[s] for s in range(4) if v.bids[s] is not None)
                assert sum(f for f, _won in shares) == pytest.approx(1.0)
                util = HandUtility(seat_bids, v.blind, v.bags, v.scores, v.rules, team)
                acc += w * sum(f * util(won) for f, won in shares)
                total += w
                assert all(sum(won) == 13 for _f, won in shares)
            assert val == pytest.approx(acc / total, abs=1e-9)
        # other bids asked too: the shared bids keep their values (the same deals)
        legal = [x - BID_OFFSET for x in v.legal_actions]
        more = sorted(set(bids) | {x for x in (0, 13) if x in legal})
        c = make_bot("hard", seed=k)
        got, vals, _outs = c.bid_outcomes(v, more)
        assert got == more
        by = dict(zip(got, vals))
        assert all(by[x] == pytest.approx(y, abs=1e-12) for x, y in zip(bids, values))


def test_bid_outcomes_refuses_a_bid_the_rules_forbid():
    v = _decisions(1, Phase.BIDDING)[0]
    bot = make_bot("hard", seed=0)
    with pytest.raises(ValueError, match="legal bids"):
        bot.bid_outcomes(v, [14])
    with pytest.raises(ValueError, match="legal bids"):
        bot.bid_outcomes(v, [])
