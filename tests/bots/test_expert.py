"""The ``expert`` bot (``spades_env.bots.expert``): PIMC search, deals weighted by the network.

Each test checks a value worked out independently: the network's likelihood against
``CheckpointBot.action_probs`` on the real views, the batched follow-suit rule against the engine,
the weights of hand-built deals, the tempering's effective sample size.
"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from spades_env import SpadesGame  # noqa: E402
from spades_env.bots.checkpoint_bot import CheckpointBot  # noqa: E402
from spades_env.bots.expert import DEFAULT_CHECKPOINT, ExpertBot, tempered_weights  # noqa: E402
from spades_env.bots import make_bot  # noqa: E402
from spades_env.bots.sampler import DealSampler, sample_deals  # noqa: E402
from spades_env.cards import BID_OFFSET, parse_cards  # noqa: E402
from spades_env.engine import Phase  # noqa: E402
from spades_env.observation import OFFSETS, encode  # noqa: E402

from .test_bots_pimc import _rebuild  # noqa: E402


def small_expert(seed, **kw):
    return ExpertBot(seed=seed, samples=24, bid_samples=16, **kw)


def _mask(text: str) -> int:
    m = 0
    for c in parse_cards(text):
        m |= 1 << c
    return m


def _played_game(seed: int, decisions: int):
    """A game after ``decisions`` moves by ``medium`` bots, with every view the engine gave the
    seat to move before each move (``(view, action)`` pairs)."""
    g = SpadesGame(seed=seed)
    bot = make_bot("medium")
    log = []
    for _ in range(decisions):
        v = g.view(g.current_player)
        a = bot.act(v)
        log.append((v, a))
        g.apply(a)
    return g, log


# ---------------------------------------------------------------------------- the likelihood

@pytest.mark.slow
def test_a_bot_that_decided_earlier_in_the_hand_reads_the_same_evidence_as_a_fresh_one():
    """Regression: the cards a seat played since each earlier decision grow with the hand; a bot
    that cached the hand's decisions at its earlier turns must read them from the current view
    (they were frozen at the first read, off by up to 68 nats under the true deal)."""
    g = SpadesGame(seed=6)
    med = make_bot("medium")
    kept = small_expert(0, bid_model="network")
    checked = 0
    while not g.hand_results:
        seat = g.current_player
        v = g.view(seat)
        if seat == 0 and v.play_history:
            hands = np.array([g.hands], dtype=np.uint64)
            ev = kept.evidence(v, list(g.hands))
            fresh = small_expert(0, bid_model="network").evidence(v, list(g.hands))
            assert ev.later == fresh.later
            a = kept.likelihood.log_likelihood(ev, hands, 0.02)
            b = kept.likelihood.log_likelihood(fresh, hands, 0.02)
            np.testing.assert_array_equal(a, b)
            assert kept.deal_weights(v, sample_deals(v, 8, rng=1)).tolist() == \
                small_expert(0, bid_model="network").deal_weights(
                    v, sample_deals(v, 8, rng=1)).tolist()
            checked += 1
        g.apply(med.act(v))
    assert checked >= 10


def test_rules_are_part_of_the_evidence_key():
    from spades_env import Rules
    a = SpadesGame(rules=Rules(target_score=250), seed=9)
    b = SpadesGame(rules=Rules(), seed=9)
    for g in (a, b):
        for _ in range(4):
            g.apply(BID_OFFSET + 3)
        g.apply(g.legal_actions()[0])
    seat = a.current_player
    shared = small_expert(1)
    shared.evidence(a.view(seat), list(a.hands))
    got = shared.evidence(b.view(seat), list(b.hands))
    want = small_expert(1).evidence(b.view(seat), list(b.hands))
    assert [x.tolist() for x in got.obs] == [x.tolist() for x in want.obs]


@pytest.mark.parametrize("decisions", [3, 9, 27])
def test_likelihood_of_the_true_deal_is_the_network_on_the_real_views(decisions):
    """Re-encoded past decisions are exactly what each seat saw: under the true deal, the
    log-likelihood of each decision equals log CheckpointBot.action_probs(real view)[action]."""
    g, log = _played_game(4, decisions)
    me = g.current_player
    view = g.view(me)
    bot = small_expert(0, floor=0.0, bid_model="network")
    ev = bot.evidence(view, list(g.hands))
    ref = CheckpointBot(str(DEFAULT_CHECKPOINT))
    expect_obs, expect_lp = [], []
    for v, a in log:
        if v.seat != me:
            expect_obs.append(encode(v))
            expect_lp.append(np.log(ref.action_probs(v)[a]))
    assert len(ev) == len(expect_obs) == sum(1 for v, _a in log if v.seat != me)
    h0, h1 = OFFSETS["hand"]
    for i, want in enumerate(expect_obs):
        got = ev.obs[i].copy()
        assert not got[h0:h1].any()  # the hand block is the deal's, filled per deal
        held = g.hands[ev.seat[i]] | ev.later[i]
        got[h0:h1] = [(held >> c) & 1 for c in range(52)]
        np.testing.assert_array_equal(got, want)
    ll = bot.likelihood.log_likelihood(ev, np.array([g.hands], dtype=np.uint64), 0.0)[0]
    np.testing.assert_allclose(ll, expect_lp, rtol=1e-4, atol=1e-4)


def test_nil_bidder_holding_ace_and_king_of_spades_gets_a_low_weight():
    """Seat 1 bid Nil (dealer 0). For seat 2, a deal that gives seat 1 the ace and king of spades
    is far less likely under the network than the same deal with those two cards swapped with
    two low hearts of seat 3."""
    me = _mask("2S 3S 4S 5S AH KH QH JH AD KD QD JD AC")
    dealer = _mask("6S 7S 8S TH 9D TD 7C 8C 9C TC JC QC KC")
    low = [dealer, _mask("2H 3H 4H 5H 6H 2D 3D 4D 5D 2C 3C 4C 5C"), me,
           _mask("AS KS QS JS TS 9S 7H 8H 9H 6D 7D 8D 6C")]
    high = [dealer, _mask("AS KS 4H 5H 6H 2D 3D 4D 5D 2C 3C 4C 5C"), me,
            _mask("2H 3H QS JS TS 9S 7H 8H 9H 6D 7D 8D 6C")]
    g = SpadesGame.from_deal(low, dealer=0)
    g.apply(BID_OFFSET + 0)  # seat 1: Nil
    view = g.view(2)
    for bid_model in ("network", "formula"):  # the network's bid head, insane's bid model
        w = small_expert(0, bid_model=bid_model).deal_weights(view, [high, low])
        assert w[1] == 1.0 and w[0] < 0.05, bid_model
    # card plays only: the Nil is no evidence, both deals weigh the same
    w = small_expert(0, bid_model="none").deal_weights(view, [high, low])
    assert w.tolist() == [1.0, 1.0]


def test_a_seat_that_showed_out_never_holds_the_suit():
    """A seat that did not follow suit is void: no weighted deal gives it that suit."""
    g, _log = _played_game(11, 4 + 13)
    view = g.view(g.current_player)
    voids = view.voids
    bot = small_expert(3)
    deals = bot._deals(view, 24)
    assert deals
    for hands, w in deals:
        assert w > 0
        for s in range(4):
            for suit in range(4):
                if (voids[s] >> suit) & 1:
                    assert not (hands[s] >> (13 * suit)) & 0x1FFF


def test_tempered_weights_keep_the_effective_sample_size():
    ll = np.array([0.0, -1.0, -2.0, -30.0])
    w = tempered_weights(ll, 1.0, 0.0)  # no constraint: the likelihood itself
    np.testing.assert_allclose(w, np.exp(ll))
    w = tempered_weights(ll, 1.0, 0.9)  # ESS >= 3.6 of 4 needs a much lower power
    ess = w.sum() ** 2 / (w * w).sum()
    assert ess == pytest.approx(3.6, abs=1e-3)
    assert w[0] == 1.0 and w[0] > w[1] > w[2] > w[3] > 0
    assert (tempered_weights(np.array([-np.inf, -np.inf]), 1.0, 0.5) == 1.0).all()
    # an untempered base: the bid model's log-weights are added as they are
    w = tempered_weights(np.zeros(3), 1.0, 0.0, base=np.log([0.5, 1.0, 0.25]))
    np.testing.assert_allclose(w, [0.5, 1.0, 0.25])
    assert tempered_weights(np.array([0.0, -np.inf]), 1.0, 0.9).tolist() == [1.0, 0.0]


# ---------------------------------------------------------------------------- the bot

def test_same_seed_same_moves():
    g, _log = _played_game(7, 10)
    v = g.view(g.current_player)
    assert small_expert(5).act(v) == small_expert(5).act(v)
    g2 = SpadesGame(seed=8)
    moves = []
    for _ in range(2):
        bots = [small_expert(s) for s in range(4)]
        g2 = SpadesGame(seed=8)
        out = []
        for _ in range(30):
            a = bots[g2.current_player].act(g2.view(g2.current_player))
            out.append(a)
            g2.apply(a)
        moves.append(out)
    assert moves[0] == moves[1]


def test_decision_unchanged_when_hidden_cards_change():
    checked = 0
    for seed in range(5):
        g, _log = _played_game(seed, 3 + 4 * seed + seed % 3)
        seat = g.current_player
        v = g.view(seat)
        other = sample_deals(v, 1, rng=seed + 99)[0]
        v2 = _rebuild(v, other).view(seat)
        assert v2.info_key() == v.info_key()
        if any(other[s] != g.hands[s] for s in range(4)):
            checked += 1
        assert small_expert(7).act(v) == small_expert(7).act(v2)
        # the network's inputs are the same too: the evidence does not depend on the deal used
        a, b = small_expert(0).evidence(v, list(g.hands)), small_expert(0).evidence(v2, other)
        assert len(a) == len(b)
        for x, y in zip(a.obs, b.obs):
            np.testing.assert_array_equal(x, y)
    assert checked >= 4


def test_plays_legal_moves_through_a_hand_and_bids_with_the_network_weights():
    g = SpadesGame(seed=3)
    bots = [small_expert(s) for s in range(4)]
    n = 0
    while not g.hand_results:
        v = g.view(g.current_player)
        a = bots[g.current_player].act(v)
        assert a in v.legal_actions
        g.apply(a)
        n += 1
    assert n == 4 + 52


def test_make_bot_expert_and_bad_options(tmp_path):
    bot = make_bot("expert", seed=1, samples=8)
    assert isinstance(bot, ExpertBot) and bot.checkpoint == str(DEFAULT_CHECKPOINT)
    for bad in ({"temper": 1.5}, {"floor": 1.0}, {"floor": -0.1}, {"min_ess": "x"},
                {"inference": "magic"}, {"threads": 0}, {"samples": 0}, {"bid_model": "x"},
                {"temper": float("nan")}):
        with pytest.raises(ValueError):
            make_bot("expert", seed=1, **bad)
    with pytest.raises(ValueError, match="bad option"):
        make_bot("expert", nonsense=1)
    with pytest.raises(ValueError, match="no checkpoint at .*none.pt"):
        make_bot("expert", checkpoint=str(tmp_path / "none.pt"))
    with pytest.raises(ValueError, match="device"):  # checked before the file is read
        make_bot("expert", device="gpu")
    with pytest.raises(ValueError, match="infer_bids"):
        make_bot("expert", infer_bids=False)
    assert make_bot("expert", temper=np.float32(0.5), threads=np.int64(2)).temper == 0.5


def test_wrong_shape_or_version_checkpoint_is_refused_with_the_file_named(tmp_path):
    data = torch.load(DEFAULT_CHECKPOINT, weights_only=True)
    bad_version = dict(data, version=99)
    p = tmp_path / "v99.pt"
    torch.save(bad_version, p)
    with pytest.raises(ValueError, match=r"v99\.pt.*version 99|version 99.*v99\.pt"):
        make_bot("expert", checkpoint=str(p))
    model = dict(data["model"])
    key = next(k for k in model if k.endswith("weight"))
    model[key] = torch.zeros(3, 3)
    p = tmp_path / "shape.pt"
    torch.save(dict(data, model=model), p)
    with pytest.raises(ValueError, match="shape.pt"):
        make_bot("expert", checkpoint=str(p))


def test_blind_nil_hand_falls_back_to_the_bid_inference():
    from spades_env import Rules
    g = SpadesGame(rules=Rules(blind_nil=True), seed=4)
    bots = [small_expert(s, blind_nil_deficit=-1000) for s in range(4)]  # always Blind Nil
    for _ in range(40):
        v = g.view(g.current_player)
        a = bots[g.current_player].act(v)
        assert a in v.legal_actions
        g.apply(a)
    assert any(g.blind) and g.phase == Phase.PLAY


def test_a_bot_shared_by_two_games_reads_each_game_s_own_moves():
    """The evidence cache is per hand and checked against the moves: a bot that decided in one
    game decides in another game with the same deal but other moves exactly as a fresh bot."""
    a = SpadesGame(seed=9)
    b = SpadesGame(seed=9)
    for g, bid in ((a, 2), (b, 5)):
        for _ in range(4):
            g.apply(BID_OFFSET + bid)
        bot = make_bot("medium")
        for _ in range(6):
            g.apply(bot.act(g.view(g.current_player)))
    seat = a.current_player
    assert b.current_player == seat
    shared = small_expert(1)
    shared.act(a.view(seat))
    ev = shared.evidence(b.view(seat), list(b.hands))
    fresh = small_expert(1).evidence(b.view(seat), list(b.hands))
    assert [x.tolist() for x in ev.obs] == [x.tolist() for x in fresh.obs]
    assert ev.action == fresh.action and ev.action[0] == BID_OFFSET + 5


# ---------------------------------------------------------------------------- the critic leaf

def _critic_on_the_real_view(agent, game, card, me):
    """The critic read directly: the real game after ``card``, the next seat's own observation
    and the other three real hands, in points for ``me``'s team."""
    from spades_env.cards import TEAM
    from spades_env.training.envs import seat_priv
    g2 = game.clone()
    g2.apply(card)
    s = g2.current_player
    obs = torch.from_numpy(encode(g2.view(s))[None])
    priv = torch.from_numpy(seat_priv(g2.hands, s).astype(np.float32)[None])
    with torch.no_grad():
        v = agent.critic_value(obs, priv).item()
    return v * (100.0 if TEAM[s] == TEAM[me] else -100.0)


