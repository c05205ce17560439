"""Training beyond imitation: the privileged critic, the bag cost in the reward, the warm-start anchor, the learning
curve, and the rule that the acting policy decides from the seat's observation only."""

import os

import numpy as np
import pytest
import torch

from spades_env import SpadesGame
from spades_env.observation import encode
from spades_env.training.checkpoint import save_checkpoint
from spades_env.training.config import from_dict
from spades_env.training.envs import ScalarBatchEnv, env_hands, masks_to_bool
from spades_env.agents.model import PRIV_SIZE, Agent, privileged_features
from spades_env.training.opponents import Opponents
from spades_env.training.ppo_selfplay import Storage, make_payload, rollout
from spades_env.training.teacher_records import team_points


def _bits(cards):
    m = 0
    for c in cards:
        m |= 1 << c
    return m


def test_privileged_features_are_left_partner_right_of_the_seat():
    hands = torch.zeros(1, 4, 52, dtype=torch.bool)
    for seat, card in enumerate((0, 1, 2, 3)):  # seat s holds card s only
        hands[0, seat, card] = True
    for seat in range(4):
        f = privileged_features(hands, torch.tensor([seat])).reshape(3, 52)
        # block k holds the hand of seat (seat + 1 + k) % 4: left, partner, right
        assert [int(f[k].argmax()) for k in range(3)] == [(seat + 1) % 4, (seat + 2) % 4,
                                                          (seat + 3) % 4]
        assert float(f.sum()) == 3.0


def test_masks_to_bool_reads_card_ids_as_bits():
    b = masks_to_bool([_bits([0, 13, 51]), 0])
    assert b.shape == (2, 52)
    assert sorted(np.flatnonzero(b[0]).tolist()) == [0, 13, 51] and not b[1].any()


def test_vector_env_hands_match_its_scalar_games_while_cards_are_played():
    from spades_env.vector import SpadesVectorEnv
    env = SpadesVectorEnv(3, seed=4, hands_per_episode=1)
    env.reset()
    for step in range(30):  # 4 bids, then 26 cards: hands shrink as cards are played
        h = env_hands(env)
        for i in range(3):
            g = env.get_game(i)
            assert torch.equal(h[i], torch.from_numpy(masks_to_bool(g.hands))), (step, i)
        env.step(env.sample_actions())
    assert int(env_hands(env)[0].sum()) == 52 - 26


def _critic_checkpoint(tmp_path):
    args = from_dict({"hidden": [32], "head_hidden": 16, "critic_hidden": [16]})
    torch.manual_seed(3)
    agent = Agent([32], 16, critic_hidden=[16])
    path = str(tmp_path / "critic.pt")
    save_checkpoint(path, make_payload(args, agent, None, {"iteration": 0, "decisions": 0}, None,
                                       None, [], full=False))
    return path, agent


def _same_info_other_deal(hands0, dealer, log, seat: int, rng) -> SpadesGame:
    """A game with the same moves (``log``: (seat, action) pairs from the deal ``hands0``) and the
    same hand for ``seat``, but the cards ``seat`` cannot see dealt differently among the other
    three seats (each keeps its count; every move must replay legally, so revealed voids hold)."""
    others = [s for s in range(4) if s != seat]
    hands = [sorted(np.flatnonzero(masks_to_bool(hands0[s])).tolist()) for s in range(4)]
    played = {s: [a for p, a in log if p == s and a < 52] for s in others}
    pool = [c for s in others for c in hands[s] if c not in played[s]]
    for _ in range(5000):
        rng.shuffle(pool)
        new, k = list(hands), 0
        for s in others:
            n_free = 13 - len(played[s])
            new[s] = played[s] + pool[k:k + n_free]
            k += n_free
        g = SpadesGame.from_deal(new, dealer, seed=0)
        try:
            for _, a in log:
                g.apply(a)
        except ValueError:
            continue
        if any(sorted(new[s]) != hands[s] for s in others):
            return g
    raise AssertionError("no other consistent deal found")


def _two_deals_one_view(deal_seed: int, play_seed: int, moves: int):
    """A game after ``moves`` random legal moves and another deal of the same moves in which the
    seat to act sees the same (``_same_info_other_deal``): ``(game, other, seat)``."""
    g0 = SpadesGame(seed=deal_seed)
    g = SpadesGame.from_deal(list(g0.hands), g0.dealer, seed=0)
    r = np.random.default_rng(play_seed)
    log = []
    for _ in range(moves):
        a = int(r.choice(sorted(g.legal_actions())))
        log.append((g.current_player, a))
        g.apply(a)
    seat = g.current_player
    other = _same_info_other_deal(list(g0.hands), g0.dealer, log, seat,
                                  np.random.default_rng(moves))
    return g, other, seat


