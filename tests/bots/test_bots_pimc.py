"""PIMC bots (``hard``, ``insane``) and their play-out / solver / utility helpers.

Sample counts are kept small so the file runs in seconds; hand-built positions use the exact
endgame solver, so the right card does not depend on luck of the sampled deals.
"""

from __future__ import annotations

import numpy as np
import pytest

from spades_env import Rules, SpadesGame
from spades_env.bots import make_bot
from spades_env.bots.pimc import HardBot, InsaneBot, PIMCBot, bid_likelihood, estimate_bid
from spades_env.bots.sampler import DealSampler, sample_deals
from spades_env.bots.solver import HandUtility, estimate_tricks, playout, solve
from spades_env.cards import FULL_DECK, mask_to_cards, parse_card, parse_cards
from spades_env.engine import Phase


def small_hard(seed, **kw):
    return HardBot(seed=seed, samples=6, bid_samples=6, verify=True, **kw)


def small_insane(seed, **kw):
    return InsaneBot(seed=seed, samples=8, bid_samples=8, inference_factor=2, verify=True, **kw)


def _play(game: SpadesGame, bots, hands: int, check_legal=True) -> list[int]:
    """Play ``hands`` complete hands; returns the action list. Asserts every action is legal."""
    moves = []
    start = game.hand_number
    while game.hand_number < start + hands and not game.is_over:
        p = game.current_player
        v = game.view(p)
        a = bots[p].act(v)
        if check_legal:
            assert a in v.legal_actions, (a, v.legal_actions)
            assert a in game.legal_actions()
        game.apply(a)
        moves.append(a)
    return moves


# ---------------------------------------------------------------------------- legality, seeding

@pytest.mark.parametrize("rules", [Rules(), Rules(blind_nil=True)], ids=["standard", "blind_nil"])
def test_bots_only_return_legal_actions(rules):
    g = SpadesGame(rules, seed=11)
    bots = [small_hard(0), small_insane(1), small_hard(2), small_insane(3)]
    moves = _play(g, bots, hands=2)
    assert len(g.hand_results) == 2
    assert sum(1 for a in moves if a < 52) >= 2 * 52


def test_blind_nil_and_exchange_path():
    # a bot that always bids Blind Nil when allowed: exercises the exchange for both roles
    rules = Rules(blind_nil=True)
    g = SpadesGame(rules, seed=4)
    first = g.current_player
    bots = [small_hard(s, blind_nil_deficit=-10_000) if s == first else small_hard(s)
            for s in range(4)]
    _play(g, bots, hands=1)
    r = g.hand_results[0]
    assert r.blind[first] and r.bids[first] == 0
    assert sum(r.tricks) == 13


def test_same_seed_same_moves():
    def run(seed):
        g = SpadesGame(Rules(blind_nil=True), seed=5)
        return _play(g, [small_hard(seed + s) if s % 2 else small_insane(seed + s)
                         for s in range(4)], hands=1, check_legal=False)
    a = run(100)
    assert a == run(100)
    assert len(a) >= 56


def test_make_bot_levels_and_bad_args():
    assert isinstance(make_bot("hard", seed=1), HardBot)
    assert isinstance(make_bot("insane", seed=1), InsaneBot)
    assert make_bot("insane", seed=1).infer_bids and not make_bot("hard", seed=1).infer_bids
    with pytest.raises(ValueError, match="samples"):
        HardBot(samples=0)
    with pytest.raises(ValueError, match="endgame_tricks"):
        HardBot(endgame_tricks=9)
    g = SpadesGame(seed=1)
    idle = (g.current_player + 1) & 3
    with pytest.raises(ValueError, match="no legal action"):
        small_hard(0).act(g.view(idle))


# ---------------------------------------------------------------------------- hidden information