@pytest.mark.parametrize("decisions", [5, 18, 31])
def test_critic_values_of_the_true_deal_are_the_critic_on_the_real_views(decisions):
    g, _log = _played_game(decisions, decisions)
    assert g.phase == Phase.PLAY
    v = g.view(g.current_player)
    bot = small_expert(0, leaf="critic")
    true = [g.hands[s] for s in range(4)]
    other = sample_deals(v, 1, rng=3)[0]
    cands = list(v.legal_actions)
    got = bot.critic_values(v, cands, [true, other])
    assert got.shape == (2, len(cands))
    for i, c in enumerate(cands):
        want = _critic_on_the_real_view(bot.likelihood.agent, g, c, v.seat)
        assert got[0, i] == pytest.approx(want, abs=1e-3)
    # the other deal is read with its own hands: the same value only by accident
    assert not np.allclose(got[0], got[1])


def test_critic_leaf_mixes_by_its_weight_and_only_early_in_the_hand():
    g, _log = _played_game(11, 12)
    v = g.view(g.current_player)
    cands = list(v.legal_actions)
    deals = [(list(d), 1.0) for d in sample_deals(v, 3, rng=5)]
    pv = [float(k) for k in range(len(deals) * len(cands))]
    half = small_expert(0, leaf="critic", leaf_weight=0.5)
    critic = half.critic_values(v, cands, [d for d, _w in deals]).reshape(-1)
    np.testing.assert_allclose(half._leaf_values(v, cands, deals, pv),
                               0.5 * np.asarray(pv) + 0.5 * critic)
    assert small_expert(0, leaf="critic", leaf_weight=0.0)._leaf_values(v, cands, deals, pv) == pv
    assert small_expert(0, leaf="critic", leaf_tricks=v.trick_number)._leaf_values(
        v, cands, deals, pv) == pv
    assert small_expert(0)._leaf_values(v, cands, deals, pv) == pv  # leaf="playout"


