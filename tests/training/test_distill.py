"""Search distillation (spades_env/training/distill.py): labels reproducible and consistent with the game,
targets worked out by hand, files checked, the card play moves toward the search and the bids stay."""

import math
import os
import time

import numpy as np
import pytest
import torch

from spades_env import Rules, SpadesGame
from spades_env.compact import expand, rules_table
from spades_env.bots.checkpoint_bot import CheckpointBot
from spades_env.bots.pimc import PIMCBot
from spades_env.training.checkpoint import build_agent, load_checkpoint
from spades_env.training.distill import distill, evaluate_rows
from spades_env.training.distill_targets import (build_dataset, card_targets, equivalence_classes,
                                                 soft_targets)
from spades_env.training.labelling import label_chunk
from spades_env.training.labels import load_labels, save_labels
from spades_env.training.envs import randomize_start

# the slow tests (they train, label or serve) are marked one by one: make test-fast runs the rest


@pytest.fixture(scope="module")
def labels(tiny):
    return label_chunk(tiny, 3, seed=5, chunk=0, samples=4)


def test_equivalence_classes_by_hand():
    # suit of cards 26..38: legal 26, 27, 28, 31; the search valued 26 and 31 (27 and 28 ride
    # with 26). Suit 0 ends at 12, suit 1 starts at 13: a class never crosses suits.
    mask = np.zeros((1, 68), bool)
    valued = np.zeros((1, 52), bool)
    mask[0, [26, 27, 28, 31, 12, 13]] = True
    valued[0, [26, 31, 12, 13]] = True
    rep = equivalence_classes(mask, valued)[0]
    assert rep[[26, 27, 28, 31, 12, 13]].tolist() == [26, 26, 26, 31, 12, 13]
    assert (np.delete(rep, [26, 27, 28, 31, 12, 13]) == 52).all()


def test_equivalence_classes_follow_each_card_down_its_suit():
    # the class of a legal card is the nearest valued card at or below it in its suit, by a
    # plain walk per card, on random masks (the function is vectorised: every row, suit and
    # density at once)
    rng = np.random.default_rng(3)
    for density in (0.1, 0.4, 0.8):
        mask, valued = rng.random((300, 68)) < 0.5, rng.random((300, 52)) < density
        rep = equivalence_classes(mask, valued)
        assert rep.dtype == np.int64 and rep.shape == (300, 52)
        for n, c in zip(*np.nonzero(rep != -1)):
            want = 52
            if mask[n, c]:
                below = [d for d in range(c - c % 13, c + 1) if valued[n, d]]
                want = below[-1] if below else 52
            assert rep[n, c] == want


def test_soft_targets_by_hand():
    v = np.full((2, 52), np.nan)
    v[0, [3, 9]] = [10.0, 13.0]      # 3 points apart at temperature 3: odds 1 : e
    v[1, 40] = -50.0                 # one candidate: certain
    t = soft_targets(v, 3.0)
    assert t[0, 3] == pytest.approx(1 / (1 + math.e)) and t[0, 9] == pytest.approx(
        math.e / (1 + math.e))
    assert t[1, 40] == 1.0 and t.sum() == pytest.approx(2.0)
    with pytest.raises(ValueError, match="temperature"):
        soft_targets(v, 0.0)
    with pytest.raises(ValueError, match="no candidate"):
        soft_targets(np.full((1, 52), np.nan), 3.0)


def test_prior_weighted_card_targets_by_hand():
    # the reference plays card 3 with 0.9 and card 9 with 0.1; the search rates 9 three points
    # better (temperature 3): prior 1 gives odds 0.9 : 0.1 * e, prior 0 the plain 1 : e
    v = np.full((1, 52), np.nan)
    v[0, [3, 9]] = [10.0, 13.0]
    cp = np.zeros((1, 52))
    cp[0, [3, 9]] = [0.9, 0.1]
    t = card_targets(v, cp, 3.0, prior=1.0)
    assert t[0, 3] == pytest.approx(0.9 / (0.9 + 0.1 * math.e), rel=1e-6)
    assert card_targets(v, cp, 3.0, prior=0.0)[0, 9] == pytest.approx(math.e / (1 + math.e))
    # a 15-point gap overturns the reference's choice even at prior 1
    v[0, 9] = 25.0
    assert card_targets(v, cp, 3.0, prior=1.0)[0, 9] > 0.9


@pytest.mark.slow
def test_labels_reproducible_and_consistent_with_the_game(tiny, labels):
    again = label_chunk(tiny, 3, seed=5, chunk=0, samples=4)
    for k in ("seed", "scores", "bags", "moves", "agent_team"):
        np.testing.assert_array_equal(again[k], labels[k])
    np.testing.assert_array_equal(np.isnan(again["values"]), np.isnan(labels["values"]))
    np.testing.assert_array_equal(np.nan_to_num(again["values"]), np.nan_to_num(labels["values"]))
    assert np.isnan(labels["values"][:, :4]).all()  # bids carry no card values
    # replay each hand: valued cards are legal ones of the seat to move; the policy's team played
    # the policy's greedy card, the search's team its best-valued card (first on a tie)
    policy = CheckpointBot(tiny)
    searched = 0
    for h in range(3):
        g = SpadesGame(Rules(), seed=int(labels["seed"][h]))
        g.scores = [int(x) for x in labels["scores"][h]]
        g.bags = [int(x) for x in labels["bags"][h]]
        for k in range(56):
            p = g.current_player
            view = g.view(p)
            a = int(labels["moves"][h, k])
            vals = labels["values"][h, k]
            valued = np.nonzero(~np.isnan(vals))[0]
            assert set(valued) <= set(view.legal_actions)
            if k < 4 or (p & 1) == labels["agent_team"][h]:
                assert a == policy.act(view)
            elif len(valued) > 1:
                searched += 1
                best = vals[valued].max()
                assert a == valued[np.nonzero(vals[valued] == best)[0][0]]
            g.apply(a)
    assert searched > 0


@pytest.mark.slow
def test_card_values_labels_match_the_search_on_the_same_view(tiny):
    # the first card decision of a hand, labelled by a search with the chunk's seed, equals what
    # a PIMCBot with that seed computes on the same view (deals drawn in C, as the labels draw)
    rng = np.random.default_rng([9, 0])
    rng.integers(2**31)  # the policy's seed
    search = PIMCBot(seed=int(rng.integers(2**31)), samples=4, native_deals=True)
    s = int(rng.integers(2**63))
    g = SpadesGame(Rules(), seed=s)
    if rng.random() < 0.5:
        randomize_start(g, rng)
    rec = label_chunk(tiny, 1, seed=9, chunk=0, samples=4)
    for k in range(4):
        g.apply(int(rec["moves"][0, k]))
    cards, values = search.card_values(g.view(g.current_player))
    got = rec["values"][0, 4]
    np.testing.assert_allclose(got[cards], np.array(values, np.float16), rtol=0)


def _raw(path, labels, **over):
    """A version-1 label file written field by field (save_labels refuses bad fields itself)."""
    from spades_env.training.labels import FORMAT
    d = {"format": np.array(FORMAT), "version": np.array(1), "rules": np.array("standard"),
         **{k: labels[k] for k in ("seed", "scores", "bags", "moves", "agent_team", "values")}}
    d.update(over)
    np.savez(path, **d)
    return str(path)