def _rebuild(view, hands) -> SpadesGame:
    """A game with the public history of ``view`` but the hidden hands ``hands`` (no Blind Nil)."""
    initial = [hands[s] | view.played[s] for s in range(4)]
    g = SpadesGame.from_deal(initial, view.dealer, view.scores, view.bags, view.rules)
    g.hand_number = view.hand_number
    for i in range(4):
        s = (view.dealer + 1 + i) & 3
        if view.bids[s] is None:
            break
        g.apply(52 + view.bids[s])
    for _s, c in view.play_history:
        g.apply(c)
    return g


def test_decision_unchanged_when_hidden_cards_change():
    checked = 0
    for seed in range(6):
        g = SpadesGame(seed=seed)
        r = np.random.default_rng(seed)
        stop = int(r.integers(0, 40))  # a bid (0..3) or a card decision
        for i in range(stop):
            la = g.legal_actions()
            g.apply(52 + int(r.integers(1, 5)) if g.phase == Phase.BIDDING else
                    la[int(r.integers(len(la)))])
        seat = g.current_player
        v = g.view(seat)
        other = sample_deals(v, 1, rng=seed + 99)[0]
        g2 = _rebuild(v, other)
        v2 = g2.view(seat)
        assert v2.info_key() == v.info_key()
        if any(other[s] != g.hands[s] for s in range(4)):
            checked += 1
        for make in (small_hard, small_insane):
            assert make(7).act(v) == make(7).act(v2)
    assert checked >= 5


# ---------------------------------------------------------------------------- hand-built positions

def _position(hands: dict, trick: list, leader: int, won, bids, dealer: int = 3,
              voids=(0, 0, 0, 0)) -> SpadesGame:
    """A game in the play phase: ``hands`` {seat: "cards"} still held, ``trick`` [(seat, "card")]
    in progress led by ``leader``, ``won`` tricks by seat, ``bids`` by seat. The other cards count
    as played in earlier tricks (spread over the seats so hand sizes add up)."""
    masks = [0, 0, 0, 0]
    for s, text in hands.items():
        for c in parse_cards(text):
            masks[s] |= 1 << c
    tcards = [parse_card(c) for _s, c in trick]
    done = sum(won)
    played = [0, 0, 0, 0]
    for (s, _c), c in zip(trick, tcards):
        played[s] |= 1 << c
    rest = FULL_DECK & ~(masks[0] | masks[1] | masks[2] | masks[3])
    for c in tcards:
        rest &= ~(1 << c)
    pool = mask_to_cards(rest)
    for s in range(4):
        for _ in range(done):
            played[s] |= 1 << pool.pop()
    assert not pool
    for s in range(4):
        assert masks[s].bit_count() == 13 - done - (1 if s in [t[0] for t in trick] else 0)
    # Set the position's fields directly (the play log is left empty: bots read only the view).
    g = SpadesGame.from_deal([list(range(13 * i, 13 * i + 13)) for i in range(4)], dealer)
    for i in range(4):
        g.apply(52 + bids[(dealer + 1 + i) & 3])
    g.hands = masks
    g.played = played
    g.trick = tcards
    g.trick_leader = leader
    g.current_player = (leader + len(trick)) & 3
    g.tricks_won = list(won)
    g.trick_number = done
    g.spades_broken = True
    g.voids = list(voids)
    return g


def _choices(g: SpadesGame, makers=(lambda s: HardBot(seed=s, samples=12),
                                      lambda s: small_insane(s))) -> set:
    seat = g.current_player
    return {parse_card_str(make(s).act(g.view(seat))) for make in makers for s in range(3)}


def parse_card_str(card: int) -> str:
    from spades_env.cards import card_str
    return card_str(card)


def test_cover_partner_nil():
    # seat 2 bid Nil and led the QH; seat 3 played low. Seat 0 must overtake with the AH: seat 1
    # (still to play) may hold the KH and would otherwise leave the Nil bidder winning the trick.
    g = _position({0: "AH 2H 2C", 1: "KH 3C 4D", 2: "5C 6D", 3: "7C 8D"},
                  [(2, "QH"), (3, "4H")], leader=2, won=(4, 3, 0, 3), bids=(4, 4, 0, 3))
    assert _choices(g) == {"AH"}