def test_critic_leaf_decision_unchanged_when_hidden_cards_change():
    for seed in range(3):
        g, _log = _played_game(seed + 20, 6 + 5 * seed)
        seat = g.current_player
        v = g.view(seat)
        other = sample_deals(v, 1, rng=seed)[0]
        v2 = _rebuild(v, other).view(seat)
        assert v2.info_key() == v.info_key()
        a = small_expert(4, leaf="critic")
        b = small_expert(4, leaf="critic")
        assert a.card_values(v) == b.card_values(v2)


def test_critic_leaf_bad_options_and_a_network_without_critic(tmp_path):
    for bad in ({"leaf": "net"}, {"leaf_weight": 1.5}, {"leaf_weight": -0.1},
                {"leaf_tricks": 14}, {"leaf_tricks": True}, {"leaf_tricks": 2.0}):
        with pytest.raises(ValueError, match="leaf"):
            make_bot("expert", seed=1, **bad)
    data = torch.load(DEFAULT_CHECKPOINT, weights_only=True)
    data = dict(data, model={k: v for k, v in data["model"].items()
                             if not k.startswith("critic.")})
    data["model_shape"] = dict(data["model_shape"], critic_hidden=[])
    p = tmp_path / "nocritic.pt"
    torch.save(data, p)
    make_bot("expert", checkpoint=str(p))  # a network without a critic still plays
    with pytest.raises(ValueError, match="nocritic.pt.*privileged critic|privileged critic.*nocritic"):
        make_bot("expert", checkpoint=str(p), leaf="critic")