@pytest.mark.parametrize("moves", [0, 2, 23])  # the first bid, mid-bidding, mid-hand (trick 5)
def test_acting_policy_ignores_how_the_unseen_cards_lie(tmp_path, moves):
    """Redistributing the cards a seat cannot see among the other seats leaves its observation
    and the checkpoint bot's action probabilities unchanged, while the privileged critic (which
    reads those cards) does change: the policy really is blind to them."""
    from spades_env.bots.checkpoint_bot import CheckpointBot
    path, agent = _critic_checkpoint(tmp_path)
    bot = CheckpointBot(path)
    g, other, seat = _two_deals_one_view(11, 1, moves)
    assert other.current_player == seat and other.hands[seat] == g.hands[seat]
    v1, v2 = g.view(seat), other.view(seat)
    assert np.array_equal(encode(v1), encode(v2))
    p1, p2 = bot.action_probs(v1), bot.action_probs(v2)
    assert np.array_equal(p1, p2) and abs(p1.sum() - 1) < 1e-9
    h1 = torch.from_numpy(masks_to_bool(g.hands))[None]
    h2 = torch.from_numpy(masks_to_bool(other.hands))[None]
    obs = torch.as_tensor(encode(v1))[None]
    with torch.no_grad():
        c1 = agent.critic_value(obs, privileged_features(h1, torch.tensor([seat])))
        c2 = agent.critic_value(obs, privileged_features(h2, torch.tensor([seat])))
    assert not torch.equal(c1, c2)


@pytest.mark.parametrize("moves", [0, 23])
def test_the_shipped_agent_ignores_how_the_unseen_cards_lie(moves):
    """The same check on the shipped agent (the distilled network with its privileged critic)."""
    from spades_env.bots.checkpoint_bot import CheckpointBot
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    bot = CheckpointBot(os.path.join(root, "checkpoints", "shipped", "agent.pt"))
    g, other, seat = _two_deals_one_view(12, 2, moves)
    p1, p2 = bot.action_probs(g.view(seat)), bot.action_probs(other.view(seat))
    assert np.array_equal(p1, p2) and abs(p1.sum() - 1) < 1e-6


def test_rollout_rewards_charge_bags_at_bag_cost():
    """Each learner seat's rewards in a hand sum to its team's (points - 10 per bag) minus the
    other team's, times reward_scale (bag penalty reached in the hand left out)."""
    args = from_dict({"num_envs": 3, "num_steps": 56, "hidden": [16], "head_hidden": 8,
                      "critic_hidden": [8], "bag_cost": 10.0, "opponent_share": 0.0,
                      "vector_env": "scalar", "random_start": 0.0})
    env = ScalarBatchEnv(3, seed=2)
    torch.manual_seed(0)
    agent = Agent([16], 8, critic_hidden=[8])
    store = Storage(3 * 56, "cpu")
    stats = {"hands": []}
    cur = env.reset()
    rollout(env, cur, agent, Opponents(args, 3), store, args, np.random.default_rng(0), stats)
    assert store.n == 3 * 56 and len(stats["hands"]) == 3
    seat_of = []  # the rows are added step by step for the 3 games in order
    for i, (hr, _) in enumerate(stats["hands"]):
        want = 0.01 * (team_points(hr.teams[0], 10) - team_points(hr.teams[1], 10))
        assert want == pytest.approx(0.01 * ((hr.teams[0].hand_points - 10 * hr.teams[0].bags
                                              - hr.teams[0].bag_penalty)
                                             - (hr.teams[1].hand_points - 10 * hr.teams[1].bags
                                                - hr.teams[1].bag_penalty)))
    total = store.reward[:store.n]
    # every seat's last decision carries its team's reward: 4 rewards per hand, +d twice, -d twice
    nz = total[store.done[:store.n]]
    assert len(nz) == 12
    wants = sorted(round(x, 6) for hr, _ in stats["hands"]
                   for x in [0.01 * (team_points(hr.teams[0], 10) - team_points(hr.teams[1], 10))]
                   * 2 + [-0.01 * (team_points(hr.teams[0], 10) - team_points(hr.teams[1], 10))]
                   * 2)
    assert sorted(round(float(x), 6) for x in nz) == wants
    assert store.priv[:store.n].sum(1).max() <= PRIV_SIZE