def test_duck_when_contract_safe():
    # team 0 has made its contract (5 bid, 6 won) and team 1 too (4 bid, 4 won): every further
    # trick is a bag. Seat 0, last to play, ducks with the 3D under the 10D; the KD can be
    # discarded later (only the AD is left above it) while winning now costs a bag for sure.
    # Over the 90 deals that agree with seat 0's view (6 unseen cards, 2 to each seat) the duck
    # is worth more on average (hard values it 16.4, the KD 7.6), not in every deal: 12 deals pick
    # the KD for about 1 seed in 30, so the bots here play out every deal (samples >= 90: exact).
    g = _position({0: "KD 3D 2C", 1: "AD 5C", 2: "6C 7H", 3: "8H 9H"},
                  [(1, "9D"), (2, "4D"), (3, "10D")], leader=1, won=(3, 2, 3, 2),
                  bids=(3, 2, 2, 2))
    assert DealSampler(g.view(0)).count == 90
    assert _choices(g, (lambda s: HardBot(seed=s, samples=90),
                        lambda s: InsaneBot(seed=s, samples=90, bid_samples=8,
                                            inference_factor=2, verify=True))) == {"3D"}


def test_win_the_last_needed_trick():
    # team 0 bid 6 and has 5; two tricks left. The AH takes the trick now; the last trick may be
    # led in a suit seat 0 cannot follow, so ducking risks the contract (a set costs 60 + 60).
    g = _position({0: "AH 2H", 1: "5S", 2: "6C", 3: "7D"},
                  [(1, "QH"), (2, "3H"), (3, "4H")], leader=1, won=(3, 3, 2, 3),
                  bids=(3, 4, 3, 3))
    assert _choices(g) == {"AH"}


def test_card_values_are_the_exact_averages_over_every_consistent_deal():
    # The position of test_win_the_last_needed_trick. Seat 0 does not see where 5S, 6C and 7D
    # are: 3! = 6 deals agree with its view, so the bot plays out every one (exact expectation),
    # and with two tricks left it solves each exactly. Team 0 bid 6 and has 5; team 1 bid 7, has 6.
    # AH wins this trick (6 for team 0); seat 0 then leads 2H, which nobody can follow, and the
    # 5S takes the last trick. 5S with the partner (2 deals): team 0 7 tricks = 61 - 10 for the
    # bag, team 1 set -70: +121. 5S with an opponent (4 deals): 60 - 70 = -10. Mean 202/6.
    # 2H lets the QH win (team 1 7 tricks) and seat 1 leads the last trick. Seat 1 holds 5S
    # (2 deals): team 1 8 tricks, 71 - 10, team 0 set -60: -121. Seat 1 leads 6C or 7D: the
    # partner trumps with the 5S if it has it (60 - 70 = -10, 2 deals), else seat 3 must play
    # its 5S or seat 1's card stands (-121, 2 deals). Mean (4 * -121 + 2 * -10) / 6 = -84.
    g = _position({0: "AH 2H", 1: "5S", 2: "6C", 3: "7D"},
                  [(1, "QH"), (2, "3H"), (3, "4H")], leader=1, won=(3, 3, 2, 3),
                  bids=(3, 4, 3, 3))
    bot = HardBot(seed=0)
    cards, values = bot.card_values(g.view(0))
    assert cards == [parse_card("2H"), parse_card("AH")]
    assert values == pytest.approx([-84.0, 202 / 6])
    assert HardBot(seed=0).act(g.view(0)) == parse_card("AH")  # act plays the best value
    # one candidate: no deal drawn, value nan; outside the play phase: refused with the reason
    cards, values = bot.card_values(_position(
        {0: "2H", 1: "5S", 2: "6C", 3: "7D"}, [], leader=0, won=(3, 3, 3, 3),
        bids=(3, 3, 3, 3)).view(0))
    assert cards == [parse_card("2H")] and np.isnan(values[0])
    bidding = SpadesGame(Rules(), seed=1)
    with pytest.raises(ValueError, match="play phase, got the bidding phase"):
        bot.card_values(bidding.view(bidding.current_player))
    with pytest.raises(ValueError, match="seat 1 is not to move"):
        bot.card_values(g.view(1))
    with pytest.raises(ValueError, match="non-empty subset"):
        bot.card_values(g.view(0), [parse_card("KS")])