# ---------------------------------------------------------------------------- candidate pruning

def _class_mass_by_hand(view, bot):
    """The prior of each candidate's class, worked out independently of ``_candidates``: the
    training's ``equivalence_classes`` maps every legal card to its candidate, and the classes'
    probabilities are ``CheckpointBot.action_probs`` summed over them."""
    from spades_env.training.distill_targets import equivalence_classes
    from spades_env.bots.pimc import PIMCBot
    legal = sorted(view.legal_actions)
    cands = PIMCBot._candidates(bot, view, legal)
    mask = np.zeros((1, 52), bool)
    mask[0, legal] = True
    valued = np.zeros((1, 52), bool)
    valued[0, cands] = True
    rep = equivalence_classes(mask, valued)[0]
    p = CheckpointBot(str(DEFAULT_CHECKPOINT)).action_probs(view)
    mass = {c: float(p[:52][rep == c].sum()) for c in cands}
    return cands, mass


def test_prune_keeps_the_classes_the_network_plays_and_the_most_likely_one():
    seen_pruned = 0
    for seed in range(6):
        g, _log = _played_game(seed + 40, 5 + 7 * seed)
        v = g.view(g.current_player)
        if v.phase != Phase.PLAY or len(v.legal_actions) < 2:
            continue
        off = small_expert(1)
        cands, mass = _class_mass_by_hand(v, off)
        assert off._candidates(v, sorted(v.legal_actions)) == cands  # prune=0: unchanged
        assert sum(mass.values()) == pytest.approx(1.0, abs=1e-9)
        np.testing.assert_allclose(off.card_prior(v, v.legal_actions)[:52],
                                   CheckpointBot(str(DEFAULT_CHECKPOINT)).action_probs(v)[:52],
                                   rtol=1e-6, atol=1e-9)
        for prune in (0.05, 0.2):
            top = max(cands, key=mass.get)
            want = [c for c in cands if c == top or mass[c] >= prune]
            got = small_expert(1, prune=prune)._candidates(v, sorted(v.legal_actions))
            assert got == want
            seen_pruned += len(got) < len(cands)
        # prune=1 searches only the network's favourite class: its lowest card is played
        assert small_expert(1, prune=1.0).act(v) == max(cands, key=mass.get)
    assert seen_pruned >= 2


