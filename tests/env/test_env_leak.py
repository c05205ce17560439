"""No hidden information in observations.

For an observer seat ``s`` at move ``T`` of a hand, the other seats' unseen cards are dealt again
at random, consistently with everything public (cards played, voids shown by failing to follow
suit, forced spade leads) and with what ``s`` saw in a Blind Nil exchange. The same moves are then
replayed from the new deal in a fresh env: ``s``'s observation (vector, history and mask) must be
identical at every step up to ``T``. A seat whose cards changed must see a different vector (so
the comparison can fail).
"""

from __future__ import annotations

import numpy as np
import pytest

from spades_env import Rules, SpadesGame, spades_v1
from spades_env.cards import BLIND_NIL_ACTION, FULL_DECK, NON_SPADES_MASK, SUIT_MASKS, mask_to_cards

RULES = Rules(blind_nil=True, target_score=10000)


def _public_voids(game: SpadesGame) -> list[int]:
    """Suit masks by seat that public play rules out: the engine's voids plus, for a spade led
    before spades were broken, all three other suits (the leader held only spades)."""
    voids = list(game.voids)
    broken = False
    for i, (seat, card) in enumerate(game.plays):
        if i % 4 == 0 and card // 13 == 3 and not broken:
            voids[seat] |= 0b0111
        if i % 4 and card // 13 == 3 and game.plays[i - i % 4][1] // 13 != 3:
            broken = True
        if i % 4 == 0 and card // 13 == 3 and game.rules.forced_spade_lead_breaks:
            broken = True
    return voids


def _reshuffle(game: SpadesGame, s: int, rng) -> list[int] | None:
    """Holdings by seat after dealing the cards ``s`` cannot see again (None if stuck)."""
    fixed = 0
    for frm, to, c in game.exchanges:  # keep every exchanged card where it is
        fixed |= 1 << c
    voids = _public_voids(game)
    holdings = list(game.hands)
    pool = []
    need = [0, 0, 0, 0]
    for o in range(4):
        if o == s:
            continue
        free = holdings[o] & ~fixed
        pool += mask_to_cards(free)
        need[o] = free.bit_count()
        holdings[o] &= fixed
    for _ in range(200):
        order = rng.permutation(pool).tolist()
        left = list(need)
        out = list(holdings)
        ok = True
        for c in order:
            cands = [o for o in range(4) if left[o] and not (voids[o] >> (c // 13)) & 1]
            if not cands:
                ok = False
                break
            o = cands[int(rng.integers(len(cands)))]
            out[o] |= 1 << c
            left[o] -= 1
        if ok:
            return out
    return None


def _initial_deal(game: SpadesGame, holdings: list[int]) -> list[int]:
    deal = [holdings[o] | game.played[o] for o in range(4)]
    for frm, to, c in reversed(game.exchanges):
        deal[to] &= ~(1 << c)
        deal[frm] |= 1 << c
    assert deal[0] | deal[1] | deal[2] | deal[3] == FULL_DECK
    return deal


def _hand_start(seed: int, hand: int, rng) -> SpadesGame:
    g = SpadesGame(RULES, seed=seed)
    while g.hand_number < hand:
        legal = g.legal_actions()
        a = BLIND_NIL_ACTION if BLIND_NIL_ACTION in legal and rng.random() < 0.3 \
            else legal[int(rng.integers(len(legal)))]
        g.apply(a)
    return g.clone()


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_reshuffled_unseen_cards_leave_observations_unchanged(seed):
    rng = np.random.default_rng(seed)
    worlds_changed = 0
    detected = 0
    for hand in (0, 1, 2):
        start = _hand_start(seed, hand, rng)
        env_a = spades_v1.raw_env(rules=RULES, history=True)
        env_a.reset(options={"game": start})
        record = [{a: env_a.observe(a) for a in env_a.possible_agents}]
        actions = []
        T = int(rng.integers(8, 48))
        while len(actions) < T:
            legal = np.flatnonzero(env_a.observe(env_a.agent_selection)["action_mask"])
            a = BLIND_NIL_ACTION if BLIND_NIL_ACTION in legal and rng.random() < 0.3 \
                else int(legal[rng.integers(len(legal))])
            env_a.step(int(a))
            actions.append(int(a))
            record.append({a: env_a.observe(a) for a in env_a.possible_agents})
        game_a = env_a.game
        assert game_a.hand_number == start.hand_number  # still inside the hand
        for s in range(4):
            holdings = _reshuffle(game_a, s, rng)
            assert holdings is not None, "no consistent deal found"
            if holdings != game_a.hands:
                worlds_changed += 1
            deal = _initial_deal(game_a, holdings)
            world = SpadesGame.from_deal(deal, start.dealer, start.scores, start.bags, RULES, 0)
            env_b = spades_v1.raw_env(rules=RULES, history=True)
            env_b.reset(options={"game": world})
            me = f"player_{s}"
            for i, a in enumerate(actions + [None]):
                ob, oa = env_b.observe(me), record[i][me]
                assert np.array_equal(ob["observation"], oa["observation"]), \
                    f"seat {s} sees a difference at step {i} (hand {hand}, seed {seed})"
                assert np.array_equal(ob["action_mask"], oa["action_mask"])
                if a is not None:
                    env_b.step(a)  # legal in the new deal: it agrees with all public play
            for o in range(4):
                if o != s and env_b.game.hands[o] != game_a.hands[o] and game_a.looked[o]:
                    # the comparison can fail: a seat whose cards changed sees the change
                    assert not np.array_equal(env_b.observe(f"player_{o}")["observation"],
                                              record[-1][f"player_{o}"]["observation"])
                    detected += 1
    assert worlds_changed >= 8 and detected >= 8


def test_public_voids_include_forced_spade_lead():
    # Seat 0 holds only spades and leads one before spades are broken: public knowledge that
    # seat 0 has no clubs, diamonds or hearts.
    hands = [[39 + r for r in range(13)], [26 + r for r in range(13)],
             [13 + r for r in range(13)], list(range(13))]
    g = SpadesGame.from_deal(hands, dealer=3, seed=0)
    for b in (52 + 3,) * 4:
        g.apply(b)
    g.apply(39)  # 2S led by seat 0
    assert _public_voids(g)[0] & 0b0111 == 0b0111
    assert g.hands[0] & NON_SPADES_MASK == 0 and g.hands[1] & SUIT_MASKS[3] == 0
