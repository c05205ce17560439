"""Tests of the scripted bots ``easy`` and ``medium`` and the card-counting helpers."""

from __future__ import annotations

import time

import numpy as np
import pytest

from spades_env import Phase, Rules, SpadesGame, parse_card, parse_cards
from spades_env.bots import make_bot
from spades_env.bots.heuristic import (
    EasyBot, MediumBot, easy_trick_count, medium_nil_safe, medium_trick_estimate,
)
from spades_env.bots.knowledge import (
    can_beat, current_winner, highest_outstanding, is_boss, possible_holdings,
    suit_remaining, unseen_mask, void_seats,
)
from spades_env.cards import BID_OFFSET, BLIND_NIL_ACTION, LOOK_ACTION, cards_to_mask
from spades_env.rules import card_beats

C = parse_card


def _mask(text: str) -> int:
    return cards_to_mask(parse_cards(text))


def _game(hands, dealer, moves, rules=None):
    g = SpadesGame.from_deal([parse_cards(h) for h in hands], dealer, rules=rules, seed=0)
    for m in moves:
        g.apply(C(m) if isinstance(m, str) else m)
    return g


def _bid(b):
    return BID_OFFSET + b


# --------------------------------------------------------------------------- legality, seeds
def _play_games(names, rules, n_games, hand_cap, seed):
    """Play games with bots in every seat; assert each action is legal. Returns phases seen and
    the move logs."""
    phases = set()
    logs = []
    for gi in range(n_games):
        g = SpadesGame(rules, seed=seed + gi)
        bots = [make_bot(names[(gi + s) % len(names)], seed=seed * 100 + gi * 4 + s)
                for s in range(4)]
        while not g.is_over and g.hand_number < hand_cap:
            p = g.current_player
            v = g.view(p)
            a = bots[p].act(v)
            assert a in v.legal_actions, (names, p, a, v.legal_actions)
            phases.add((Phase(v.phase), a == BLIND_NIL_ACTION, a == LOOK_ACTION))
            g.apply(a)
        logs.append(list(g.moves))
    return phases, logs


def test_bots_only_return_legal_actions_standard_rules():
    phases, _ = _play_games(["easy", "medium", "random", "medium", "easy"], Rules(), 40, 30, 1)
    assert (Phase.PLAY, False, False) in phases and (Phase.BIDDING, False, False) in phases


def test_bots_only_return_legal_actions_blind_nil_rules():
    # random opponents drive medium's team far behind, so medium bids Blind Nil and the
    # exchange phase is played by easy and medium too
    rules = Rules(blind_nil=True, loss_threshold=-2000)
    phases, _ = _play_games(["medium", "random", "easy", "random"], rules, 30, 25, 7)
    assert (Phase.BIDDING, False, True) in phases  # looked
    assert (Phase.BIDDING, True, False) in phases  # somebody bid Blind Nil
    assert any(p[0] == Phase.EXCHANGE for p in phases)


def test_medium_and_easy_play_exchange_from_both_sides():
    """Scripted Blind Nil: seat 1 (medium) bids Blind Nil; partner seat 3 (easy) passes its lowest
    cards, seat 1 passes back its highest ones."""
    rules = Rules(blind_nil=True)
    g = SpadesGame(rules, seed=5)
    g.scores = [300, 0]  # team 1 trails by 300: medium's comeback rule bids Blind Nil
    bots = {s: (MediumBot(seed=s) if s == 1 else EasyBot(seed=s)) for s in range(4)}
    passed = {1: [], 3: []}
    while g.phase != Phase.PLAY:
        p = g.current_player
        v = g.view(p)
        a = bots[p].act(v)
        assert a in v.legal_actions
        if v.phase == Phase.BIDDING and p == 1:
            assert a == BLIND_NIL_ACTION
        if v.phase == Phase.EXCHANGE:
            passed[p].append((a, v.hand))
        g.apply(a)
    assert len(passed[3]) == 3 and len(passed[1]) == 3
    for card, hand in passed[3]:  # partner: a lowest-rank non-spade card of its hand
        non_spades = [c for c in range(39) if hand >> c & 1]
        assert card % 13 == min(c % 13 for c in non_spades) and card < 39
    for card, hand in passed[1]:  # Blind Nil bidder: a highest card (a spade 10+ first)
        cards = [c for c in range(52) if hand >> c & 1]
        high_spades = [c for c in cards if c >= 39 + 8]
        if high_spades:
            assert card == max(high_spades)
        else:
            assert card % 13 == max(c % 13 for c in cards)