def test_prune_decision_unchanged_when_hidden_cards_change_and_bad_values():
    g, _log = _played_game(23, 17)
    seat = g.current_player
    v = g.view(seat)
    other = sample_deals(v, 1, rng=3)[0]
    v2 = _rebuild(v, other).view(seat)
    assert v2.info_key() == v.info_key()
    assert small_expert(4, prune=0.1).card_values(v) == small_expert(4, prune=0.1).card_values(v2)
    for bad in (-0.1, 1.5, True, "x", float("nan")):
        with pytest.raises(ValueError, match="prune"):
            make_bot("expert", seed=1, prune=bad)


def test_card_prior_refuses_bad_legal_and_prune_counts_a_repeated_card_once():
    """Regressions (found by a helper): ``card_prior`` took bids, illegal cards and out-of-range
    ids silently; a card given twice to ``card_values`` counted twice toward its class's prior."""
    g, _log = _played_game(23, 17)
    v = g.view(g.current_player)
    legal = sorted(v.legal_actions)
    bot = small_expert(1, prune=0.1)
    illegal = next(c for c in range(52) if c not in legal)
    for bad in ([], [illegal], [BID_OFFSET + 3], [99]):
        with pytest.raises(ValueError, match="legal must be"):
            bot.card_prior(v, bad)
    g, _log = _played_game(502, 9)  # a card whose class prior is 0.072, under 0.108 (twice: over)
    v = g.view(g.current_player)
    legal = sorted(v.legal_actions)
    bot = small_expert(1, prune=0.108)
    assert bot._candidates(v, legal) == [26, 28, 32, 34]
    assert bot._candidates(v, legal + [37]) == [26, 28, 32, 34]
    assert bot.card_values(v, legal=legal + [37])[0] == [26, 28, 32, 34]
    assert "prune=0.1" in repr(bot) and "leaf='playout'" in repr(bot)