def test_anchor_stays_in_the_pool_and_survives_a_state_round_trip():
    args = from_dict({"hidden": [16], "head_hidden": 8, "pool_size": 2, "pool_anchor": True,
                      "pool_bots": [], "opponent_share": 1.0})
    agent = Agent([16], 8)
    opp = Opponents(args, 4)
    opp.add_anchor(agent)
    for _ in range(5):
        opp.add_snapshot(agent)
    assert opp.anchor == 1 and opp.anchor in opp.agents and opp.members()[0] == 1
    assert len(opp.pool) == 2 and 1 not in opp.pool
    back = Opponents(args, 4)
    back.load_state_dict(opp.state_dict(), args)
    assert back.anchor == 1 and back.members() == opp.members()
    rng = np.random.default_rng(0)
    drawn = set()
    for _ in range(200):
        back.assign(0, rng)
        drawn |= set(back.ctrl[0][back.ctrl[0] > 0].tolist())
    assert drawn == set(back.members())


def test_curve_png_is_written(tmp_path):
    from PIL import Image
    from spades_env.training.plot import plot_curve
    ev = [{"decisions": 0, "seconds": 10.0, "rows": [
        {"opponent": "medium", "diff": -5.0, "diff_lo": -8.0, "diff_hi": -2.0}]},
          {"decisions": 1000, "seconds": 70.0, "final": True, "rows": [
              {"opponent": "medium", "diff": 3.0, "diff_lo": 1.0, "diff_hi": 5.0}]}]
    out = tmp_path / "curve.png"
    plot_curve(ev, str(out))
    with Image.open(out) as im:
        assert im.format == "PNG" and im.size[0] > 600
    with pytest.raises(ValueError, match="no evaluation points"):
        plot_curve([], str(tmp_path / "x.png"))
    # the suffix picks the format; an unknown one is refused and nothing is written
    plot_curve(ev, str(tmp_path / "curve.svg"))
    assert (tmp_path / "curve.svg").read_text().lstrip().startswith("<?xml")
    plot_curve(ev, str(tmp_path / "curve.pdf"))
    assert (tmp_path / "curve.pdf").read_bytes()[:5] == b"%PDF-"
    with pytest.raises(ValueError, match="png, svg, pdf .*not .jpg"):
        plot_curve(ev, str(tmp_path / "curve.jpg"))
    assert not (tmp_path / "curve.jpg").exists()