def test_same_seed_same_moves():
    _, a = _play_games(["easy", "medium", "easy", "medium"], Rules(), 3, 6, 11)
    _, b = _play_games(["easy", "medium", "easy", "medium"], Rules(), 3, 6, 11)
    _, c = _play_games(["easy", "medium", "easy", "medium"], Rules(), 3, 6, 12)
    assert a == b
    assert a != c


def test_easy_is_careless_only_through_its_own_rng():
    never = EasyBot(seed=1, careless=0.0)
    g = SpadesGame(seed=3)
    while g.phase == Phase.BIDDING:
        g.apply(_bid(3))
    v = g.view(g.current_player)
    assert len({never.act(v) for _ in range(20)}) == 1  # habit only: the same card each time
    always = EasyBot(seed=1, careless=1.0)
    assert len({always.act(v) for _ in range(60)}) > 1
    with pytest.raises(ValueError, match="careless"):
        EasyBot(careless=1.5)


# --------------------------------------------------------------------------- hidden information
def _swap_unseen_same_suit(g: SpadesGame, deal: list, seat: int, rng) -> list | None:
    """``deal`` (the hand's initial deal) with two cards of one suit swapped between two other
    seats; both cards still unplayed in ``g``. Same suit keeps every earlier move legal and every
    public fact equal."""
    hands = list(deal)
    others = [s for s in range(4) if s != seat]
    for _ in range(50):
        a, b = rng.choice(others, size=2, replace=False)
        ca = [c for c in range(52) if g.hands[a] >> c & 1]
        if not ca:
            return None
        c1 = int(rng.choice(ca))
        cb = [c for c in range(52) if g.hands[b] >> c & 1 and c // 13 == c1 // 13]
        if cb:
            c2 = int(rng.choice(cb))
            hands[a] = hands[a] & ~(1 << c1) | (1 << c2)
            hands[b] = hands[b] & ~(1 << c2) | (1 << c1)
            return hands
    return None


@pytest.mark.parametrize("name", ["easy", "medium"])
def test_decision_does_not_depend_on_hidden_cards(name):
    rng = np.random.default_rng(0)
    checked = 0
    for gi in range(6):
        base = SpadesGame(seed=100 + gi)
        deal = list(base.hands)
        players = [make_bot("medium", seed=s) for s in range(4)]
        g = SpadesGame.from_deal(deal, base.dealer, seed=1)
        while g.hand_number == 0:
            p = g.current_player
            alt_hands = _swap_unseen_same_suit(g, deal, p, rng)
            if alt_hands is not None:
                alt = SpadesGame.from_deal(alt_hands, base.dealer, seed=1)
                for m in g.moves:
                    alt.apply(m)
                assert alt.hands[p] == g.hands[p] and alt.hands != g.hands
                v1, v2 = g.view(p), alt.view(p)
                assert v1 == v2
                a1 = make_bot(name, seed=9).act(v1)
                a2 = make_bot(name, seed=9).act(v2)
                assert a1 == a2
                checked += 1
            g.apply(players[p].act(g.view(p)))
    assert checked > 200


# --------------------------------------------------------------------------- hand-built positions
# Deal A (dealer 3, seat 0 leads). Seat 0 wins the first two tricks with AC, KC, then loses 2D
# to seat 1's AD; seat 1 leads 8H, seat 2 plays 2H, seat 3 plays 9H; seat 0 is last to play
# holding KH 10H 5H 3H.
DEAL_A = [
    "AC KC 2D KH 10H 5H 3H 3S 4S 5S 6S 7S 8S",
    "2C 3C AD 8H 8C 9C 5D 6D 7D 4H 2S 9S 10S",
    "4C 5C 3D 2H 10C JC 8D 9D 10D 6H 7H JS QS",
    "6C 7C 4D 9H QC JD QD KD JH QH AH KS AS",
]
PLAY_A = ["AC", "2C", "4C", "6C", "KC", "3C", "5C", "7C", "2D", "AD", "3D", "4D", "8H", "2H", "9H"]


def test_medium_ducks_under_when_contract_is_safe():
    # bids 1 + 1: the two club tricks already make the contract; opponents bid 3 + 3 (not short)
    g = _game(DEAL_A, 3, [_bid(1), _bid(3), _bid(1), _bid(3)] + PLAY_A)
    v = g.view(0)
    assert v.current_player == 0 and v.tricks_won == (2, 1, 0, 0)
    assert MediumBot().act(v) == C("5H")  # highest heart under the 9H: no bag, sheds a high card
    assert MediumBot(duck=False).act(v) == C("10H")  # without ducking it takes a bag


def test_medium_takes_the_trick_while_contract_needs_it():
    # same cards, bids 4 + 2: the team still needs 4 tricks, so it wins as cheaply as it can
    g = _game(DEAL_A, 3, [_bid(4), _bid(3), _bid(2), _bid(3)] + PLAY_A)
    assert MediumBot().act(g.view(0)) == C("10H")


def test_medium_failed_nil_helps_the_partner_only_when_its_tricks_count():
    # seat 0 bid Nil and has taken 2 tricks (failed); seat 2 bid 4. Standard: a failed Nil's
    # tricks are bags only, so it ducks; with failed_nil_tricks_count they make the partner's 4
    # (2 still needed), so it wins the trick as cheaply as it can
    bids = [_bid(0), _bid(3), _bid(4), _bid(3)]
    for rules, card in ((Rules(), "5H"), (Rules(failed_nil_tricks_count=True), "10H")):
        g = _game(DEAL_A, 3, bids + PLAY_A, rules)
        assert g.view(0).tricks_won == (2, 1, 0, 0)
        assert MediumBot().act(g.view(0)) == C(card), rules


def test_bots_play_legal_games_with_failed_nil_tricks_count():
    _play_games(["easy", "medium", "hard"], Rules(failed_nil_tricks_count=True), 2, 1, seed=5)


def test_medium_overtakes_partners_winning_card_to_cover_nil():
    hands = [
        "AC 10C 4C 2D 3D 4D 5D 6D 7D 8D 9D 10D JD",
        "2C QD KD AD 2H 3H 4H 5H 6H 7H 8H 9H 10H",
        "9C KC 5C 6C 7C JH QH KH AH 2S 3S 4S 5S",
        "3C 8C JC QC 6S 7S 8S 9S 10S JS QS KS AS",
    ]
    # dealer 0: seat 1 leads; bids 3, Nil (partner of seat 0), 3, 4
    g = _game(hands, 0, [_bid(3), _bid(0), _bid(3), _bid(4), "2C", "9C", "3C"])
    v = g.view(0)
    assert v.current_trick == ((1, C("2C")), (2, C("9C")), (3, C("3C")))
    # partner's 9C is winning: cover it with the cheapest club above it (not the 4C)
    assert MediumBot().act(v) == C("10C")
    assert MediumBot(cover_nil=False).act(v) == C("4C")  # without the habit: partner wins, go low


def test_medium_plays_high_before_nil_partner():
    hands = [
        "KH 7H 2H 2C 3C 4C 5C 6C 7C 8C 9C 10C JC",
        "AH 3H 4H 6H QC KC AC 2D 3D 4D 5D 6D 7D",
        "8H 9H 10H JH QH 8D 9D 10D JD QD KD AD 2S",
        "5H 3S 4S 5S 6S 7S 8S 9S 10S JS QS KS AS",
    ]
    # dealer 2: seat 3 leads; bids 3 (seat 3), 4 (seat 0), 3 (seat 1), Nil (seat 2)
    g = _game(hands, 2, [_bid(3), _bid(4), _bid(3), _bid(0), "5H"])
    v = g.view(0)
    # second hand would normally play low (2H); with the partner's Nil at stake it plays high
    assert MediumBot().act(v) == C("KH")


def test_medium_attacks_opponent_nil_leading_low_in_a_suit_they_hold():
    hands = [
        "AD 2D 3H 9H AC KC QC 3S 4S 10S JS QS KS",
        "2C 4C 5C 6C 7C 2H 4H 5H 6H 7H 2S 5S 6S",
        "3D 5D 6D 7D 8D 9D 8C 9C 10C 8H 10H 7S 8S",
        "3C JC 4D 10D JD QD KD JH QH KH AH 9S AS",
    ]
    # dealer 3: seat 0 leads; bids 3, Nil (seat 1), 3, 4; trick 1: AD, seat 1 shows a diamond
    # void (2C), 3D, 4D; seat 0 leads again
    g = _game(hands, 3, [_bid(3), _bid(0), _bid(3), _bid(4), "AD", "2C", "3D", "4D"])
    v = g.view(0)
    assert v.current_player == 0 and v.voids[1] == 1 << 1
    # not the 2D (the Nil bidder is out of diamonds) and not the AC cash: the lowest heart
    assert MediumBot().act(v) == C("3H")
    # without the habit it cashes a sure trick: the lowest of its top clubs A K Q
    assert MediumBot(attack_nil=False).act(v) == C("QC")


def test_medium_plays_under_opponent_nil_card():
    # dealer 3: seat 0 leads. Bids: seat 0: 3, seat 1: Nil, seat 2: 3, seat 3: 4.
    # Trick: seat 0 (easy play) leads 2H? We want seat 3... use seat 2 as the bot:
    # seat 0 leads 3H, seat 1 (Nil) plays 9H, seat 2 (bot) holds 10H 8H 2H: never overtake the
    # Nil bidder's 9H, play the highest heart under it (8H).
    hands = [
        "3H 2C 3C 4C 5C 6C 7C 8C 9C 10C JC QC KC",
        "9H AC 2D 3D 4D 5D 6D 7D 8D 9D 10D JD QD",
        "10H 8H 2H KD AD 2S 3S 4S 5S 6S 7S 8S 9S",
        "4H 5H 6H 7H JH QH KH AH 10S JS QS KS AS",
    ]
    g = _game(hands, 3, [_bid(3), _bid(0), _bid(3), _bid(4), "3H", "9H"])
    v = g.view(2)
    assert v.current_player == 2
    assert MediumBot().act(v) == C("8H")


def test_medium_nil_bidder_plays_highest_losing_card():
    hands = [
        "3H 2C 3C 4C 5C 6C 7C 8C 9C 10C JC QC KC",
        "KH 10H 4H AC 2D 3D 4D 5D 6D 7D 8D 9D 10D",
        "9H JD QD KD AD 2S 3S 4S 5S 6S 7S 8S 9S",
        "2H 5H 6H 7H 8H JH QH AH 10S JS QS KS AS",
    ]
    # dealer 3: seat 0 leads 3H, seat 1 (Nil) to play with KH 10H 4H: the 4H stays under 3H? no:
    # 4H beats 3H. Every heart wins, seat 1 is not last: play the lowest (4H) hoping to be
    # overtaken.
    g = _game(hands, 3, [_bid(3), _bid(0), _bid(3), _bid(4), "3H"])
    assert MediumBot().act(g.view(1)) == C("4H")
    # seat 2 plays 9H on top; seat 3 last: not a Nil bidder -> plays normally; here check seat 1's
    # choice when the 9H is already on the trick by giving seat 2 the lead instead
    g2 = _game(hands, 1, [_bid(3), _bid(4), _bid(3), _bid(0), "9H", "2H", "3H"])
    # dealer 1: seat 2 leads 9H, seat 3 plays 2H, seat 0 plays 3H, seat 1 (Nil): highest under 9H
    assert MediumBot().act(g2.view(1)) == C("4H")


# --------------------------------------------------------------------------- bidding
def test_trick_estimates_of_hand_built_hands():
    # A K of spades + 3 low spades: 2 honours, 5 spades -> no long trick; side aces 2 -> 4 tricks
    hand = _mask("AS KS 4S 3S 2S AH 5H 4H AD 6D 5D 3C 2C")
    assert medium_trick_estimate(hand) == pytest.approx(4.0)
    assert easy_trick_count(hand) == 5  # AS KS AH AD + one spade beyond four
    # AH (1) and KH behind it in a 5-card suit (0.6), AD (1), and a club void with 3 spare low
    # spades: 2 ruffs at 0.8
    hand = _mask("4S 3S 2S AH KH 5H 4H 3H AD 6D 5D 4D 3D")
    assert medium_trick_estimate(hand) == pytest.approx(1 + 0.6 + 1 + 2 * 0.8)
    assert easy_trick_count(hand) == 3


def test_medium_bids_nil_only_with_a_safe_hand():
    safe = _mask("2S 5S 2H 3H 4H 9H 2D 3D 6D 10D 2C 4C 8C")
    assert medium_nil_safe(safe)
    assert not medium_nil_safe(_mask("2S 5S 2H 3H 4H 9H 2D 3D 6D 10D 2C 4C AC"))  # an ace
    assert not medium_nil_safe(_mask("2S QS 2H 3H 4H 9H 2D 3D 6D 10D 2C 4C 8C"))  # high spade
    assert not medium_nil_safe(_mask("2S 5S 2H 3H 4H 9H 2D 3D 6D 10D 2C 4C KC"))  # bare king
    assert not medium_nil_safe(_mask("2S 5S 6S 7S 2H 3H 9H 2D 3D 6D 2C 4C 8C"))  # 4 spades
    other = ["AS KS QS JS 10S 9S 8S 7S 6S 4S 3S AH KH",
             "QH JH 10H 8H 7H 6H 5H AD KD QD JD 9D 8D",
             "7D 5D 4D AC KC QC JC 10C 9C 7C 6C 5C 3C"]
    deal = [" ".join(["2S 5S 2H 3H 4H 9H 2D 3D 6D 10D 2C 4C 8C"])] + other
    # dealer 3: seat 0 bids first -> Nil
    g = _game(deal, 3, [])
    assert MediumBot().act(g.view(0)) == _bid(0)
    # partner already bid Nil -> no second Nil
    g = _game([other[0], other[1], deal[0], other[2]], 3, [_bid(0), _bid(3)])
    assert g.current_player == 2
    assert MediumBot().act(g.view(2)) != _bid(0)
    assert EasyBot().act(g.view(2)) != _bid(0)


def test_medium_bids_honestly_after_partner_bid_high():
    # AS KS (2), AH KH (2), guarded KD (0.75): 4.75 rounds to 5; behind a partner's 5 it is 4
    hand = "AS KS 4S 3S 2S AH KH 4H KD 6D 5D 3C 2C"
    assert medium_trick_estimate(_mask(hand)) == pytest.approx(4.75)
    rest = [c for c in range(52) if not _mask(hand) >> c & 1]
    others = [rest[0:13], rest[13:26], rest[26:39]]
    deal = [parse_cards(hand)] + others
    g = SpadesGame.from_deal([deal[2], deal[3], deal[0], deal[1]], 3, seed=0)  # bot at seat 2
    g.apply(_bid(5))
    g.apply(_bid(2))
    assert MediumBot().act(g.view(2)) == _bid(4)  # honest: no hopeful round-up
    g2 = SpadesGame.from_deal([deal[2], deal[3], deal[0], deal[1]], 3, seed=0)
    g2.apply(_bid(2))
    g2.apply(_bid(2))
    assert MediumBot().act(g2.view(2)) == _bid(5)


def test_blind_nil_decision():
    rules = Rules(blind_nil=True)
    g = SpadesGame(rules, seed=2)
    p = g.current_player
    assert g.view(p).legal_actions == (BLIND_NIL_ACTION, LOOK_ACTION)
    assert EasyBot().act(g.view(p)) == LOOK_ACTION
    assert MediumBot().act(g.view(p)) == LOOK_ACTION  # level scores: look
    g.scores = [0, 0]
    g.scores[(p + 1) & 1] = 250
    assert MediumBot().act(g.view(p)) == BLIND_NIL_ACTION  # trails by 250
    assert MediumBot(blind_nil_deficit=None).act(g.view(p)) == LOOK_ACTION


# --------------------------------------------------------------------------- knowledge helpers
def test_knowledge_helpers_on_a_played_position():
    g = _game(DEAL_A, 3, [_bid(1), _bid(3), _bid(1), _bid(3)] + PLAY_A)
    v = g.view(0)
    # clubs played: AC KC 2C 3C 4C 5C 6C 7C; seat 0 holds none -> 5 clubs unseen
    assert suit_remaining(v, 0) == 5
    assert highest_outstanding(v, 0) == C("QC")
    assert highest_outstanding(v, 2) == C("AH")
    assert not is_boss(v, C("KH"))  # AH, QH, JH are unseen
    assert is_boss(v, C("KD"))  # the AD was played in trick 3
    assert is_boss(v, C("QC"))  # every higher club is played
    assert void_seats(v, 0) == [0]  # only seat 0 is known out of clubs (it holds none)
    unseen = unseen_mask(v)
    assert unseen.bit_count() == 52 - 10 - 15  # 10 cards in hand, 15 played
    poss = possible_holdings(v)
    assert poss[0] == g.hands[0]
    for s in (1, 2, 3):
        assert poss[s] & g.hands[s] == g.hands[s]  # the true hand is always possible
    assert current_winner(v.current_trick) == (3, C("9H"))
    assert card_beats(C("10H"), C("9H")) and not card_beats(C("5H"), C("9H"))
    assert card_beats(C("2S"), C("AH")) and not card_beats(C("AD"), C("2H"))
    # a seat that may still hold hearts is assumed to follow: it can beat 10H only with a higher one
    assert can_beat(_mask("JH 2S"), C("10H"), 2) and not can_beat(_mask("9H 2S"), C("10H"), 2)
    assert can_beat(_mask("2S 3C"), C("AH"), 2)  # void in hearts with a spade: trumps
    assert not can_beat(_mask("2S 3H"), C("AH"), 2)
    assert can_beat(_mask("KS"), C("QS"), 2) and not can_beat(_mask("KS 2H"), C("QS"), 2)


def test_void_inference_from_failing_to_follow():
    g = _game(
        ["AD 2D 3H 9H AC KC QC 3S 4S 10S JS QS KS",
         "2C 4C 5C 6C 7C 2H 4H 5H 6H 7H 2S 5S 6S",
         "3D 5D 6D 7D 8D 9D 8C 9C 10C 8H 10H 7S 8S",
         "3C JC 4D 10D JD QD KD JH QH KH AH 9S AS"],
        3, [_bid(3), _bid(0), _bid(3), _bid(4), "AD", "2C"])
    v = g.view(2)
    assert 1 in void_seats(v, 1)
    assert not possible_holdings(v)[1] & (0x1FFF << 13)
    with pytest.raises(ValueError):
        suit_remaining(v, 4)
    with pytest.raises(ValueError):
        is_boss(v, 52)


# --------------------------------------------------------------------------- speed
def test_medium_decision_median_under_1ms():
    g = SpadesGame(Rules(), seed=21)
    bots = [MediumBot(seed=s) for s in range(4)]
    times = []
    while g.hand_number < 4 and not g.is_over:
        p = g.current_player
        v = g.view(p)
        t0 = time.perf_counter()
        a = bots[p].act(v)
        times.append(time.perf_counter() - t0)
        g.apply(a)
    assert len(times) > 200
    assert float(np.median(times)) < 1e-3


def test_possible_holdings_use_blind_nil_exchange_cards():
    rules = Rules(blind_nil=True)
    g = SpadesGame(rules, seed=5)
    g.scores = [300, 0]  # seat 1 (medium) trails by 300 and bids Blind Nil
    bots = {s: (MediumBot(seed=s) if s == 1 else EasyBot(seed=s)) for s in range(4)}
    passed_to_1 = 0
    passed_to_3 = 0
    while g.phase != Phase.PLAY:
        p = g.current_player
        a = bots[p].act(g.view(p))
        if g.phase == Phase.EXCHANGE:
            if p == 3:
                passed_to_1 |= 1 << a
            else:
                passed_to_3 |= 1 << a
        g.apply(a)
    assert passed_to_1.bit_count() == 3 and passed_to_3.bit_count() == 3
    v3 = g.view(3)
    poss = possible_holdings(v3)
    assert v3.known_cards[1] == passed_to_1 & g.hands[1]  # passed and not passed back
    assert poss[1] & passed_to_1 & g.hands[1] == passed_to_1 & g.hands[1]
    for s in (0, 2):  # the opponents cannot hold a card seat 3 passed to its partner
        assert not poss[s] & passed_to_1 & g.hands[1]
    v0 = g.view(0)  # an opponent knows nothing of the exchange
    assert v0.known_cards == (0, 0, 0, 0)