# ---------------------------------------------------------------------------- the bid prior

def _bid_view(seed: int, before: int):
    """The view of the seat to bid after ``before`` bids of 3 (cards seen)."""
    g = SpadesGame(seed=seed)
    for _ in range(before):
        g.apply(BID_OFFSET + 3)
    v = g.view(g.current_player)
    assert v.phase == Phase.BIDDING and v.looked
    return v


@pytest.mark.parametrize("seed,before", [(0, 0), (7, 2), (11, 3)])
def test_bid_prior_adds_its_weight_times_the_network_log_probability(seed, before):
    v = _bid_view(seed, before)
    probs = CheckpointBot(str(DEFAULT_CHECKPOINT)).action_probs(v)  # the acting policy
    bids, plain = small_expert(5, bid_prior=0).bid_values(v)
    for lam in (0.5, 2.0):
        bids2, got = small_expert(5, bid_prior=lam).bid_values(v)
        assert bids2 == bids
        want = [x + lam * np.log(max(probs[BID_OFFSET + b], 1e-4)) for b, x in zip(bids, plain)]
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-9)
        # the bid made is the best of those numbers, the first on a tie
        best = max(range(len(bids)), key=lambda i: (got[i], -i))
        assert small_expert(5, bid_prior=lam).act(v) == BID_OFFSET + bids[best]
    # a weight far above any gap between the search's values bids the network's favourite
    # (the window holds it here); the default weight is 1
    fav = int(np.argmax(probs[BID_OFFSET:BID_OFFSET + 14]))
    assert fav in bids
    assert small_expert(5, bid_prior=1000).act(v) == BID_OFFSET + fav
    assert small_expert(5).bid_values(v) == small_expert(5, bid_prior=1).bid_values(v)
    assert small_expert(5).bid_prior == 1.0


def test_bid_prior_decision_unchanged_when_hidden_cards_change_and_bad_values():
    v = _bid_view(7, 2)
    other = sample_deals(v, 1, rng=3)[0]
    v2 = _rebuild(v, other).view(v.seat)
    assert v2.info_key() == v.info_key()
    assert small_expert(4, bid_prior=1).bid_values(v) == small_expert(4, bid_prior=1).bid_values(v2)
    for bad in (-0.5, 1000.5, True, "1", float("nan"), None):
        with pytest.raises(ValueError, match="bid_prior"):
            make_bot("expert", seed=1, bid_prior=bad)
    assert "bid_prior=1.0" in repr(small_expert(1, bid_prior=1))