def test_attack_opponent_nil_by_leading_low():
    # seat 1 bid Nil and holds only hearts (void in the other suits, shown earlier); seat 0 leads.
    # Leading the 2H forces the Nil bidder to win unless its partner (seat 3) overtakes it; the AC
    # instead gives the Nil bidder a free discard. Seat 3 holds no heart (void shown), so the 2H
    # sets the Nil for sure.
    g = _position({0: "2H AC", 1: "5H 6H", 2: "3C 4D", 3: "7C 8D"},
                  [], leader=0, won=(4, 0, 3, 4), bids=(4, 0, 3, 4),
                  voids=(0, 0b1011, 0, 0b0100))
    assert _choices(g) == {"2H"}


# ---------------------------------------------------------------------------- bidding

def test_bids_follow_hand_strength():
    strong = parse_cards("AS KS QS JS 10S AH KH AD KD AC KC QH QD")
    weak = parse_cards("2S 2H 3H 4H 2D 3D 4D 5D 2C 3C 4C 5C 6C")
    rest = [c for c in range(52) if c not in strong + weak]
    g = SpadesGame.from_deal([strong, weak, rest[0::2], rest[1::2]], dealer=3)
    bid_strong = HardBot(seed=0, bid_samples=16).act(g.view(0)) - 52
    assert bid_strong >= 8
    g.apply(52 + bid_strong)
    bid_weak = HardBot(seed=0, bid_samples=16).act(g.view(1)) - 52
    assert bid_weak == 0  # no high card at all: Nil


# ---------------------------------------------------------------------------- inference

def test_insane_weights_deals_by_observed_bids():
    # seat 1 bid 8: under bid-consistent inference its sampled hands are much stronger than
    # uniform deals of the same information set
    g = SpadesGame(seed=21)
    g.apply(52 + 1)
    g.apply(52 + 8)  # the next seat bids 8
    high = (g.current_player - 1) & 3
    v = g.view(g.current_player)
    uni = PIMCBot(seed=1, infer_bids=False)._deals(v, 200)
    inf = PIMCBot(seed=1, infer_bids=True, inference_factor=8)._deals(v, 200)
    assert sum(w for _d, w in inf) == pytest.approx(200)
    mean_uni = np.mean([estimate_tricks(d[high]) for d, _w in uni])
    mean_inf = sum(w * estimate_tricks(d[high]) for d, w in inf) / 200
    assert mean_inf > mean_uni + 1.5


def test_bid_model():
    strong = sum(1 << c for c in parse_cards("AS KS QS JS 10S AH KH AD KD AC KC QH QD"))
    weak = sum(1 << c for c in parse_cards("2S 2H 3H 4H 2D 3D 4D 5D 2C 3C 4C 5C 6C"))
    assert estimate_bid(weak) == 0
    assert estimate_bid(strong) >= 9
    assert bid_likelihood(0, weak) > 0.9 > 0.1 > bid_likelihood(0, strong)
    e = estimate_tricks(strong)
    assert bid_likelihood(round(e), strong) > bid_likelihood(round(e) - 3, strong)


# ---------------------------------------------------------------------------- helpers

