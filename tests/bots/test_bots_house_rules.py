"""Every bot under every house rule (docs/rules.md, House rules): it asks the rules what it may do,
so a whole hand is played with only legal actions (the engine would refuse any other), Nil passing
exchanges included, and the bids respect the bidding rules."""

from __future__ import annotations

import pytest

from spades_env import Rules, SpadesGame
from spades_env.bots import make_bot
from spades_env.bots.pimc import HardBot

HOUSE = {
    "board4-not13": Rules(min_team_bid=4, bid_total_not_13=True),
    "suicide": Rules.preset("suicide"),
    "mirror": Rules.preset("mirror"),
    "whiz": Rules.preset("whiz"),
    "nil-pass": Rules(nil_pass=2),
    "blind-nil-trailing": Rules(blind_nil=True, blind_nil_deficit=100),
    "spades-any-time": Rules(spades_lead_any_time=True),
    "2C-leads": Rules(two_of_clubs_leads=True),
    "big-bids-moon": Rules(big_bid_double=10, moon_wins=True, bags_score_points=False),
    "jokers": Rules.preset("joker_joker_deuce_deuce"),
    "jokers-mirror": Rules(jokers=True, mirror=True),
    "jokers-nil-pass": Rules(jokers=True, nil_pass=3, blind_nil=True),
}


def _bot(level: str, seed: int):
    if level == "hard":  # a small search: the rules, not the strength, are under test
        return HardBot(seed=seed, samples=8, bid_samples=8)
    return make_bot(level, seed=seed)


@pytest.mark.parametrize("level", ["random", "easy", "medium", "hard"])
@pytest.mark.parametrize("name", list(HOUSE))
def test_every_bot_plays_a_legal_hand_under_each_house_rule(level, name):
    rules = HOUSE[name]
    for seed in range(2):
        g = SpadesGame(rules, seed=seed)
        if name == "blind-nil-trailing":
            g = SpadesGame.from_deal(g.hands, g.dealer, scores=(0, 150), rules=rules, seed=seed)
        bots = [_bot(level, 10 * seed + s) for s in range(4)]
        dealt = list(g.hands)
        while g.hand_number == 0:
            p = g.current_player
            g.apply(bots[p].act(g.view(p)))  # an illegal action would raise here
        h = g.hand_results[0]
        b = h.bids
        if rules.suicide:
            assert (b[0] == 0) != (b[2] == 0) and (b[1] == 0) != (b[3] == 0)
        if rules.min_team_bid:
            for t in (0, 1):
                assert b[t] + b[t + 2] >= rules.min_team_bid
        if rules.bid_total_not_13:
            assert sum(b) != 13
        if rules.mirror:  # the spades held: under jokers the jokers and the 2D count
            assert list(b) == [(h & rules.deck.spades).bit_count() for h in dealt]


# ----------------------------------------------------------------------------- jokers
def _mask(text: str) -> int:
    from spades_env.cards import cards_to_mask, parse_cards
    return cards_to_mask(parse_cards(text, jokers=True))


def test_scripted_bots_count_the_jokers_as_top_trumps():
    """docs/rules.md, Jokers: ``easy`` and ``medium`` count the deck's spades and its top cards.
    The same 13 ids read two ways: under jokers BJ LJ 3S 4S are four spades headed by the two
    top trumps (easy: 2 sure tricks; medium: 1 + 1 for the two top trumps, no long spade), in the
    standard deck they are 2H 2C and two low spades (easy's minimum 1; medium 0)."""
    from spades_env.bots.heuristic import easy_trick_count, medium_nil_safe, \
        medium_trick_estimate
    from spades_env.bots.solver import estimate_tricks
    from spades_env.rules import JOKERS_DECK, STANDARD_DECK
    hand = _mask("BJ LJ 3S 4S 3C 4C 5C 3D 4D 5D 3H 4H 5H")
    assert easy_trick_count(hand, JOKERS_DECK) == 2
    assert easy_trick_count(hand, STANDARD_DECK) == 1
    assert medium_trick_estimate(hand, JOKERS_DECK) == 2.0
    assert medium_trick_estimate(hand, STANDARD_DECK) == 0.0
    assert estimate_tricks(hand, JOKERS_DECK) > estimate_tricks(hand, STANDARD_DECK) + 1.5
    # a Nil hand in the standard deck (one low spade, small cards) holds ids 0 and 13: under
    # jokers they are the little joker and the 2D, three spades headed by a top trump
    nil = _mask("LJ 3C 4C 5C 2D 3D 4D 5D 3H 4H 5H 6H 3S")
    assert medium_nil_safe(nil, STANDARD_DECK)
    assert not medium_nil_safe(nil, JOKERS_DECK)