def test_the_distilled_networks_final_point_is_a_star_beside_the_line(tmp_path):
    from spades_env.training.plot import curve_series, plot_curve
    ev = [{"decisions": 0, "seconds": 60.0, "rows": [{"opponent": "hard", "diff": -9.0}]},
          {"decisions": 500, "seconds": 120.0, "final": True,
           "rows": [{"opponent": "hard", "diff": -4.0, "diff_lo": -6.0, "diff_hi": -2.0}]},
          {"decisions": 500, "seconds": 300.0, "final": True, "network": "distilled",
           "rows": [{"opponent": "hard", "diff": 1.0, "diff_lo": -1.0, "diff_hi": 3.0}]}]
    line, stars = curve_series(ev)["hard"]
    assert line == [(0, 1.0, -9.0, -9.0, -9.0), (500, 2.0, -4.0, -6.0, -2.0)]
    assert stars == [(500, 5.0, 1.0, -1.0, 3.0)]
    plot_curve(ev, str(tmp_path / "c.png"))
    assert (tmp_path / "c.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


# ------------------------------------------------------------------ whole runs (tiny)
def _tiny_cfg(tmp_path, **over):
    import yaml
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    with open(os.path.join(root, "configs", "smoke.yaml")) as f:
        d = yaml.safe_load(f)
    d.update(runs_dir=str(tmp_path / "runs"), checkpoint_dir=str(tmp_path / "ck"),
             total_decisions=3000, bc_hands=40, bc_bid_deals=100, bc_dagger_rounds=0,
             eval_every=0, final_eval_deals=4, eval_opponents=["random"], critic_hidden=[16],
             hidden=[32], head_hidden=16, bag_cost=10, pool_anchor=True, vector_env="vector",
             random_start=0.0, num_envs=8)
    d.update(over)
    p = tmp_path / "tiny.yaml"
    p.write_text(yaml.safe_dump(d))
    return str(p)


@pytest.mark.slow
def test_a_run_saves_its_warm_start_and_curve_and_init_from_starts_from_it(tmp_path, capsys):
    from spades_env.training.checkpoint import load_checkpoint
    from spades_env.training.train import main
    cfg = _tiny_cfg(tmp_path)
    assert main(["--config", cfg, "--name", "a"]) == 0
    ws = load_checkpoint(str(tmp_path / "ck" / "a" / "warmstart.pt"))
    assert "optimizer" not in ws and ws["model_shape"]["critic_hidden"] == [16]
    assert (tmp_path / "ck" / "a" / "curve.png").stat().st_size > 1000
    final = load_checkpoint(str(tmp_path / "ck" / "a" / "latest.pt"))
    assert final["pool"]["anchor"] >= 1  # the warm start stays in the pool
    changed = [k for k in ws["model"] if not torch.equal(ws["model"][k], final["model"][k])]
    assert changed  # PPO moved the network
    # a second run from that warm start: its first save holds exactly the warm-start weights
    capsys.readouterr()
    assert main(["--config", cfg, "--name", "b", "--init_from",
                 str(tmp_path / "ck" / "a" / "warmstart.pt"), "--stop_after_iterations", "1",
                 "--save_every", "1000"]) == 0
    assert "network initialised from" in capsys.readouterr().out
    b0 = load_checkpoint(str(tmp_path / "ck" / "b" / "latest.pt"))
    assert b0["progress"]["iteration"] == 0 and b0["progress"]["decisions"] == 0
    assert all(torch.equal(ws["model"][k], b0["model"][k]) for k in ws["model"])
    # a network of another shape is refused before any work, naming the field
    assert main(["--config", cfg, "--name", "c", "--hidden", "[64]", "--init_from",
                 str(tmp_path / "ck" / "a" / "warmstart.pt")]) == 2
    assert "bad config: init_from" in capsys.readouterr().err
    # ... and before the run's folders exist, so the next try keeps its name (no "c-2")
    assert not (tmp_path / "ck" / "c").exists() and not (tmp_path / "runs" / "c").exists()


def test_vector_env_refusal_comes_before_the_run_folders(tmp_path, capsys):
    from spades_env.training.train import main
    cfg = _tiny_cfg(tmp_path)
    assert main(["--config", cfg, "--name", "v", "--random_start", "0.5"]) == 2
    err = capsys.readouterr().err
    assert "bad config: vector_env" in err and "random_start 0 (got 0.5)" in err
    assert not (tmp_path / "ck" / "v").exists() and not (tmp_path / "runs" / "v").exists()


@pytest.mark.slow
def test_evaluate_after_training_checks_its_bots_first_and_evaluates_the_runs_own_folder(
        tmp_path, capsys):
    from spades_env.training.train import main
    cfg = _tiny_cfg(tmp_path)
    assert main(["--config", cfg, "--name", "e", "--vs", "randm"]) == 2
    assert "--vs randm" in capsys.readouterr().err
    assert not (tmp_path / "ck" / "e").exists()
    assert main(["--config", cfg, "--name", "e", "--vs", "random",
                 "--games", "2"]) == 0
    out = capsys.readouterr().out
    assert main(["--config", cfg, "--name", "e", "--vs", "random",
                 "--games", "2"]) == 0
    out2 = capsys.readouterr().out
    # the second run took the name e-2 and its own checkpoint was the one evaluated
    assert "ck/e/latest.pt vs bots" in out and "ck/e-2/latest.pt vs bots" in out2
    assert "| random | games | 2 (" in out2


def test_widen_keeps_the_function_and_trains_the_new_units():
    from spades_env.agents.model import widen
    torch.manual_seed(3)
    a = Agent([32, 16], 8, critic_hidden=[12])
    b = widen(a, [48, 16], 20)
    assert b.hidden == [48, 16] and b.head_hidden == 20 and b.critic_hidden == [12]
    x, priv = torch.randn(9, a.obs_size), torch.randn(9, PRIV_SIZE)
    la, va = a(x)
    lb, vb = b(x)
    assert torch.allclose(la, lb, atol=1e-5) and torch.allclose(va, vb, atol=1e-5)
    assert torch.equal(a.critic_value(x, priv), b.critic_value(x, priv))
    assert b.training == a.training
    d = widen(a.double().eval(), [40, 16], 8)  # the source's dtype and mode are kept
    assert next(d.parameters()).dtype == torch.float64 and not d.training
    a.float().train()
    # the old weights sit in the top-left block; the new units' outgoing weights start at 0
    assert torch.equal(b.trunk[2].weight[:16, :32], a.trunk[2].weight)
    assert not b.trunk[2].weight[:, 32:].any() and not b.play_head[0].weight[:, 16:].any()
    assert not b.play_head[2].weight[:, 8:].any() and b.play_head[0].weight[8:].abs().sum() > 0
    # one step of training reaches the new units (their outgoing weights move off 0)
    opt = torch.optim.SGD(b.parameters(), lr=0.1)
    b.policy_logits(x)[:, :52].logsumexp(-1).sum().backward()
    opt.step()
    assert b.play_head[2].weight[:, 8:].abs().sum() > 0
    for bad, why in ((([48], 20), "number of trunk layers"), (([16, 16], 20), "only grows"),
                     (([48, 16], 4), "only grows"), (("48,16", 20), "list of integer widths"),
                     (([48, 16], 20.5), "must be integers"), (([48.0, 16], 20), "integers"),
                     (([10**6, 16], 20), "at most"), (([16384, 16384], 20), "MAX_PARAMS")):
        with pytest.raises(ValueError, match=why):
            widen(a, *bad)