def test_hand_utility_values_bags_at_their_cost():
    rules = Rules()
    # docs/rules.md worked example: bids 3 + 2 = 5, 7 tricks -> +52 and 2 bags; team 1: 2 + 2 = 4,
    # 6 tricks -> +42, 2 bags. Each bag left on the count costs 10 more.
    u = HandUtility((3, 2, 2, 2), [False] * 4, (0, 0), (0, 0), rules, team=0)
    assert u((4, 2, 3, 4)) == pytest.approx((52 - 20) - (42 - 20))
    # with 9 bags before, the 2 bags trip the penalty: 52 - 100 = -48, count 9 -> 1 (+80)
    u9 = HandUtility((3, 2, 2, 2), [False] * 4, (9, 0), (0, 0), rules, team=0)
    assert u9((4, 2, 3, 4)) == pytest.approx((-48 + 80) - (42 - 20))
    # team 1's view is the negation; a failed Nil: -100 and its trick is a bag
    u1 = HandUtility((0, 3, 5, 3), [False] * 4, (0, 0), (0, 0), rules, team=1)
    assert u1((1, 3, 5, 4)) == pytest.approx((61 - 10) - (-100 + 50 - 10))


def _brute(hands, trick, leader, won, util):
    """Plain minimax (no pruning, no memo) for the solver test."""
    if not any(hands) and not trick:
        return util(tuple(won))
    p = (leader + len(trick)) & 3
    hand = hands[p]
    from spades_env.cards import SUIT_MASKS
    legal = hand & SUIT_MASKS[trick[0] // 13] if trick else hand
    legal = legal or hand
    vals = []
    for c in mask_to_cards(legal):
        h = list(hands)
        h[p] &= ~(1 << c)
        t = trick + [c]
        w = list(won)
        ld = leader
        if len(t) == 4:
            from spades_env.rules import trick_winner
            ws = trick_winner(t, leader)
            w[ws] += 1
            t, ld = [], ws
        vals.append(_brute(h, t, ld, w, util))
    return max(vals) if p % 2 == 0 else min(vals)


def test_solver_matches_brute_force_minimax():
    for seed in range(12):
        g = SpadesGame(seed=seed)
        r = np.random.default_rng(seed)
        bids = [int(x) for x in r.integers(0, 5, 4)]
        for b in bids:
            g.apply(52 + b)
        while g.trick_number < 10 or len(g.trick) != seed % 4:
            la = g.legal_actions()
            g.apply(la[int(r.integers(len(la)))])
        g.spades_broken = True  # both searches assume broken spades here
        u = HandUtility(bids, [False] * 4, (0, 0), (0, 0), g.rules, team=0)
        v = solve(g.hands, g.trick, g.trick_leader, g.tricks_won, True, u)
        assert v == pytest.approx(_brute(list(g.hands), list(g.trick), g.trick_leader,
                                         list(g.tricks_won), u))


def test_playout_is_legal_and_counts_tricks():
    for seed in range(30):
        g = SpadesGame(seed=seed)
        r = np.random.default_rng(seed)
        bids = [int(x) for x in r.integers(0, 6, 4)]
        for b in bids:
            g.apply(52 + b)
        for _ in range(int(r.integers(0, 40))):
            la = g.legal_actions()
            g.apply(la[int(r.integers(len(la)))])
        log = []
        won = playout(g.hands, g.trick, g.trick_leader, g.tricks_won, g.spades_broken, bids,
                      log=log)
        for c in log:
            g.apply(c)  # raises IllegalActionError on an illegal card
        assert list(g.hand_results[-1].tricks) == won


def test_candidates_merge_equivalent_cards():
    # holding 9H 10H JH with nothing between them outstanding: one candidate for the three
    g = _position({0: "9H 10H JH", 1: "2C 3C 4C", 2: "5C 6C 7C", 3: "8C 9C 10C"},
                  [], leader=0, won=(3, 1, 3, 3), bids=(3, 3, 3, 3))
    bot = small_hard(0)
    v = g.view(0)
    assert bot._candidates(v, v.legal_actions) == [parse_card("9H")]
    assert bot.act(v) == parse_card("9H")


def test_verify_catches_a_deal_that_contradicts_the_view(monkeypatch):
    from spades_env.bots import sampler as sampler_mod
    g = SpadesGame(seed=3)
    for b in (2, 3, 2, 3):
        g.apply(52 + b)
    v = g.view(g.current_player)
    swapped = list(g.hands)
    me = g.current_player
    # give the observer's first card to its left-hand opponent and vice versa
    a = swapped[me] & -swapped[me]
    o = (me + 1) & 3
    b = swapped[o] & -swapped[o]
    swapped[me] ^= a | b
    swapped[o] ^= a | b
    monkeypatch.setattr(sampler_mod.DealSampler, "samples",
                        lambda self, n, rnd: [list(swapped) for _ in range(n)])
    with pytest.raises(AssertionError, match="observer's hand differs"):
        small_hard(0).act(v)


def test_forced_bids_shape_the_deals_under_mirror():
    """Under ``mirror`` a bid is the spades its bidder held (docs/rules.md, House rules), so the
    search's deals give every other seat exactly its bid in spades (``bid_weight``): ``hard``
    reads it although it reads no other bid, and so does ``insane``; under ``standard`` the same
    bids say nothing for certain and ``hard``'s deals ignore them."""
    from spades_env.bots.pimc import HardBot, InsaneBot, bid_weight, forced_bid
    from spades_env.cards import SPADES_MASK

    r = Rules(mirror=True)
    assert forced_bid(r, 0) and forced_bid(Rules(whiz=True), 3)
    assert not forced_bid(Rules(whiz=True), 0) and not forced_bid(Rules(), 3)
    hand = (1 << 51) | (1 << 50) | 0b111  # AS KS and three clubs: 2 spades
    assert bid_weight(r, 2, hand) == 1.0 and bid_weight(r, 3, hand) < 1e-5
    for rules, bot_cls, exact in ((r, HardBot, True), (r, InsaneBot, True),
                                  (Rules(), HardBot, False)):
        g = SpadesGame(rules, seed=4)
        while g.phase == 0:  # the seats bid their spades (legal under both rule sets)
            p = g.current_player
            g.apply(52 + (g.hands[p] & SPADES_MASK).bit_count())
        v = g.view(g.current_player)
        bot = bot_cls(seed=1, samples=60)
        deals = bot._deals(v, 60)
        others = [s for s in range(4) if s != v.seat]
        share = sum(w for d, w in deals
                    if all(((d[s] | v.played[s]) & SPADES_MASK).bit_count() == v.bids[s]
                           for s in others)) / sum(w for _, w in deals)
        assert (share > 0.99) if exact else (share < 0.5), (bot_cls.__name__, rules.mirror, share)


def test_the_bid_model_reads_a_bid_among_the_bids_the_rules_left():
    """Under a team minimum (docs/rules.md, House rules) the second partner's choice is narrowed:
    after a partner's Nil under ``min_team_bid=4`` it could bid only 4..13, so a bid of 4 says
    less than under ``standard`` (it is also the lowest it could bid). ``legal_bids_at`` gives
    those bids from the public bidding; ``bid_weight`` divides the model's likelihood by its sum
    over them, and leaves ``standard`` (every bid open) as it was."""
    from spades_env.bots.pimc import bid_weight, legal_bids_at
    from spades_env.cards import parse_cards, cards_to_mask

    r = Rules(min_team_bid=4)
    g = SpadesGame(r, seed=3)
    d = g.dealer
    first, second = (d + 1) % 4, (d + 3) % 4  # partners: second bids after the first's Nil
    g.apply(52 + 0)  # first bidder: Nil
    g.apply(52 + 3)
    g.apply(52 + 4)  # second partner: at least 4
    v = g.view(g.current_player)
    assert legal_bids_at(v, first) is None  # nothing narrowed the first bidder
    assert legal_bids_at(v, second) == list(range(4, 14))
    weak = cards_to_mask(parse_cards("2C 3C 4C 5C 2D 3D 4D 5D 2H 3H 4H 5H 2S"))
    plain = bid_likelihood(4, weak)
    narrowed = bid_weight(r, 4, weak, legal_bids_at(v, second))
    assert narrowed == pytest.approx(plain / sum(bid_likelihood(b, weak) for b in range(4, 14)))
    assert narrowed > plain  # a weak hand forced up to 4 is not evidence against it
    assert bid_weight(Rules(), 4, weak) == plain