@pytest.mark.parametrize("level", ["easy", "medium"])
def test_scripted_bots_follow_and_trump_by_the_decks_suits(level):
    """A diamond led (AD), seat 1 holding the 2D and no other diamond: under jokers the 2D is a
    spade, so seat 1 is void and both bots ruff the ace with their cheapest winner, the 2D being
    above the 3S in the deck's order: they play the 3S."""
    rules = Rules(jokers=True)
    hands = ["AD KD QD JD 10D 9D 8D 7D 6D 5D 4D 3D AC",
             "2D 3S 3C 4C 5C 6C 7C 8C 9C 10C JC QC KC",
             "BJ LJ 2S AS KS QS JS 10S 9S 8S 7S 6S 5S",
             "4S AH KH QH JH 10H 9H 8H 7H 6H 5H 4H 3H"]
    g = SpadesGame.from_deal(hands, dealer=3, rules=rules)
    for b in (4, 2, 6, 1):
        g.apply(52 + b)
    g.apply(_mask("AD").bit_length() - 1)  # seat 0 leads the AD
    v = g.view(1)
    assert set(v.legal_actions) == set(range(52)) & {c for c in range(52) if v.hand >> c & 1}
    bot = make_bot(level, seed=0, **({"careless": 0.0} if level == "easy" else {}))
    assert bot.act(v) == _mask("3S").bit_length() - 1


def test_sampler_deals_the_jokers_only_to_seats_that_may_hold_spades():
    """A seat void in spades (shown) holds no joker and no 2D in any sampled deal under jokers;
    in the standard deck the same ids are a club, a diamond and a heart it may hold."""
    from spades_env.bots.sampler import DealSampler, check_deal
    import random
    for rules, jokers in ((Rules(jokers=True), True), (Rules(), False)):
        g = SpadesGame(rules, seed=4)
        v = g.view(0)
        sampler = DealSampler(v, extra_voids=[0, 0b1000, 0, 0])
        got = 0
        for hands in sampler.samples(200, random.Random(1)):
            assert check_deal(v, hands) is None
            assert not hands[1] & rules.deck.spades
            got |= hands[1]
        promoted = (1 << 0) | (1 << 13) | (1 << 26)
        assert bool(got & promoted & ~v.hand) is not jokers


@pytest.mark.parametrize("level", ["insane", "expert"])
def test_the_other_search_bots_play_a_legal_hand_under_jokers(level):
    """``insane`` (bid inference through the deck's hand estimates) and ``expert`` (its network's
    likelihood of the cards others played, with the deck's legal cards) under jokers: a whole
    hand of legal moves (small searches: the rules, not the strength, are under test)."""
    from spades_env.bots.pimc import InsaneBot
    rules = Rules.preset("joker_joker_deuce_deuce")
    if level == "expert":
        pytest.importorskip("torch")
        from spades_env.bots.expert import ExpertBot
        bots = [ExpertBot(seed=s, samples=12, bid_samples=8) for s in range(4)]
    else:
        bots = [InsaneBot(seed=s, samples=12, bid_samples=8, verify=True) for s in range(4)]
    g = SpadesGame(rules, seed=5)
    while g.hand_number == 0:
        p = g.current_player
        g.apply(bots[p].act(g.view(p)))  # an illegal action would raise here
    assert sum(g.hand_results[0].tricks) == 13


@pytest.mark.parametrize("level", ["easy", "medium"])
def test_scripted_bots_bid_the_jokers_as_the_top_trumps(level):
    """The bid itself, through ``act``: seat 0 holds BJ LJ 2D 2S and nine low side cards. Under
    jokers those are the four top trumps, so each bot bids what it bids in the standard deck for
    AS KS QS JS and the same side cards (easy 2: its sure tricks are the top two cards of a suit;
    medium 4), and more than for the same 13 ids read in the standard deck (2H 2C 2D 2S and
    low cards: no sure trick)."""
    from spades_env.cards import parse_cards
    side = "3C 4C 5C 3D 4D 5D 3H 4H 5H"

    def bid(text, rules):
        mine = parse_cards(text, jokers=rules.jokers)
        rest = [c for c in range(52) if c not in mine]
        hands = [mine, rest[0:13], rest[13:26], rest[26:39]]
        g = SpadesGame.from_deal(hands, dealer=3, rules=rules)
        a = make_bot(level, seed=0).act(g.view(0))
        assert 52 <= a <= 65, a
        return a - 52

    jokers = bid("BJ LJ 2D 2S " + side, Rules(jokers=True))
    same_ids = bid("2H 2C 2D 2S " + side, Rules())
    top_spades = bid("AS KS QS JS " + side, Rules())
    assert jokers == top_spades == {"easy": 2, "medium": 4}[level]
    assert same_ids < jokers