@pytest.mark.slow
def test_label_files_round_trip_and_bad_files_are_refused(labels, tmp_path):
    p = tmp_path / "l.npz"
    save_labels(str(p), labels, "tiny.pt", 4, seed=5, chunk=0, source_sha256="ab")
    back = load_labels(str(p))
    assert (back["samples"], back["source"], back["run_seed"], back["chunk"],
            back["source_sha256"]) == (4, "tiny.pt", 5, 0, "ab")
    np.testing.assert_array_equal(back["moves"], labels["moves"])
    assert load_labels(_raw(tmp_path / "ok.npz", labels))["samples"] == 0
    bad = tmp_path / "bad.npz"
    bad.write_bytes(b"not a zip file")
    with pytest.raises(ValueError, match="bad.npz"):
        load_labels(str(bad))
    with pytest.raises(ValueError, match="values"):  # refused before writing
        save_labels(str(tmp_path / "s.npz"), dict(labels, values=labels["values"][:, :10]), "x", 4)
    assert not (tmp_path / "s.npz").exists()
    cases = {  # what is wrong -> the words of the refusal
        "short values": ({"values": labels["values"][:, :10]}, "values"),
        "foreign": ({"format": np.array("other")}, "not a spades_env.pimc_labels"),
        "version array": ({"version": np.array([1, 1])}, "single value"),
        "version text": ({"version": np.array("abc")}, "integer"),
        "0-d seed": ({"seed": np.array(5)}, "seed"),
        "action id": ({"moves": np.full_like(labels["moves"], 90)}, "action id"),
        "infinite value": ({"values": np.where(np.isnan(labels["values"]), labels["values"],
                                               np.float16(np.inf))}, "infinite"),
        "value on a bid": ({"values": np.concatenate([np.zeros_like(labels["values"][:, :1]),
                                                      labels["values"][:, 1:]], 1)}, "on a bid"),
        "rules": ({"rules": np.array("house")}, "standard rules"),
    }
    for name, (over, words) in cases.items():
        path = _raw(tmp_path / f"{name.replace(' ', '_')}.npz", labels, **over)
        with pytest.raises(ValueError, match=words):
            load_labels(path)


@pytest.mark.slow
def test_a_chunk_of_another_run_is_refused(tiny, labels, tmp_path):
    from spades_env.training.labels import check_chunk, file_sha256
    sha = file_sha256(tiny)
    p = str(tmp_path / "chunk_00000.npz")
    save_labels(p, labels, tiny, 4, seed=5, chunk=0, source_sha256=sha)
    check_chunk(p, sha, hands=3, seed=5, chunk=0, samples=4)  # this run's chunk: accepted
    for kw, words in (({"sha": "0" * 64}, "checkpoint"), ({"hands": 2}, "hands"),
                      ({"seed": 6}, "seed"), ({"samples": 8}, "samples")):
        args = dict(sha=sha, hands=3, seed=5, chunk=0, samples=4)
        args.update(kw)
        with pytest.raises(ValueError, match=words):
            check_chunk(p, **args)


def test_bad_inputs_of_the_helpers_are_refused():
    from spades_env.training.distill_targets import card_map
    from spades_env.training.labels import merge_labels
    for perm in ((0, 0, 1), (0, 1, 3), (0, 1), "012", (0.0, 1.0, 2.0)):
        with pytest.raises(ValueError, match="order of the side suits"):
            card_map(perm)
    v = np.full((1, 52), np.nan)
    v[0, :2] = [1.0, 2.0]
    for t in (0.0, -1.0, float("inf"), float("nan"), "3"):
        with pytest.raises(ValueError, match="temperature"):
            soft_targets(v, t)
    with pytest.raises(ValueError, match=r"\[N, 52\]"):
        soft_targets(np.zeros(52), 3.0)
    with pytest.raises(ValueError, match="prior"):
        card_targets(v, np.ones((1, 52)), 3.0, prior=2.0)
    with pytest.raises(ValueError, match="valued"):
        equivalence_classes(np.ones((2, 68), bool), np.ones((1, 52), bool))
    with pytest.raises(ValueError, match="no label chunks"):
        merge_labels([])


SHIPPED = "checkpoints/shipped/agent.pt"


@pytest.mark.slow
def test_distill_moves_card_play_to_the_search_and_keeps_the_bids():
    # the shipped agent's hands (a random network's bids make every card worth the same)
    labels = label_chunk(SHIPPED, 4, seed=5, chunk=0, samples=8)
    net = build_agent(load_checkpoint(SHIPPED), "cpu")
    import copy
    ds = build_dataset(labels, copy.deepcopy(net).eval(), temperature=3.0)
    assert ds["card"].sum() > 100 and (~ds["card"]).sum() == 16  # 4 hands x 4 bids
    rows = np.arange(len(ds["obs"]))
    before = evaluate_rows(net, ds, rows)
    assert before["bid_agree"] == 1.0  # the bid targets are the network's own
    torch.manual_seed(0)
    hist = distill(net, ds, epochs=60, lr=3e-3, batch=64, holdout=0.0, log=lambda *_: None)
    after = evaluate_rows(net, ds, rows)
    assert hist[-1]["loss"] < hist[1]["loss"]
    assert after["card_agree"] > before["card_agree"] + 0.2
    assert after["card_regret"] < before["card_regret"] / 2
    assert after["bid_agree"] == 1.0


def test_adam_is_fused_where_torch_has_the_kernel_and_steps_as_plain_adam():
    from spades_env.training.distill import adam
    torch.manual_seed(3)
    w1 = torch.nn.Parameter(torch.randn(40, 30))
    w2 = torch.nn.Parameter(w1.detach().clone())
    fused, plain = adam([w1], 1e-2), torch.optim.Adam([w2], lr=1e-2)
    version = tuple(int(x) for x in torch.__version__.split("+")[0].split(".")[:2])
    if version >= (2, 4):  # torch's fused CPU Adam came with 2.4
        assert fused.defaults["fused"] is True
    for step in range(5):
        g = torch.randn(40, 30) * (step + 1)
        w1.grad, w2.grad = g.clone(), g.clone()
        fused.step()
        plain.step()
    assert not torch.equal(w1, torch.zeros_like(w1))
    assert torch.allclose(w1, w2, atol=1e-6)  # 5 steps of 1e-2 each moved w by ~5e-2


