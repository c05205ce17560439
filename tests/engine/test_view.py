"""The player view holds what the seat may know and nothing else (what a bot and an observation
read).

Main check: ``view(seat)`` is unchanged when the other seats' unseen cards are reshuffled among
them consistently with what is public (hand sizes, known voids, cards the seat knows from the
Blind Nil exchange). A control shows the view does change when the seat's own hand changes.
"""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from spades_env import BLIND_NIL_ACTION, LOOK_ACTION, Phase, Rules, SpadesGame, bid_action
from spades_env.cards import FULL_DECK, mask_to_cards

SETTINGS = dict(deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])


def reshuffle_unseen(g, seat, rng, tries=200):
    """Hands with the cards ``seat`` cannot see redealt among the other seats.

    Keeps each seat's card count and the cards ``seat`` knows (own hand, exchange knowledge), and
    gives no seat a card of a suit it is known to be void in. Returns ``None`` if the random
    greedy deal failed ``tries`` times (never expected: the real deal satisfies the constraints).
    """
    v = g.view(seat)
    others = [s for s in range(4) if s != seat]
    free = {s: g.hands[s] & ~v.known_cards[s] for s in others}
    pool = []
    for s in others:
        pool += mask_to_cards(free[s])
    need = {s: free[s].bit_count() for s in others}

    suit_of = g.rules.deck.suit_of  # the deck's suits: under jokers a joker is a spade

    def allowed(card, s):
        return not (v.voids[s] >> suit_of[card]) & 1

    for _ in range(tries):
        order = list(pool)
        rng.shuffle(order)
        order.sort(key=lambda c: sum(allowed(c, s) for s in others))  # most constrained first
        left = dict(need)
        new = {s: 0 for s in others}
        ok = True
        for card in order:
            cands = [s for s in others if left[s] and allowed(card, s)]
            if not cands:
                ok = False
                break
            s = cands[int(rng.integers(len(cands)))]
            new[s] |= 1 << card
            left[s] -= 1
        if ok:
            hands = list(g.hands)
            for s in others:
                hands[s] = new[s] | (g.hands[s] & v.known_cards[s])
            return hands
    return None


def random_state(seed, rules, steps):
    g = SpadesGame(rules, seed)
    rng = np.random.default_rng(seed)
    for _ in range(steps):
        if g.is_over:
            break
        la = g.legal_actions()
        g.apply(la[int(rng.integers(len(la)))])
    return g


@pytest.mark.slow
@settings(max_examples=500, **SETTINGS)
@given(seed=st.integers(0, 2**31 - 1), steps=st.integers(0, 130), blind=st.booleans())
def test_view_unchanged_when_unseen_cards_reshuffled(seed, steps, blind):
    rules = Rules(blind_nil=blind, loss_threshold=-200)
    g = random_state(seed, rules, steps)
    rng = np.random.default_rng(seed + 7)
    changed = 0
    for seat in range(4):
        v = g.view(seat)
        for _ in range(3):
            hands = reshuffle_unseen(g, seat, rng)
            assert hands is not None
            assert hands[0] | hands[1] | hands[2] | hands[3] | sum(g.played) == FULL_DECK
            k = g.clone()
            k.hands = hands
            changed += hands != g.hands
            assert k.view(seat) == v
            assert k.view(seat).info_key() == v.info_key()
    if not g.is_over and g.phase == Phase.PLAY and g.trick_number < 10:
        assert changed > 0  # the test really moved cards


def test_view_changes_with_own_hand_control():
    g = random_state(3, Rules(), 20)
    seat = g.current_player
    other = (seat + 1) % 4
    k = g.clone()
    a = k.hands[seat] & -k.hands[seat]
    b = k.hands[other] & -k.hands[other]
    k.hands[seat] ^= a | b
    k.hands[other] ^= a | b
    assert k.view(seat) != g.view(seat)
    assert k.view(other) != g.view(other)
    assert k.view((seat + 2) % 4) == g.view((seat + 2) % 4)


def test_hand_hidden_before_looking():
    g = SpadesGame(Rules(blind_nil=True), seed=4)
    first = g.current_player
    views = [g.view(s) for s in range(4)]
    assert all(v.hand == 0 and not v.looked for v in views)
    assert views[first].legal_actions == (BLIND_NIL_ACTION, LOOK_ACTION)
    # a seat that has not looked cannot tell any deal from another: reshuffle all 52 cards
    rng = np.random.default_rng(0)
    perm = rng.permutation(52).tolist()
    k = g.clone()
    k.hands = [sum(1 << c for c in perm[13 * s:13 * s + 13]) for s in range(4)]
    assert [k.view(s) for s in range(4)] == views
    g.apply(LOOK_ACTION)
    assert g.view(first).hand == g.hands[first] and g.view(first).looked
    assert g.view((first + 1) % 4).hand == 0
    g.apply(bid_action(4))
    assert g.view(first).bids[first] == 4 and g.view((first + 2) % 4).bids[first] == 4


def test_view_contents_public_history():
    g = random_state(5, Rules(), 4 + 6)  # bids and 6 cards
    assert g.phase == Phase.PLAY
    for seat in range(4):
        v = g.view(seat)
        assert v.seat == seat and v.hand == g.hands[seat]
        assert v.bids == tuple(g.bids) and v.tricks_won == tuple(g.tricks_won)
        assert v.play_history == tuple(g.plays) and len(v.play_history) == 6
        assert v.current_trick == tuple(g.current_trick) and len(v.current_trick) == 2
        assert v.hand_sizes == tuple(h.bit_count() for h in g.hands)
        assert v.unseen == FULL_DECK & ~v.hand & ~(v.played[0] | v.played[1] | v.played[2]
                                                   | v.played[3])
        assert v.legal_actions == (tuple(g.legal_actions()) if seat == g.current_player else ())
        assert v.known_cards == (0, 0, 0, 0)
        assert v.led_suit == g.led_suit


