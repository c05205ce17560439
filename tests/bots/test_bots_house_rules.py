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