def test_distill_makes_one_step_per_batch_of_rows(tiny, labels, monkeypatch):
    # a pass over the trained rows makes ceil(rows / batch) steps: batch is the rows of one step
    import copy

    from spades_env.training import distill as d
    net = build_agent(load_checkpoint(tiny), "cpu")
    ds = build_dataset(labels, copy.deepcopy(net).eval(), temperature=3.0)
    steps = []
    real = d.adam

    def counting(params, lr):
        opt = real(params, lr)
        opt.register_step_post_hook(lambda *_: steps.append(1))
        return opt

    monkeypatch.setattr(d, "adam", counting)
    n = len(ds["obs"])
    for batch in (7, 64):
        steps.clear()
        d.distill(net, ds, epochs=2, batch=batch, holdout=0.0, log=lambda *_: None)
        assert len(steps) == 2 * -(-n // batch), batch


def _pass_loss(net, ds, **kw) -> float:
    """The mean loss of one pass over every row at step size 0 (the network does not move)."""
    return distill(net, ds, epochs=1, lr=0.0, holdout=0.0, log=lambda *_: None, **kw)[1]["loss"]


def test_regret_weight_adds_each_card_row_s_expected_regret(tiny, labels, monkeypatch):
    import copy
    net = build_agent(load_checkpoint(tiny), "cpu")
    ds = build_dataset(labels, copy.deepcopy(net).eval(), temperature=3.0)
    card = ds["card"]
    n = len(ds["obs"])
    # by hand, for a policy uniform over the legal actions: a class's probability is its legal
    # cards over the legal cards, its regret the best value minus its value
    by_hand = 0.0
    for i in np.flatnonzero(card):
        legal = np.flatnonzero(ds["mask"][i, :52])
        v = ds["values"][i]
        best = np.nanmax(v)
        for c in legal:
            by_hand += (best - v[ds["rep"][i, c]]) / len(legal)
    assert by_hand > 0
    monkeypatch.setattr(net, "policy_logits",
                        lambda x: torch.zeros(len(x), 68, requires_grad=True))
    plain = _pass_loss(net, ds, augment=False)
    for augment in (False, True):  # the side suits relabelled: the same regrets, relabelled
        torch.manual_seed(0)
        got = _pass_loss(net, ds, augment=augment, regret_weight=0.5)
        assert got == pytest.approx(plain + 0.5 * by_hand / n, rel=1e-5), augment
    # the network's own policy: sum over classes of its class probability times the regret
    monkeypatch.undo()
    with torch.no_grad():
        x = torch.as_tensor(expand(ds["obs"], ds["table"]))
        p = torch.softmax(net.masked(net.policy_logits(x), torch.as_tensor(ds["mask"])),
                          -1).numpy().astype(np.float64)
    ci = np.flatnonzero(card)
    pc = np.zeros((len(ci), 53))
    np.add.at(pc, (np.arange(len(ci))[:, None], ds["rep"][ci]), p[ci, :52])
    v = ds["values"][ci].astype(np.float64)
    reg = np.nan_to_num(np.nanmax(v, 1, keepdims=True) - v, nan=0.0)
    expected = (pc[:, :52] * reg).sum() / n
    got = _pass_loss(net, ds, augment=False, regret_weight=2.0) - _pass_loss(net, ds,
                                                                            augment=False)
    assert got == pytest.approx(2.0 * expected, rel=1e-4)


def test_pass_plan_by_hand():
    from spades_env.training.distill import pass_plan
    # 1 pass in 30 s, 95 s left: 3 more fit (90 s), so 4 of 10
    assert pass_plan(1, 10, 30.0, 95.0) == 4
    assert pass_plan(2, 10, 60.0, 95.0) == 5  # 30 s a pass: 3 more
    assert pass_plan(2, 10, 60.0, 29.0) == 2  # none more fits: stop after the second
    assert pass_plan(3, 10, 30.0, -5.0) == 3  # past the deadline
    assert pass_plan(1, 10, 30.0, 1e6) == 10  # never more than asked
    assert pass_plan(1, 10, 0.0, 0.0) == 10  # no time measured: no cut


@pytest.mark.slow
def test_a_fit_with_a_deadline_cuts_its_passes_and_ends_its_step_size_at_0(tiny, labels,
                                                                          monkeypatch):
    import copy
    import time

    import spades_env.training.distill as dm
    net = build_agent(load_checkpoint(tiny), "cpu")
    ds = build_dataset(labels, copy.deepcopy(net).eval(), temperature=3.0)
    n_rows, batch = len(ds["obs"]), 64
    per_pass = -(-n_rows // batch)
    # a deadline already past: one pass, whatever epochs asks
    logs: list[str] = []
    hist = distill(copy.deepcopy(net), ds, epochs=4, batch=batch, holdout=0.0, log=logs.append,
                   deadline=time.time() - 1)
    assert [h["epoch"] for h in hist] == [0, 1]
    assert any(m.startswith("the fit makes 1 of its 4 passes") for m in logs)
    # a plan cut from 6 to 3 passes after the first: the step size falls by lr/(6 passes) a step
    # in pass 1, then linearly from there to exactly 0 at the end of pass 3
    lrs: list[float] = []

    class Recorded(torch.optim.lr_scheduler.LambdaLR):
        def step(self, *a, **k):
            super().step(*a, **k)
            lrs.append(self.get_last_lr()[0])

    monkeypatch.setattr(torch.optim.lr_scheduler, "LambdaLR", Recorded)
    monkeypatch.setattr(dm, "pass_plan", lambda done, epochs, sec, left: 3)
    hist = distill(net, ds, epochs=6, lr=1e-3, batch=batch, holdout=0.0,
                   log=lambda *_: None, deadline=time.time() + 3600)
    assert [h["epoch"] for h in hist] == [0, 1, 2, 3]
    assert lrs[0] == 1e-3  # LambdaLR's own first step, at its creation
    del lrs[0]
    assert len(lrs) == 3 * per_pass
    total = 6 * per_pass
    assert lrs[per_pass - 1] == pytest.approx(1e-3 * (1 - per_pass / total))
    f0, left = 1 - per_pass / total, 2 * per_pass
    for j in (1, per_pass, left):
        assert lrs[per_pass - 1 + j] == pytest.approx(1e-3 * f0 * (1 - j / left), abs=1e-12)
    assert lrs[-1] == 0.0
    # cut from 6 to 3 after pass 1, grown back to 4 after pass 2 (quicker passes): pass 2 falls
    # from 5/6 toward 0 at the end of pass 3 and ends at 5/12; then from 5/12 to exactly 0 at the
    # end of pass 4. The plan asks pass_plan for up to the 6 passes asked, not the 3 of the cut
    lrs.clear()
    plans, asked = iter([3, 4, 4]), []
    monkeypatch.setattr(dm, "pass_plan",
                        lambda done, epochs, sec, left: asked.append(epochs) or next(plans))
    logs = []
    hist = distill(net, ds, epochs=6, lr=1e-3, batch=batch, holdout=0.0, log=logs.append,
                   deadline=time.time() + 3600)
    assert [h["epoch"] for h in hist] == [0, 1, 2, 3, 4] and asked == [6, 6, 6]
    assert [m[:33] for m in logs if m.startswith("the fit makes")] == [
        "the fit makes 3 of its 6 passes: ", "the fit makes 4 of its 6 passes: "]
    del lrs[0]
    assert len(lrs) == 4 * per_pass
    assert lrs[2 * per_pass - 1] == pytest.approx(1e-3 * 5 / 12)
    for j in (1, per_pass, 2 * per_pass):
        assert lrs[2 * per_pass - 1 + j] == pytest.approx(1e-3 * 5 / 12 * (1 - j / (2 * per_pass)),
                                                          abs=1e-12)
    assert lrs[-1] == 0.0


@pytest.mark.slow
def test_side_suit_relabelling_is_the_observation_of_the_relabelled_game():
    # deal a hand, relabel the side suits of the deal (hearts -> clubs -> diamonds -> hearts) and
    # replay the relabelled moves: every seat's observation and legal actions of the relabelled
    # game are the original ones moved by suit_permutation's index arrays
    from spades_env.cards import NUM_ACTIONS
    from spades_env.observation import encode
    from spades_env.training.distill_targets import card_map, suit_permutation
    perm = (1, 2, 0)
    cm = card_map(perm)
    assert cm[parse_card_id("2C")] == parse_card_id("2D") and cm[parse_card_id("AH")] == \
        parse_card_id("AC") and cm[parse_card_id("QS")] == parse_card_id("QS")
    oi, ai = suit_permutation(perm)
    g = SpadesGame(Rules(), seed=11)
    hands = [[int(cm[c]) for c in range(52) if g.hands[s] >> c & 1] for s in range(4)]
    h = SpadesGame.from_deal(hands, g.dealer)
    policy = CheckpointBot("checkpoints/shipped/agent.pt")
    checked = 0
    while g.hand_number < 1:
        p = g.current_player
        assert h.current_player == p
        for seat in range(4):
            np.testing.assert_array_equal(encode(h.view(seat)), encode(g.view(seat))[oi])
        m = np.zeros(NUM_ACTIONS, bool)
        m[list(g.view(p).legal_actions)] = True
        m2 = np.zeros(NUM_ACTIONS, bool)
        m2[list(h.view(p).legal_actions)] = True
        np.testing.assert_array_equal(m2, m[ai])
        a = policy.act(g.view(p))
        g.apply(a)
        h.apply(int(cm[a]) if a < 52 else a)
        checked += 1
    assert checked == 56
    assert h.hand_results[0].teams[0].hand_points == g.hand_results[0].teams[0].hand_points


def parse_card_id(text):
    from spades_env.cards import parse_card
    return parse_card(text)


@pytest.mark.slow
def test_bid_rows_hold_the_reference_greedy_bids(tiny):
    from spades_env.training.distill_targets import bid_rows
    net = build_agent(load_checkpoint(tiny), "cpu")
    rows = bid_rows(net, 3, seed=2)
    assert rows["obs"].shape[0] == 12 and not rows["card"].any()
    assert (rows["target"].sum(1) == 1).all()
    # every row is a bid decision (no card legal) and its target is the reference's greedy bid
    assert not rows["mask"][:, :52].any()
    with torch.no_grad():
        lg = net.masked(net.policy_logits(torch.as_tensor(expand(rows["obs"], rows["table"]))),
                        torch.as_tensor(rows["mask"]))
    np.testing.assert_array_equal(rows["target"].argmax(1), lg.argmax(-1).numpy())
    again = bid_rows(net, 3, seed=2)
    np.testing.assert_array_equal(again["obs"], rows["obs"])


def test_bid_rows_in_blocks_are_each_deals_bids_in_order(tiny, monkeypatch):
    # blocks of 2 deals (5 deals: 2 + 2 + 1): row 4d + k is bid k of deal d, the deal drawn from
    # the same random numbers as one deal at a time, with the bids before it applied
    from spades_env.compact import pack
    from spades_env.observation import OBS_SIZE, encode
    from spades_env.training import distill_targets as dt
    net = build_agent(load_checkpoint(tiny), "cpu")
    monkeypatch.setattr(dt, "BID_BLOCK", 2)
    rows = dt.bid_rows(net, 5, seed=4)
    rng = np.random.default_rng([4, 1 << 20])
    for d in range(5):
        g = SpadesGame(Rules(), seed=int(rng.integers(2**63)))
        if rng.random() < 0.5:
            randomize_start(g, rng)
        for k in range(4):
            r = 4 * d + k
            x = np.zeros((1, OBS_SIZE), np.float32)
            v = g.view(g.current_player)
            encode(v, x[0])
            assert np.array_equal(rows["obs"][r], pack(x)[0]), (d, k)
            assert rows["mask"][r].nonzero()[0].tolist() == sorted(v.legal_actions)
            g.apply(int(rows["target"][r].argmax()))
    monkeypatch.setattr(dt, "BID_BLOCK", 4096)
    np.testing.assert_array_equal(dt.bid_rows(net, 5, seed=4)["target"], rows["target"])


@pytest.mark.slow
def test_command_line_labels_distils_and_writes_a_playable_checkpoint(tiny, tmp_path):
    from spades_env.training.distill import main
    out = tmp_path / "d.pt"
    rc = main([tiny, "--out", str(out), "--chunks", "1", "--chunk-hands", "2",
               "--samples", "2", "--workers", "1", "--epochs", "1", "--bid-deals", "5"])
    assert rc == 0
    data = load_checkpoint(str(out))
    assert data["distill"]["hands"] == 2 and data["distill"]["samples"] == 2
    assert data["distill"]["precision"] == "fp32"  # the command's default
    assert data["distill"]["batch"] == 512 and data["distill"]["lr"] == 1e-3  # the defaults
    assert data["distill"]["drop_flat"] is False
    assert len(data["distill"]["history"]) == 2
    bot = CheckpointBot(str(out))
    g = SpadesGame(Rules(), seed=4)
    assert bot.act(g.view(g.current_player)) in g.view(g.current_player).legal_actions
    # a second run over the same folder reuses the labelled chunk (resume)
    labels = sorted((tmp_path / "d_labels").glob("chunk_*.npz"))
    assert len(labels) == 1
    before = labels[0].stat().st_mtime_ns
    assert main([tiny, "--out", str(out), "--chunks", "1", "--chunk-hands", "2",
                 "--samples", "2", "--workers", "1", "--epochs", "1", "--bid-deals", "5"]) == 0
    assert labels[0].stat().st_mtime_ns == before
    # --hidden/--head-hidden widen the network (same labels): the output plays at its new shape
    wide = tmp_path / "w.pt"
    assert main([tiny, "--out", str(wide), "--labels", str(tmp_path / "d_labels"),
                 "--chunks", "1", "--chunk-hands", "2", "--samples", "2", "--workers", "1",
                 "--epochs", "1", "--bid-deals", "5", "--hidden", "48",
                 "--head-hidden", "24"]) == 0
    data = load_checkpoint(str(wide))
    assert data["model_shape"]["hidden"] == [48] and data["model_shape"]["head_hidden"] == 24
    assert data["model"]["trunk.0.weight"].shape == (48, 711)
    assert data["distill"]["widened_from"] == {"hidden": [32], "head_hidden": 16}
    assert data["config"]["hidden"] == [48] and data["config"]["head_hidden"] == 24
    assert CheckpointBot(str(wide)).act(g.view(g.current_player)) in \
        g.view(g.current_player).legal_actions
    # regression (found by a helper): the widened units' start came from torch's unseeded global
    # RNG, so the same command gave another network each time; now it is seeded by --seed
    torch.rand(1000)  # whatever the process drew before
    wide2 = tmp_path / "w2.pt"
    assert main([tiny, "--out", str(wide2), "--labels", str(tmp_path / "d_labels"),
                 "--chunks", "1", "--chunk-hands", "2", "--samples", "2", "--workers", "1",
                 "--epochs", "1", "--bid-deals", "5", "--hidden", "48",
                 "--head-hidden", "24"]) == 0
    m1, m2 = data["model"], load_checkpoint(str(wide2))["model"]
    assert m1.keys() == m2.keys() and all(torch.equal(m1[k], m2[k]) for k in m1)
    # a second round: hands played by the widened network (seed 2: other deals), plus the first
    # round's labels (--also-labels); both are in the data set, and a folder without chunks is
    # refused before any work
    r2 = tmp_path / "r2.pt"
    round2 = [str(wide), "--out", str(r2), "--chunks", "1", "--chunk-hands", "3",
              "--samples", "2", "--workers", "1", "--epochs", "1", "--bid-deals", "5",
              "--seed", "2"]
    assert main([*round2, "--also-labels", str(tmp_path / "d_labels"),
                 "--precision", "bf16", "--batch", "3", "--lr", "2e-3", "--drop-flat"]) == 0
    data = load_checkpoint(str(r2))
    assert data["distill"]["precision"] == "bf16"
    assert data["distill"]["batch"] == 3 and data["distill"]["lr"] == 2e-3
    assert data["distill"]["drop_flat"] is True
    assert data["distill"]["hands"] == 3 + 2 and data["distill"]["own_hands"] == 3
    assert data["distill"]["also_labels"] == [str(tmp_path / "d_labels")]
    assert main([*round2, "--also-labels", str(tmp_path)]) == 2
    # bad input: a missing source checkpoint is an error message, not a traceback
    assert main([str(tmp_path / "none.pt"), "--out", str(out)]) == 2


@pytest.mark.slow
def test_command_line_refuses_bad_input_before_any_work(tiny, labels, tmp_path, capsys):
    from spades_env.training.distill import main
    from spades_env.training.labels import file_sha256
    out = str(tmp_path / "o.pt")
    base = [tiny, "--out", out, "--chunks", "1", "--chunk-hands", "3", "--samples", "4",
            "--workers", "1", "--epochs", "1", "--bid-deals", "5", "--seed", "5"]
    for flag, value, words in (("--samples", "0", "--samples must be"),
                               ("--chunk-hands", "0", "--chunk-hands must be"),
                               ("--workers", "0", "--workers must be"),
                               ("--seed", "-1", "--seed must be"),
                               ("--temperature", "0", "--temperature must be"),
                               ("--prior", "2", "--prior must be"),
                               ("--lr", "nan", "--lr must be"),
                               ("--batch", "0", "--batch must be"),
                               ("--regret-weight", "-1", "--regret-weight must be"),
                               ("--epochs", "0", "--epochs must be"),
                               ("--bid-deals", "1000000000", "--bid-deals must be"),
                               ("--chunks", "0", "--chunks must be"),
                               ("--minutes", "-1", "--minutes must be")):
        args = base + [flag, value]
        assert main(args) == 2, flag
        assert words in capsys.readouterr().err
    for extra, words in ((["--hidden", "wide"], "--hidden must be comma-separated integers"),
                         (["--hidden", "16"], "only grows"),
                         (["--hidden", "64,64"], "number of trunk layers"),
                         (["--head-hidden", "8"], "only grows"),
                         (["--hidden", "16384", "--head-hidden", "16384"], "parameters, over")):
        assert main(base + extra) == 2, extra
        assert words in capsys.readouterr().err
    a_file = tmp_path / "file.txt"
    a_file.write_text("x")
    assert main(base + ["--labels", str(a_file)]) == 2
    assert "is a file" in capsys.readouterr().err
    # a labels folder holding a chunk of another run (other seed), or a corrupt chunk
    folder = tmp_path / "lab"
    save_labels(str(folder / "chunk_00000.npz"), labels, tiny, 4, seed=6, chunk=0,
                source_sha256=file_sha256(tiny))
    assert main(base + ["--labels", str(folder)]) == 2
    assert "another labelling run" in capsys.readouterr().err
    (folder / "chunk_00000.npz").write_bytes(b"garbage")
    assert main(base + ["--labels", str(folder)]) == 2
    assert "not a readable PIMC label file" in capsys.readouterr().err
    assert not os.path.exists(out)
    # this run's own chunk is kept and used
    save_labels(str(folder / "chunk_00000.npz"), labels, tiny, 4, seed=5, chunk=0,
                source_sha256=file_sha256(tiny))
    assert main(base + ["--labels", str(folder)]) == 0
    assert "kept from an earlier run" in capsys.readouterr().out
    assert load_checkpoint(out)["distill"]["hands"] == 3


@pytest.mark.slow
def test_a_diverging_run_stops_with_an_error(tiny, labels):
    import copy
    net = build_agent(load_checkpoint(tiny), "cpu")
    ds = build_dataset(labels, copy.deepcopy(net).eval(), temperature=3.0)
    ds["target"][:] = np.nan  # what a blown-up run feeds the loss
    with pytest.raises(ValueError, match="diverged"):
        distill(net, ds, epochs=1, holdout=0.0, log=lambda *_: None)


@pytest.mark.slow
def test_label_chunk_and_save_labels_check_their_arguments(tiny, labels, tmp_path):
    for kw, words in (({"hands": 0}, "hands"), ({"samples": 0}, "samples"),
                      ({"random_start": True}, "random_start"), ({"seed": -1}, "seed"),
                      ({"chunk": None}, "chunk")):
        args = dict(checkpoint=tiny, hands=1, seed=1, chunk=0, samples=2)
        args.update(kw)
        with pytest.raises(ValueError, match=words):
            label_chunk(**args)
    with pytest.raises(FileNotFoundError):
        label_chunk(str(tmp_path / "none.pt"), 1, 1, 0, 2)
    with pytest.raises(ValueError, match="samples must be int"):
        save_labels(str(tmp_path / "x.npz"), labels, "src", "4")


@pytest.mark.slow
def test_equivalence_classes_agree_with_the_game_state(labels):
    # differential check against the positions themselves: a legal card the search did not value
    # belongs to a valued card below it in its suit, and every card ranked between the two is in
    # the seat's hand or was played to an earlier trick (so the two cards are interchangeable)
    merged = 0
    for h in range(len(labels["seed"])):
        g = SpadesGame(Rules(), seed=int(labels["seed"][h]))
        g.scores = [int(x) for x in labels["scores"][h]]
        g.bags = [int(x) for x in labels["bags"][h]]
        for k in range(56):
            view = g.view(g.current_player)
            vals = labels["values"][h, k].astype(np.float64)
            valued = ~np.isnan(vals)
            if valued.sum() > 1:
                mask = np.zeros((1, 68), bool)
                mask[0, list(view.legal_actions)] = True
                rep = equivalence_classes(mask, valued[None])[0]
                in_trick = {c for _s, c in view.current_trick}
                gone = {c for c in range(52) if view.hand >> c & 1
                        or any(view.played[s] >> c & 1 for s in range(4))} - in_trick
                for c in view.legal_actions:
                    r = int(rep[c])
                    assert valued[r] and r // 13 == c // 13 and r <= c
                    assert all(x in gone for x in range(r + 1, c)), (h, k, c, r)
                    merged += r != c
            g.apply(int(labels["moves"][h, k]))
    assert merged > 0


def _nano_run(tmp_path, name, **over):
    """A training config small enough for a stage test: a few PPO iterations, no warm start."""
    from spades_env.training import config as cfg
    return cfg.from_dict({
        "name": name, "num_envs": 6, "num_steps": 56, "total_decisions": 700,
        "hidden": [32], "head_hidden": 16, "bc_teacher": "", "pool_bots": ["random"],
        "save_every": 1, "eval_every": 0, "eval_opponents": ["random"], "final_eval_deals": 2,
        "progress": False, "num_minibatches": 2, "random_start": 0.0, "seed": 3,
        "runs_dir": str(tmp_path / "runs"), "checkpoint_dir": str(tmp_path / "ck"), **over})


@pytest.mark.slow
def test_distillation_stage_of_a_training_run_and_of_a_resumed_finished_run(tmp_path):
    # configs/long.yaml ends with this stage; the shipped agent came from resuming a finished PPO
    # run with the stage added, so both paths are checked: PPO is not redone, the distilled
    # network is widened, is the final evaluation's network, and a finished stage is not redone
    from spades_env.training import config as cfg
    from spades_env.training.ppo_selfplay import train
    base = _nano_run(tmp_path, "nano")
    ppo = train(base, log=lambda *x: None)
    assert ppo["checkpoint"].endswith("latest.pt")
    stage = {"distill_minutes": 0.01, "distill_hidden": [48], "distill_head_hidden": 24,
             "distill_samples": 4, "distill_epochs": 1, "distill_workers": 1,
             "distill_bid_deals": 20, "distill_precision": "bf16", "distill_batch": 64,
             "distill_lr": 2e-3, "distill_regret_weight": 0.5}
    logs: list[str] = []
    out = train(cfg.from_dict(stage, base), resume=ppo["checkpoint"], log=logs.append)
    assert out["checkpoint"] == os.path.join(str(tmp_path / "ck" / "nano"), "distilled.pt")
    assert (out["iterations"], out["decisions"]) == (ppo["iterations"], ppo["decisions"])
    d = load_checkpoint(out["checkpoint"])
    assert d["model_shape"]["hidden"] == [48] and d["model_shape"]["head_hidden"] == 24
    assert d["distill"]["widened_from"] == {"hidden": [32], "head_hidden": 16}
    assert d["distill"]["hands"] == 50  # one chunk of 50 hands: the budget ends after the first
    latest = load_checkpoint(ppo["checkpoint"])
    assert latest["progress"]["distill"]["hands"] == 50
    # the config's precision reaches the fit, which records it in both files
    assert d["distill"]["precision"] == latest["progress"]["distill"]["precision"] == "bf16"
    assert d["distill"]["batch"] == 64 and d["distill"]["lr"] == 2e-3  # and the batch and lr
    assert d["distill"]["regret_weight"] == 0.5  # and the regret term's weight
    assert latest["eval"][-1]["network"] == "distilled" and latest["eval"][-1]["final"]
    assert latest["model_shape"]["hidden"] == [32]  # latest.pt keeps the PPO network
    CheckpointBot(out["checkpoint"])  # plays
    assert any(m.startswith("search distillation:") for m in logs)
    # the end summary's stages: PPO (before the resume), the round, the final evaluation
    names = [s[0] for s in out["stages"]]
    assert names[-3:] == ["PPO", "distillation round 1", "final evaluation"], names
    assert out["stages"][-2][2].startswith("50 hands labelled in ")
    mtime = os.path.getmtime(out["checkpoint"])
    logs.clear()
    again = train(cfg.from_dict(stage, base), resume=ppo["checkpoint"], log=logs.append)
    assert again["checkpoint"] == out["checkpoint"]
    assert not any(m.startswith("search distillation:") for m in logs)
    assert any(m.startswith("search distillation already done") for m in logs)
    assert os.path.getmtime(out["checkpoint"]) == mtime
    # a stage stopped before its end (no distilled.pt yet) resumes with the chunks it made, though
    # latest.pt has been rewritten since: the labels' source is the PPO network's own file
    os.remove(out["checkpoint"])
    logs.clear()
    third = train(cfg.from_dict(stage, base), resume=ppo["checkpoint"], log=logs.append)
    assert third["checkpoint"] == out["checkpoint"] and os.path.exists(out["checkpoint"])
    assert any("kept from an earlier run" in m for m in logs)
    assert load_checkpoint(out["checkpoint"])["distill"]["hands"] == 50
    # its label minutes are this call's only: the summary says the hands were kept (a helper
    # found a resumed round's minutes too low with no word why)
    rec = load_checkpoint(ppo["checkpoint"])["progress"]["distill"]
    assert rec["kept_hands"] == 50 and latest["progress"]["distill"]["kept_hands"] == 0
    assert third["stages"][-2][2].endswith("(50 kept from a stopped run, whose minutes are not "
                                           "counted)")
    # more PPO after a finished stage: the stage runs again, from the new PPO network (it used to
    # report the old distilled network as the final one)
    more = train(cfg.from_dict({**stage, "total_decisions": 1400}, base),
                 resume=ppo["checkpoint"], log=lambda *x: None)
    assert more["iterations"] > ppo["iterations"]
    d2 = load_checkpoint(more["checkpoint"])
    assert d2["progress"]["iteration"] == more["iterations"]
    assert load_checkpoint(ppo["checkpoint"])["progress"]["distill"]["ppo_iteration"] \
        == more["iterations"]


def test_round_deadline_shares_the_time_left_by_hand():
    from spades_env.training.distill_stage import round_deadline
    assert round_deadline(None, 100.0, 2) is None
    assert round_deadline(1000.0, 400.0, 2) == 700.0  # 600 s left, half of it for this round
    assert round_deadline(1000.0, 400.0, 1) == 1000.0  # the last round: all of it
    assert round_deadline(1000.0, 1200.0, 3) == 1200.0  # past: now (one pass)


def test_stage_minutes_and_beside_hands_by_hand(tmp_path):
    from spades_env.training import config as cfg
    from spades_env.training.distill_stage import beside_hands, stage_minutes
    args = cfg.from_dict({"distill_epochs": 10, "distill_bid_deals": 50000, "distill_rounds": 1,
                          "distill_minutes": 0.0, "distill_beside_ppo": 1})
    # 40,000 hands: 40,000 x (35.3 + 4) + 4 x 50,000 = 1,772,000 rows; 10 passes over 95% of
    # them at 20 us x 1.25: 420.85 s; besides them 20 + 40,000 x 1e-3 + 50,000 x 0.25e-3 = 72.5 s
    assert stage_minutes(args, 40000, 20e-6) == pytest.approx((420.85 + 72.5) / 60)
    # without the flat card rows: 40,000 x (35.3 x 0.89 + 4) + 200,000 = 1,616,680 rows, 10
    # passes over 95% of them at 25 us: 383.9615 s
    flat = cfg.from_dict({"distill_drop_flat": True}, args)
    assert stage_minutes(flat, 40000, 20e-6) == pytest.approx((383.9615 + 72.5) / 60)
    # two rounds of 1 label minute on 2 processes at 50 hands a second: 6,000 more hands each,
    # 6,000 x 39.3 = 235,800 rows more and 6 s more per round; round 1 also has the 40,000
    two = cfg.from_dict({"distill_rounds": 2, "distill_minutes": 1.0, "distill_workers": 2}, args)
    r1 = 1 + (10 * 0.95 * (1772000 + 235800) * 25e-6 + 72.5 + 6) / 60
    r2 = 1 + (10 * 0.95 * (200000 + 235800) * 25e-6 + 20 + 6 + 12.5) / 60
    assert stage_minutes(two, 40000, 20e-6, label_rate=50.0) == pytest.approx(r1 + r2)
    # two networks' folders beside PPO, 3 and 2 chunks (and a file that is not one)
    for folder, n in (("labels_beside_it0", 3), ("labels_beside_it200", 2)):
        os.makedirs(tmp_path / folder)
        for k in range(n):
            (tmp_path / folder / f"chunk_{k:05d}.npz").write_bytes(b"")
    (tmp_path / "labels_beside_it200" / "chunk_00002.npz.tmp").write_bytes(b"")
    progress = {"beside_done": [{"iteration": 0, "checkpoint": "label_policy.pt",
                                 "labels": "labels_beside_it0"}],
                "beside": {"iteration": 200, "checkpoint": "label_policy_it200.pt",
                           "labels": "labels_beside_it200"}}
    assert beside_hands(args, progress, str(tmp_path)) == 5 * 50
    assert beside_hands(args, {}, str(tmp_path)) == 0


@pytest.mark.slow
def test_run_minutes_end_ppo_when_the_stage_estimate_fills_the_time_left(tmp_path):
    # no labels beside PPO: the stage's estimate is its 0.01 label minutes and 20 s of round
    # (ROUND_SECONDS), 0.343 min; with run_minutes 0.4 PPO stops after about 3 s, long before its
    # total_decisions
    from spades_env.training.ppo_selfplay import train
    logs: list[str] = []
    run = _nano_run(tmp_path, "planned", total_decisions=10**7, distill_minutes=0.01,
                    distill_hidden=[48], distill_samples=4, distill_epochs=2,
                    distill_workers=1, distill_bid_deals=20, run_minutes=0.4)
    out = train(run, log=logs.append)
    assert out["stop_reason"] == "run_minutes"
    assert 1 <= out["iterations"] and out["decisions"] < 10**6
    assert any(m.startswith("run_minutes 0.4: a row of the distillation fit takes ")
               for m in logs)
    stop = [m for m in logs if m.startswith("run_minutes: ")]
    assert len(stop) == 1 and "estimate 0.3 min (0 hands labelled beside PPO) reach 0.4" in stop[0]
    assert load_checkpoint(out["checkpoint"])["distill"]["passes"] == 2  # the fit keeps both


def test_fit_probe_times_the_round_s_network_and_leaves_the_run_as_it_was():
    from spades_env.agents.model import Agent
    from spades_env.training import config as cfg
    from spades_env.training.distill import fit_row_seconds
    from spades_env.training.distill_stage import fit_probe
    args = cfg.from_dict({"hidden": [32], "head_hidden": 16, "distill_hidden": [48],
                          "distill_head_hidden": 24, "distill_threads": 1,
                          "distill_precision": "fp32", "run_minutes": 5})
    torch.manual_seed(7)
    net = Agent(hidden=[32], head_hidden=16)
    before = [p.detach().clone() for p in net.parameters()]
    rng, threads = torch.get_rng_state(), torch.get_num_threads()
    logs: list[str] = []
    row_s = fit_probe(args, net, logs.append)
    assert 0 < row_s < 1e-2 and math.isfinite(row_s)
    assert torch.equal(torch.get_rng_state(), rng) and torch.get_num_threads() == threads
    assert all(torch.equal(a, b) for a, b in zip(before, net.parameters()))  # a copy was fitted
    assert logs[0].startswith("run_minutes 5: a row of the distillation fit takes ")
    assert "(1 thread(s), fp32)" in logs[0]
    assert 0 < fit_row_seconds(net, rows=512) < 1e-2


def test_fit_row_seconds_leaves_out_the_first_pass_and_takes_the_median(monkeypatch):
    # the first pass of new shapes makes their kernels (146 microseconds a row against 25 after
    # it on 2026-12-07): untimed; then the median of the timed passes
    from spades_env.agents.model import Agent
    from spades_env.training import distill as d
    seconds = iter([0.3, 0.01, 0.2, 0.05])
    rows = []

    def fake(net, data, **kw):
        rows.append((len(data["obs"]), kw["batch"]))
        time.sleep(next(seconds))

    monkeypatch.setattr(d, "distill", fake)
    got = d.fit_row_seconds(Agent(hidden=[32], head_hidden=16), rows=1000, batch=256)
    assert rows == [(500, 256), (1000, 256), (1000, 256), (1000, 256)]  # the round's batch
    assert got == pytest.approx(0.05 / 1000, rel=0.3)  # the median of 0.01, 0.2 and 0.05 s (their mean: 0.087)


@pytest.mark.slow
def test_run_minutes_cut_the_stage_fit_so_the_run_ends_on_time(tmp_path, monkeypatch):
    # configs/default.yaml: on a slower host the round's fit makes fewer passes (run_minutes)
    import time

    import spades_env.training.ppo_selfplay as ps
    seen: list = []
    real = ps.distill_stage

    def spy(*a, **k):
        r = real(*a, **k)
        seen.append((time.time(), a[7]))  # the deadline _finish passes
        return r

    monkeypatch.setattr(ps, "distill_stage", spy)
    stage = dict(distill_minutes=0.01, distill_hidden=[48], distill_samples=4,
                 distill_epochs=3, distill_workers=1, distill_bid_deals=20)
    # 10 minutes: the stage ends 10 minutes after the run began at the latest, and the fit has
    # time for its 3 passes
    t0 = time.time()
    out = ps.train(_nano_run(tmp_path, "roomy", run_minutes=10, **stage), log=lambda *_: None)
    (t, deadline), = seen
    assert t0 + 600 <= deadline <= t + 600
    assert load_checkpoint(out["checkpoint"])["distill"]["passes"] == 3
    # none: no deadline
    seen.clear()
    ps.train(_nano_run(tmp_path, "free", run_minutes=0, **dict(stage, distill_epochs=1)),
             log=lambda *_: None)
    assert seen[0][1] is None
    # spent before the stage: the log says so and the fit makes 1 of its 3 passes
    logs: list[str] = []
    out = ps.train(_nano_run(tmp_path, "late", run_minutes=0.001, **stage), log=logs.append)
    d = load_checkpoint(out["checkpoint"])
    assert [h["epoch"] for h in d["distill"]["history"]] == [0, 1]
    assert d["distill"]["passes"] == 1 and d["distill"]["epochs"] == 3
    assert any(m.startswith("run_minutes (0.001) are spent before the distillation stage")
               for m in logs)
    assert any(m.startswith("the fit makes 1 of its 3 passes") for m in logs)
    latest = load_checkpoint(os.path.join(str(tmp_path / "ck" / "late"), "latest.pt"))
    assert latest["progress"]["distill"]["passes"] == 1
    assert any(m.startswith("distilled ") and ", 1 pass, " in m for m in logs)


@pytest.mark.slow
def test_a_stage_of_several_rounds_chains_them_and_resumes_round_by_round(tmp_path):
    # configs/long.yaml runs three rounds: round k starts from round k-1's file, on its own hands
    # (seed + k - 1), only round 1 widens, distilled.pt is the last round, and a resumed stage
    # keeps the finished rounds (also when rounds are added) and redoes every round after a lost one
    from spades_env.training import config as cfg
    from spades_env.training.distill_stage import distill_round_paths
    from spades_env.training.ppo_selfplay import train
    base = _nano_run(tmp_path, "chain")
    ppo = train(base, log=lambda *x: None)
    stage = {"distill_minutes": 0.01, "distill_rounds": 2, "distill_hidden": [48],
             "distill_head_hidden": 24, "distill_samples": 4, "distill_epochs": 1,
             "distill_workers": 1, "distill_bid_deals": 20}
    folder = str(tmp_path / "ck" / "chain")
    r1, r2 = (os.path.join(folder, f"distilled_round{k}.pt") for k in (1, 2))
    assert distill_round_paths(os.path.join(folder, "distilled.pt"), 2) == [r1, r2]
    assert distill_round_paths("x/distilled.pt", 1) == ["x/distilled.pt"]
    logs: list[str] = []
    out = train(cfg.from_dict(stage, base), resume=ppo["checkpoint"], log=logs.append)
    assert out["checkpoint"] == os.path.join(folder, "distilled.pt")
    d1, d2 = load_checkpoint(r1), load_checkpoint(r2)
    assert d1["source"] == os.path.join(folder, "ppo_final.pt") and d2["source"] == r1
    assert (d1["distill"]["seed"], d2["distill"]["seed"]) == (3, 4)
    assert d1["distill"]["widened_from"] == {"hidden": [32], "head_hidden": 16}
    assert d2["distill"]["widened_from"] is None and d2["model_shape"]["hidden"] == [48]
    assert os.path.isdir(os.path.join(folder, f"distilled_round2_labels_it{ppo['iterations']}"))
    assert open(out["checkpoint"], "rb").read() == open(r2, "rb").read()
    rounds = load_checkpoint(ppo["checkpoint"])["progress"]["distill_rounds"]
    assert [(r["round"], os.path.basename(r["checkpoint"])) for r in rounds] \
        == [(1, "distilled_round1.pt"), (2, "distilled_round2.pt")]
    assert sum(m.startswith("search distillation: round") for m in logs) == 2
    # one more round: rounds 1 and 2 are kept (files untouched), round 3 starts from round 2
    t1, t2 = os.path.getmtime(r1), os.path.getmtime(r2)
    logs.clear()
    more = train(cfg.from_dict({**stage, "distill_rounds": 3}, base), resume=ppo["checkpoint"],
                 log=logs.append)
    r3 = os.path.join(folder, "distilled_round3.pt")
    assert sum(m.startswith("search distillation already done: round") for m in logs) == 2
    assert (os.path.getmtime(r1), os.path.getmtime(r2)) == (t1, t2)
    assert load_checkpoint(r3)["source"] == r2 and load_checkpoint(r3)["distill"]["seed"] == 5
    assert open(more["checkpoint"], "rb").read() == open(r3, "rb").read()
    # round 2's file lost: round 1 is kept, rounds 2 and 3 are redone (3 from the new round 2)
    os.remove(r2)
    logs.clear()
    train(cfg.from_dict({**stage, "distill_rounds": 3}, base), resume=ppo["checkpoint"],
          log=logs.append)
    assert [m.split(" from ")[0] for m in logs if m.startswith("search distillation")] == [
        "search distillation already done: round 1/3 (" + r1 + ",",
        "search distillation: round 2/3", "search distillation: round 3/3"]
    assert any(m.startswith("removed") and "distilled_round3_labels" in m for m in logs)
    assert os.path.exists(r2) and os.path.getmtime(r3) > os.path.getmtime(r2) >= t2
    assert len(load_checkpoint(ppo["checkpoint"])["progress"]["distill_rounds"]) == 3
    # back to 2 rounds: nothing is redone, distilled.pt is round 2 again, round 3's record goes
    logs.clear()
    fewer = train(cfg.from_dict(stage, base), resume=ppo["checkpoint"], log=logs.append)
    assert not any(m.startswith("search distillation: round") for m in logs)
    assert open(fewer["checkpoint"], "rb").read() == open(r2, "rb").read()
    assert [r["round"] for r in
            load_checkpoint(ppo["checkpoint"])["progress"]["distill_rounds"]] == [1, 2]


@pytest.mark.slow
def test_a_one_round_stage_resumed_with_two_rounds_keeps_its_network_as_round_1(tmp_path):
    from spades_env.training import config as cfg
    from spades_env.training.ppo_selfplay import train
    base = _nano_run(tmp_path, "one", distill_minutes=0.01, distill_samples=4, distill_epochs=1,
                     distill_workers=1, distill_bid_deals=20)
    one = train(base, log=lambda *x: None)
    folder = os.path.dirname(one["checkpoint"])
    first = open(one["checkpoint"], "rb").read()
    logs: list[str] = []
    two = train(cfg.from_dict({"distill_rounds": 2}, base),
                resume=os.path.join(folder, "latest.pt"), log=logs.append)
    assert [m.split(" from ")[0] for m in logs if m.startswith("search distillation")] \
        == ["search distillation already done: round 1/2 (" + os.path.join(
            folder, "distilled_round1.pt") + ",", "search distillation: round 2/2"]
    assert open(os.path.join(folder, "distilled_round1.pt"), "rb").read() == first
    d2 = load_checkpoint(two["checkpoint"])
    assert d2["source"] == os.path.join(folder, "distilled_round1.pt") and d2["distill"]["seed"] == 4
    # and back to one round: round 1 is the stage again, nothing is redone
    logs.clear()
    back = train(base, resume=os.path.join(folder, "latest.pt"), log=logs.append)
    assert not any(m.startswith("search distillation: round") for m in logs)
    assert open(back["checkpoint"], "rb").read() == first


@pytest.mark.slow
def test_a_distillation_stage_that_cannot_widen_is_refused_before_any_work(tmp_path):
    from spades_env.training import config as cfg
    args = cfg.from_dict({"hidden": [64, 32], "head_hidden": 16, "distill_minutes": 5,
                          "distill_hidden": [32, 32], "bc_teacher": ""})
    with pytest.raises(ValueError, match="distill_hidden/distill_head_hidden: widen only grows"):
        cfg.check_ready(args)
    args = cfg.from_dict({"hidden": [64, 32], "head_hidden": 16, "distill_minutes": 5,
                          "distill_hidden": [128], "bc_teacher": ""})
    with pytest.raises(ValueError, match="number of trunk layers"):
        cfg.check_ready(args)
    # what the stage itself would refuse after PPO is refused before it (found by a break-it pass)
    for over, match in (({"rules": "house"}, "labels standard-rules hands"),
                        ({"distill_minutes": 0.0005}, "0 .no stage. or at least 0.001"),
                        ({"seed": 2**63 - 1}, "seeds up to 2\\*\\*62")):
        args = cfg.from_dict({"distill_minutes": 5, "bc_teacher": "", **over})
        with pytest.raises(ValueError, match=match):
            cfg.check_ready(args)
    cfg.check_ready(cfg.from_dict({"rules": "house", "bc_teacher": ""}))  # no stage: fine


@pytest.mark.slow
def test_distill_refuses_to_write_over_its_source(tiny, tmp_path, capsys):
    import shutil
    from spades_env.training.distill import main
    src = str(tmp_path / "src.pt")
    shutil.copy(tiny, src)
    before = open(src, "rb").read()
    assert main([src, "--out", src, "--minutes", "0.01", "--workers", "1"]) == 2
    assert f"--out {src}: it is the input {src}" in capsys.readouterr().err
    assert open(src, "rb").read() == before


@pytest.mark.slow
def test_chunk_lines_say_the_minutes_left_and_log_every_thins_them(tiny, tmp_path):
    from spades_env.training.labelling import lock_labels, produce_labels
    for every, expected in ((0.0, 3), (3600.0, 1)):  # every chunk / only the first in an hour
        folder = str(tmp_path / f"l{every:g}")
        lines: list[str] = []
        lock = lock_labels(folder)
        try:
            paths = produce_labels(tiny, folder, 5.0, 3, 1, seed=2, samples=2, workers=1,
                                   log=lines.append, log_every=every)
        finally:
            lock.release()
        assert len(paths) == 3
        chunk_lines = [m for m in lines if m.startswith("chunk_")]
        assert len(chunk_lines) == expected, lines
        left = [float(m.rsplit(", ", 1)[1].split(" min of labels left")[0]) for m in chunk_lines]
        # a 5-minute budget, but 3 chunks of one hand each: the chunks end first (regression:
        # the line said 5.0 until the last chunk)
        assert left[0] < 1.0 and left[-1] == (0.0 if expected == 3 else left[0])


def _encoded_rows(rec: dict) -> np.ndarray:
    """Every decision of the records' hands as ``observation.encode`` writes it (float32),
    replayed here without the code under test."""
    from spades_env.observation import OBS_SIZE, encode
    rows = []
    for h in range(len(rec["seed"])):
        g = SpadesGame(Rules.preset(rec.get("rules", "standard")), seed=int(rec["seed"][h]))
        g.scores = [int(x) for x in rec["scores"][h]]
        g.bags = [int(x) for x in rec["bags"][h]]
        for a in rec["moves"][h]:
            row = np.zeros(OBS_SIZE, np.float32)
            encode(g.view(g.current_player), row)
            rows.append(row)
            g.apply(int(a))
    return np.stack(rows)


@pytest.mark.slow
def test_dataset_rows_are_compact_and_expand_to_the_exact_observations(tiny, labels):
    # the rows of a round hold 120 bytes per decision; expanded they are encode's float32
    # observations bit for bit (the earlier float16 rows rounded the scores)
    from spades_env.training.teacher_records import replay
    exact = _encoded_rows(labels)
    rows = replay(labels, where="labels", compact=True, priv=False)
    assert rows["obs"].dtype == np.uint8 and rows["obs"].shape == (len(exact), 120)
    assert rows["priv"] is None
    np.testing.assert_array_equal(expand(rows["obs"], rows["table"]), exact)
    net = build_agent(load_checkpoint(tiny), "cpu")
    ds = build_dataset(labels, net, temperature=3.0)
    n = len(labels["seed"])
    valued = ~np.isnan(labels["values"].reshape(n * 56, 52))
    keep = (valued.sum(1) > 1) | (np.arange(n * 56) % 56 < 4)  # card choices and the bids
    assert ds["obs"].dtype == np.uint8 and ds["rep"].dtype == np.uint8
    np.testing.assert_array_equal(expand(ds["obs"], ds["table"]), exact[keep])
    # float16 rows, as the warm start keeps them: the same rows rounded
    f16 = replay(labels, where="labels")["obs"]
    assert f16.dtype == np.float16
    np.testing.assert_array_equal(f16, exact.astype(np.float16))


def test_drop_flat_leaves_out_exactly_the_card_rows_valued_all_alike(tiny, labels):
    # one card row made flat by hand (every candidate worth 2.5 points): it is in the full set,
    # not in the other; every other row is in both, in the same order, with the same target
    net = build_agent(load_checkpoint(tiny), "cpu")
    rec = {k: v.copy() for k, v in labels.items()}
    n = len(rec["seed"])
    vals = rec["values"].reshape(n * 56, 52)
    valued = ~np.isnan(vals)
    choice = np.nonzero(valued.sum(1) > 1)[0]
    spread = np.nanmax(vals[choice], 1) - np.nanmin(vals[choice], 1)
    row = int(choice[np.argmax(spread)])  # the row with the largest spread, made flat
    vals[row, valued[row]] = 2.5
    flat = np.zeros(n * 56, bool)
    flat[choice] = np.nanmax(vals[choice], 1) == np.nanmin(vals[choice], 1)
    assert flat[row] and flat.sum() >= 1
    full = build_dataset(rec, net, temperature=3.0)
    thin = build_dataset(rec, net, temperature=3.0, drop_flat=True)
    kept_full = np.nonzero((valued.sum(1) > 1) | (np.arange(n * 56) % 56 < 4))[0]
    keep = ~flat[kept_full]
    assert len(thin["obs"]) == len(full["obs"]) - flat.sum()
    for key in ("obs", "mask", "target", "card", "rep"):
        np.testing.assert_array_equal(thin[key], full[key][keep], err_msg=key)
    i = int(np.searchsorted(kept_full, row))
    t = full["target"][i, :52]
    assert t[valued[row]] == pytest.approx(np.full(valued[row].sum(), 1 / valued[row].sum()))
    assert t[~valued[row]].sum() == 0  # the flat row's target in the full set: uniform
    assert (~thin["card"]).sum() == 4 * n  # the bids all stay


def _rows(rules: Rules, rules_id: int, k: int) -> dict:
    """k made-up rows whose compact observations carry ``rules_id`` in byte 94."""
    from spades_env.compact import RULES_ID
    obs = np.zeros((k, 120), np.uint8)
    obs[:, RULES_ID] = rules_id
    return {"obs": obs, "table": rules_table(rules), "mask": np.zeros((k, 68), bool),
            "target": np.zeros((k, 68), np.float32), "card": np.zeros(k, bool),
            "rep": np.full((k, 52), 52, np.uint8), "values": np.zeros((k, 52), np.float32)}


def test_concat_rows_merges_the_rules_tables():
    from spades_env.compact import RULES_ID
    from spades_env.training.distill_targets import concat_rows
    std, sui = Rules(), Rules.preset("suicide")
    same = concat_rows(_rows(std, 0, 2), _rows(std, 0, 3))
    assert len(same["obs"]) == 5 and same["table"].shape == (1, 32)
    both = concat_rows(_rows(std, 0, 2), _rows(sui, 0, 3))
    np.testing.assert_array_equal(both["table"], rules_table([std, sui]))
    assert both["obs"][:, RULES_ID].tolist() == [0, 0, 1, 1, 1]
    x = expand(both["obs"], both["table"])
    np.testing.assert_array_equal(x[:2, -32:], rules_table(std)[[0, 0]])
    np.testing.assert_array_equal(x[2:, -32:], rules_table(sui)[[0, 0, 0]])
    # a third part with both rule sets (ids 1 = standard, 0 = suicide in its own table)
    third = _rows(std, 0, 2)
    third["table"] = rules_table([sui, std])
    third["obs"][0, RULES_ID] = 1
    merged = concat_rows(both, third)
    assert merged["table"].shape == (2, 32)
    assert merged["obs"][5:, RULES_ID].tolist() == [0, 1]


def test_a_bad_regret_weight_is_refused_before_any_step(tiny, labels, tmp_path):
    import copy
    net = build_agent(load_checkpoint(tiny), "cpu")
    ds = build_dataset(labels, copy.deepcopy(net).eval(), temperature=3.0)
    before = {k: v.clone() for k, v in net.state_dict().items()}
    for w in (-1.0, float("nan"), float("inf"), "0.5", None, True):
        with pytest.raises(ValueError, match="regret_weight must be a finite number >= 0"):
            distill(net, ds, epochs=1, holdout=0.0, log=lambda *_: None, regret_weight=w)
    assert all(torch.equal(before[k], v) for k, v in net.state_dict().items())
    from spades_env.training.distill import distill_checkpoint
    out = str(tmp_path / "d.pt")
    for w in (-1.0, 1001.0, float("nan"), "0.5", None, True):
        with pytest.raises(ValueError, match=r"--regret-weight must be a number in \[0, 1000\]"):
            distill_checkpoint(tiny, out, labels=str(tmp_path / "l"), minutes=0.01,
                               chunks=1, chunk_hands=2, samples=4, workers=1, epochs=1,
                               bid_deals=2, regret_weight=w, log=lambda *_: None)
    assert not os.path.exists(out) and not os.path.exists(tmp_path / "l")