def test_voids_recorded_when_failing_to_follow():
    from tests.engine.test_rules_play import DEAL_A
    from spades_env import parse_card
    g = SpadesGame.from_deal(DEAL_A, dealer=3, seed=0)
    for _ in range(4):
        g.apply(bid_action(3))
    for t in ("AH", "JH", "8S", "2H"):
        g.apply(parse_card(t))
    for s in range(4):
        assert g.view(s).voids == (0, 0, 1 << 2, 0)  # seat 2 shown void in hearts


@pytest.mark.parametrize("rules", [
    Rules(nil_pass=2), Rules(nil_pass=3, blind_nil=True), Rules(mirror=True), Rules(whiz=True),
    Rules(suicide=True, min_team_bid=4), Rules(min_team_bid=4, bid_total_not_13=True),
    Rules(jokers=True), Rules(jokers=True, nil_pass=2, mirror=True)],
    ids=["nil_pass", "nil_pass+blind", "mirror", "whiz", "suicide", "board-not13", "jokers",
         "jokers+nil_pass+mirror"])
@pytest.mark.parametrize("seed", range(12))
def test_view_under_house_rules_unchanged_when_unseen_cards_reshuffled(rules, seed):
    """Each house rule (docs/rules.md, House rules): the view still depends only on what the seat
    may know; with Nil passing that includes the cards its partner passed it and the cards it
    passed, and nothing of the other team's exchange."""
    steps = 4 + seed * 5
    g = random_state(seed, rules, steps)
    rng = np.random.default_rng(seed + 11)
    for seat in range(4):
        v = g.view(seat)
        for _ in range(2):
            hands = reshuffle_unseen(g, seat, rng)
            assert hands is not None
            k = g.clone()
            k.hands = hands
            assert k.view(seat) == v


def test_nil_pass_cards_are_seen_by_the_two_partners_only():
    """Nil passing (``nil_pass=2``): seat 0 bids Nil, its partner (seat 2) passes 2 cards, seat 0
    passes 2 back. Seat 0 knows the 2 it gave (while seat 2 holds them), seat 2 the 2 it gave;
    seats 1 and 3 know none, and their views do not change when those cards are swapped."""
    from spades_env.cards import cards_to_mask
    hands = [cards_to_mask(range(13 * k, 13 * k + 13)) for k in range(4)]  # clubs..spades
    g = SpadesGame.from_deal(hands, dealer=3, rules=Rules(nil_pass=2))
    for b in (0, 3, 4, 3):  # seat 0 Nil, then 3, 4, 3
        g.apply(bid_action(b))
    assert g.phase == Phase.EXCHANGE and g.current_player == 2
    g.apply(26)  # 2H from seat 2
    g.apply(27)  # 3H
    assert g.current_player == 0
    g.apply(12)  # AC back
    g.apply(11)  # KC
    assert g.phase == Phase.PLAY
    v0, v2, v1 = g.view(0), g.view(2), g.view(1)
    assert v0.known_cards == (0, 0, (1 << 12) | (1 << 11), 0)
    assert v2.known_cards == ((1 << 26) | (1 << 27), 0, 0, 0)
    assert v1.known_cards == (0, 0, 0, 0) and g.view(3).known_cards == (0, 0, 0, 0)
    assert v1.exchange == () and len(v0.exchange) == 4 == len(v2.exchange)
    k = g.clone()  # swap a passed card between seats 0 and 2 with an unpassed one: 1 and 3 blind
    k.hands[0] ^= (1 << 26) | (1 << 28)  # 2H (passed to 0) for 4H (still 2's)
    k.hands[2] ^= (1 << 26) | (1 << 28)
    assert k.view(1) == v1 and k.view(3) == g.view(3)
    assert k.view(0) != v0


def test_jokers_voids_are_the_decks_and_public():
    """docs/rules.md, Jokers (deal J, worked example J7): seat 1 plays the 2D on the third
    diamond lead; the 2D is a spade, so every seat's view shows seat 1 void in diamonds (and not
    in spades), as the reference ``voids_of_plays`` with the jokers' deck says, while in the
    standard deck the same ids would show nothing; the view still depends only on what each seat
    may know."""
    from spades_env import rules as R
    from spades_env.cards import parse_cards
    hands = ["BJ AD KD QD 3C 4C 5C 6C 7C 8C 9C 10C JC", "2D 3D 4D 3H 4H 5H 6H 7H 8H 9H 10H JH QH",
             "5D 6D 7D 8D JD QC KC AC KH AH 3S 4S 5S", "9D 10D LJ 2S AS KS QS JS 10S 9S 8S 7S 6S"]
    rules = Rules(jokers=True)
    g = SpadesGame.from_deal(hands, dealer=3, rules=rules)
    for _ in range(4):
        g.apply(bid_action(3))
    for c in parse_cards("AD 3D 5D 9D KD 4D 6D 10D QD 2D", jokers=True):
        g.apply(c)
    for seat in range(4):
        assert g.view(seat).known_voids[1] == 0b0010
    plays = g.view(2).play_history
    assert R.voids_of_plays(plays, False, False, R.JOKERS_DECK)[1] == 0b0010
    assert R.voids_of_plays(plays, False, False, R.STANDARD_DECK)[1] == 0
    rng = np.random.default_rng(3)
    for seat in range(4):
        v = g.view(seat)
        new = reshuffle_unseen(g, seat, rng)
        k = g.clone()
        k.hands = new
        assert k.view(seat) == v
