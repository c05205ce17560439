"""Property tests (hypothesis) over random games with random legal moves: invariants of the engine.

Every check below is computed independently of the engine's own bookkeeping: follow suit, the lead
rule and the trick winner are re-derived here from the hands before each move.
"""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from spades_env import (
    NUM_ACTIONS, IllegalActionError, Phase, Rules, SpadesGame, game_outcome,
)
from spades_env.cards import FULL_DECK, NON_SPADES_MASK, SUIT_MASKS

RULES = [
    Rules(loss_threshold=-200, target_score=250),
    Rules(blind_nil=True, loss_threshold=-100, target_score=200),
    Rules(forced_spade_lead_breaks=True, loss_threshold=-150, target_score=150),
    Rules(),
]
SETTINGS = dict(deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow])


def rule_winner(cards, leader):
    """Independent trick winner: highest spade, else highest card of the led suit."""
    spades = [(c, i) for i, c in enumerate(cards) if c // 13 == 3]
    pool = spades if spades else [(c, i) for i, c in enumerate(cards) if c // 13 == cards[0] // 13]
    return (leader + max(pool)[1]) % 4


def check_actions(g):
    """No legal action is refused and every other action id is, leaving the state unchanged."""
    legal = g.legal_actions()
    mask = g.legal_mask()
    assert legal == [a for a in range(NUM_ACTIONS) if (mask >> a) & 1]
    assert legal, "a running game always has a legal action"
    assert list(np.flatnonzero(g.legal_actions_mask())) == legal
    before = g.to_json()
    for a in range(NUM_ACTIONS):
        why = g.explain_illegal(a)
        if a in legal:
            assert why is None
        else:
            assert isinstance(why, str) and why
            try:
                g.apply(a)
            except IllegalActionError as e:
                assert str(e) == why
            else:
                raise AssertionError(f"illegal action {a} was accepted")
    other = (g.current_player + 1) % 4
    try:
        g.apply(legal[0], seat=other)
    except IllegalActionError as e:
        assert "not your turn" in str(e)
    else:
        raise AssertionError("a move by the wrong seat was accepted")
    assert g.to_json() == before
    for a in legal:
        g.clone().apply(a)  # raises if a legal action is refused
    return legal


def play_checked(seed, rules, max_hands, json_every):
    g = SpadesGame(rules, seed)
    rng = np.random.default_rng(seed)
    hand_plays = []
    trick = []
    n_hands_seen = 0
    step = 0
    while not g.is_over and g.hand_number < max_hands:
        legal = check_actions(g)
        a = legal[int(rng.integers(len(legal)))]
        p = g.current_player
        if g.phase == Phase.PLAY:
            hand = g.hands[p]
            if trick:
                led = trick[0][1] // 13
                if hand & SUIT_MASKS[led]:
                    assert a // 13 == led, "must follow suit"
            elif not g.spades_broken and hand & NON_SPADES_MASK:
                assert a // 13 != 3, "spades led before broken"
            trick.append((p, a))
            hand_plays.append(a)
            won_before = list(g.tricks_won)
            hand_before = g.hand_number
        else:
            hand_before = g.hand_number
        g.apply(a)
        step += 1
        if len(trick) == 4:
            w = rule_winner([c for _, c in trick], trick[0][0])
            if g.hand_number == hand_before:
                assert g.tricks_won[w] == won_before[w] + 1
                assert sum(g.tricks_won) == sum(won_before) + 1
                assert g.current_player == w
            else:
                assert g.hand_results[-1].tricks[w] == won_before[w] + 1
            trick = []
        if g.hand_number > n_hands_seen:
            # a hand just ended: every card once, 13 tricks, scores and bags
            n_hands_seen = g.hand_number
            assert len(hand_plays) == 52 and len(set(hand_plays)) == 52
            hand_plays = []
            h = g.hand_results[-1]
            assert sum(h.tricks) == 13
            for t in (0, 1):
                assert g.scores[t] == sum(r.teams[t].hand_points for r in g.hand_results)
                assert 0 <= g.bags[t] <= rules.bag_limit - 1
                assert g.bags[t] == h.teams[t].bags_after
            outcome = game_outcome(g.scores, rules)
            assert g.is_over == (outcome is not None)
            assert g.winner == outcome
            if not g.is_over:
                assert g.phase == Phase.BIDDING and g.trick_number == 0
                assert [x.bit_count() for x in g.hands] == [13] * 4
                assert g.hands[0] | g.hands[1] | g.hands[2] | g.hands[3] == FULL_DECK
        if step % json_every == 0:
            text = g.to_json()
            assert SpadesGame.from_json(text).to_json() == text
    return g


@pytest.mark.slow
@settings(max_examples=120, **SETTINGS)
@given(seed=st.integers(0, 2**31 - 1), r=st.integers(0, len(RULES) - 1),
       json_every=st.integers(1, 40))
def test_random_games_obey_the_rules(seed, r, json_every):
    g = play_checked(seed, RULES[r], max_hands=3, json_every=json_every)
    text = g.to_json()
    assert SpadesGame.from_json(text).to_json() == text


@settings(max_examples=400, **SETTINGS)
@given(seed=st.integers(0, 2**31 - 1), r=st.integers(0, len(RULES) - 1))
def test_full_games_end_exactly_when_the_rule_says(seed, r):
    rules = RULES[r] if RULES[r].loss_threshold is not None else RULES[0]
    g = SpadesGame(rules, seed)
    rng = np.random.default_rng(seed)
    hands = 0
    while not g.is_over and g.hand_number < 60:
        la = g.legal_actions()
        g.apply(la[int(rng.integers(len(la)))])
        if g.hand_number > hands:
            hands = g.hand_number
            assert g.is_over == (game_outcome(g.scores, rules) is not None)
            assert all(0 <= b < rules.bag_limit for b in g.bags)
    for t in (0, 1):
        assert g.scores[t] == sum(h.teams[t].hand_points for h in g.hand_results)
    if g.is_over:
        assert g.winner == game_outcome(g.scores, rules)
        # the finished game's move log replays to the same result
        assert SpadesGame.replay(g.moves, initial=g.initial).to_json() == g.to_json()


@settings(max_examples=60, **SETTINGS)
@given(seed=st.integers(0, 2**31 - 1), r=st.integers(0, len(RULES) - 1),
       cut=st.integers(0, 150))
def test_same_seed_identical_and_json_resume(seed, r, cut):
    def run(resume_at):
        g = SpadesGame(RULES[r], seed)
        rng = np.random.default_rng(seed ^ 0x5EED)
        i = 0
        while not g.is_over and g.hand_number < 2:
            if i == resume_at:
                g = SpadesGame.from_json(g.to_json())
            la = g.legal_actions()
            g.apply(la[int(rng.integers(len(la)))])
            i += 1
        return g
    a, b, c = run(-1), run(-1), run(cut)
    assert a.moves == b.moves == c.moves
    assert a.to_json() == b.to_json() == c.to_json()
