"""A teacher that grows with the student (spades_env/training/distill.py): labels by ``expert`` built on the
labelled network itself, bids labelled by the bid search, the policy's regret, the label format's
version 2 (version 1 still read), and the training config's fields."""

import math

import numpy as np
import pytest
from spades_env import Rules, SpadesGame
from spades_env.bots.checkpoint_bot import CheckpointBot
from spades_env.bots.expert import ExpertBot
from spades_env.bots.pimc import InsaneBot, PIMCBot
from spades_env.cards import BID_OFFSET
from spades_env.engine import Phase
from spades_env.training.checkpoint import load_checkpoint
from spades_env.training.distill_targets import build_dataset
from spades_env.training.labelling import label_chunk, make_teacher
from spades_env.training.labels import check_chunk, chunk_stats, file_sha256, load_labels, save_labels
from spades_env.training.envs import randomize_start


@pytest.fixture(scope="module")
def expert_labels(tiny):
    return label_chunk(tiny, 2, seed=3, chunk=1, samples=4, teacher="expert", bid_samples=4)


# ----------------------------------------------------------------------------- the bid search
@pytest.mark.parametrize("cls", [PIMCBot, InsaneBot])
def test_a_bid_is_the_first_best_of_the_bid_values(cls):
    for seed in range(4):
        g = SpadesGame(Rules(), seed=seed)
        g.apply(BID_OFFSET + 3)  # the first seat's bid is evidence for the second
        view = g.view(g.current_player)
        bids, values = cls(seed=7, bid_samples=12).bid_values(view)
        assert bids == sorted(bids) and len(bids) == len(values) > 1
        assert all(0 <= b <= 13 and math.isfinite(v) for b, v in zip(bids, values))
        best = max(range(len(bids)), key=lambda i: (values[i], -i))
        assert cls(seed=7, bid_samples=12).act(view) == BID_OFFSET + bids[best]


def test_bid_values_of_a_hand_of_thirteen_spades():
    # seat 0 holds all 13 spades and takes all 13 tricks in every play-out (it trumps every lead
    # and leads spades); its partner (seat 2) bid 1 and seat 3 bid 3 before it. A bid of 12 makes
    # the team's 13 exactly (130 points); 13 overbids it (a 14 contract set: -140), 270 points
    # worse; 11 makes 120 and one bag. The opponents' set is the same under every bid.
    hands = [sum(1 << c for c in range(39, 52)), sum(1 << c for c in range(0, 13)),
             sum(1 << c for c in range(13, 26)), sum(1 << c for c in range(26, 39))]
    g = SpadesGame.from_deal(hands, dealer=1)
    g.apply(BID_OFFSET + 1)  # seat 2
    g.apply(BID_OFFSET + 3)  # seat 3
    assert g.current_player == 0
    bids, values = PIMCBot(seed=1, bid_samples=8, bid_shade=0.0, bid_window=3).bid_values(g.view(0))
    v = dict(zip(bids, values))
    assert bids == [11, 12, 13]  # the window: 3 below the estimate (14, capped at 13)
    assert v[12] - v[13] == pytest.approx(270.0)
    assert 0 < v[12] - v[11] < 20  # 10 points and a bag at its long-run cost


def test_bid_values_needs_a_bid_to_make():
    g = SpadesGame(Rules(), seed=1)
    for _ in range(4):
        g.apply(BID_OFFSET + 3)
    with pytest.raises(ValueError, match="bidding phase"):
        PIMCBot(seed=1).bid_values(g.view(g.current_player))


# ----------------------------------------------------------------------------- labels by expert
def test_make_teacher():
    assert type(make_teacher("hard", "unused.pt", 5, 0, 1)) is PIMCBot
    with pytest.raises(ValueError, match="teacher must be one of"):
        make_teacher("insane", "x.pt", 5, 0, 1)
    with pytest.raises(ValueError, match="no checkpoint"):
        make_teacher("expert", "/nonexistent/x.pt", 5, 0, 1)


def test_expert_labels_are_the_expert_on_the_same_network_and_view(tiny):
    # the first card decision of the chunk's first hand, labelled by the expert teacher, equals
    # what ExpertBot on the same checkpoint with the chunk's seed computes on that view
    rng = np.random.default_rng([3, 1])
    rng.integers(2**31)  # the policy's seed
    teacher = ExpertBot(seed=int(rng.integers(2**31)), checkpoint=tiny, samples=4, bid_samples=4)
    s = int(rng.integers(2**63))
    g = SpadesGame(Rules(), seed=s)
    if rng.random() < 0.5:
        randomize_start(g, rng)
    rec = label_chunk(tiny, 1, seed=3, chunk=1, samples=4, teacher="expert", bid_samples=4)
    for k in range(4):  # the bids, valued by the same bot in the same order
        view = g.view(g.current_player)
        bids, values = teacher.bid_values(view)
        np.testing.assert_array_equal(rec["bid_values"][0, k, bids], np.array(values, np.float16))
        assert np.isnan(np.delete(rec["bid_values"][0, k], bids)).all()
        g.apply(int(rec["moves"][0, k]))
    cards, values = teacher.card_values(g.view(g.current_player))
    np.testing.assert_array_equal(rec["values"][0, 4, cards], np.array(values, np.float16))


def test_expert_labels_reproducible_and_the_teams_play_as_documented(tiny, expert_labels):
    again = label_chunk(tiny, 2, seed=3, chunk=1, samples=4, teacher="expert", bid_samples=4)
    for k in expert_labels:
        np.testing.assert_array_equal(again[k], expert_labels[k])  # NaN where NaN: same bits
    rec = expert_labels
    policy = CheckpointBot(tiny)
    policy_cards = 0
    for h in range(2):
        g = SpadesGame(Rules(), seed=int(rec["seed"][h]))
        g.scores = [int(x) for x in rec["scores"][h]]
        g.bags = [int(x) for x in rec["bags"][h]]
        team = int(rec["agent_team"][h])
        for k in range(56):
            p = g.current_player
            view = g.view(p)
            a = int(rec["moves"][h, k])
            if k < 4:  # every bid valued; the search team bids its best, the policy its own
                bv = rec["bid_values"][h, k].astype(np.float64)
                assert (~np.isnan(bv)).sum() > 1
                if (p & 1) == team:
                    assert a == policy.act(view)
                else:
                    assert a - BID_OFFSET == int(np.nanargmax(bv))
                assert np.isnan(rec["regret"][h, k])
            else:
                vals = rec["values"][h, k].astype(np.float64)
                valued = np.nonzero(~np.isnan(vals))[0]
                r = float(rec["regret"][h, k])
                if (p & 1) == team and len(valued) > 1:
                    policy_cards += 1
                    assert a == policy.act(view)
                    # the regret by hand: the best value minus the value of the played card's
                    # class (the highest valued card of its suit not above it)
                    cls = max(c for c in valued if c <= a and c // 13 == a // 13)
                    assert r == float(np.float16(np.float32(np.nanmax(vals)) - vals[cls]))
                    assert r >= 0
                else:
                    assert np.isnan(r)
            g.apply(a)
        assert g.phase != Phase.PLAY and g.hand_results
    assert policy_cards > 0
    st = chunk_stats(rec)
    assert st["hands"] == 2 and st["bid_labels"] == 8
    assert st["card_labels"] == int((~np.isnan(rec["values"]).all(-1)).sum()) > 0
    r = rec["regret"].astype(np.float64)
    assert st["regret"] == pytest.approx(np.nanmean(r))


def test_label_format_2_round_trip_and_version_1_still_read(tiny, expert_labels, tmp_path):
    p = str(tmp_path / "chunk_00001.npz")
    sha = file_sha256(tiny)
    save_labels(p, expert_labels, tiny, 4, seed=3, chunk=1, source_sha256=sha, teacher="expert",
                bid_samples=4)
    back = check_chunk(p, sha, hands=2, seed=3, chunk=1, samples=4, teacher="expert",
                       bid_samples=4)
    assert back["teacher"] == "expert" and back["bid_samples"] == 4
    for k in ("bid_values", "regret", "values", "moves"):
        np.testing.assert_array_equal(back[k], expert_labels[k])
    for teacher, bids, what in (("hard", 4, "teacher 'expert'"), ("expert", 0, "bid samples 4")):
        with pytest.raises(ValueError, match=what):
            check_chunk(p, sha, hands=2, seed=3, chunk=1, samples=4, teacher=teacher,
                        bid_samples=bids)
    # a version-1 file (before the teacher and bid labels): a hard teacher, all NaN
    from spades_env.training.labels import FORMAT
    v1 = tmp_path / "v1.npz"
    np.savez(v1, format=np.array(FORMAT), version=np.array(1), rules=np.array("standard"),
             **{k: expert_labels[k] for k in ("seed", "scores", "bags", "moves", "agent_team")},
             values=expert_labels["values"])
    old = load_labels(str(v1))
    assert old["teacher"] == "hard" and old["bid_samples"] == 0
    assert np.isnan(old["bid_values"]).all() and np.isnan(old["regret"]).all()
    # a foreign teacher name, a negative regret, an unknown version: refused, the file named
    bad = tmp_path / "bad.npz"
    fields = {k: expert_labels[k] for k in ("seed", "scores", "bags", "moves", "agent_team",
                                            "values", "bid_values", "regret")}
    regret_on_bid = fields["regret"].copy()
    regret_on_bid[0, 0] = 5.0
    regret_unvalued = fields["regret"].copy()
    unvalued = np.isnan(fields["values"]).all(-1)
    unvalued[:, :4] = False
    regret_unvalued[unvalued] = 1.0
    regret_huge = fields["regret"].copy()
    regret_huge[~np.isnan(regret_huge)] = 60000.0
    no_bid = fields["bid_values"].copy()
    no_bid[1, 2] = np.nan
    cases = (  # regressions of a break-it review: each of these loaded before
        ({"teacher": np.array("oracle")}, "teacher"),
        ({"regret": np.full_like(fields["regret"], -1.0)}, "regret"),
        ({"version": np.array(3)}, "version 3"),
        ({"bid_values": None}, r"version-2 field\(s\) \['bid_values'\] missing"),
        ({"version": np.array(1)}, "version-1 label file holds the version-2 field"),
        ({"bid_samples": np.array(-5)}, "'bid_samples' must be in"),
        ({"samples": np.array(2**40)}, "'samples' must be in"),
        ({"regret": regret_on_bid}, "where no card decision was valued"),
        ({"regret": regret_unvalued}, "where no card decision was valued"),
        ({"regret": regret_huge}, "exceeds the spread"),
        ({"bid_samples": np.array(0)}, "'bid_values' holds values but 'bid_samples' is 0"),
        ({"bid_values": no_bid}, "a bid without values"))
    for over, what in cases:
        d = {"format": np.array(FORMAT), "version": np.array(2), "teacher": np.array("expert"),
             "bid_samples": np.array(4), **fields, **over}
        np.savez(bad, **{k: v for k, v in d.items() if v is not None})
        with pytest.raises(ValueError, match=what) as e:
            load_labels(str(bad))
        assert str(bad) in str(e.value)
    with pytest.raises(ValueError, match="bid_samples must be in"):
        save_labels(str(tmp_path / "x.npz"), expert_labels, tiny, 4, bid_samples=-5)
    # a dict of an earlier version has no regret: its stats say so, no KeyError
    old_rec = {k: v for k, v in expert_labels.items() if k not in ("regret", "bid_values")}
    assert math.isnan(chunk_stats(old_rec)["regret"]) and chunk_stats(old_rec)["bid_labels"] == 0
    with pytest.raises(ValueError, match="teacher"):
        save_labels(str(tmp_path / "x.npz"), expert_labels, tiny, 4, teacher="oracle")


def test_bid_rows_learn_the_bid_searchs_soft_values(tiny, expert_labels):
    net = build_agent_of(tiny)
    ds = build_dataset(expert_labels, net, temperature=3.0)
    bids = np.nonzero(~ds["card"])[0]
    assert len(bids) == 8
    for i, row in enumerate(bids):
        bv = expert_labels["bid_values"][i // 4, i % 4].astype(np.float64)
        ok = ~np.isnan(bv)
        z = np.exp((bv[ok] - bv[ok].max()) / 3.0)
        t = ds["target"][row]
        np.testing.assert_allclose(t[BID_OFFSET:BID_OFFSET + 14][ok], z / z.sum(), rtol=1e-5)
        assert t.sum() == pytest.approx(1.0) and t[:52].sum() == 0
    # by hand: two bids 3 points apart at temperature 3 have odds 1 : e
    rec = {k: v.copy() for k, v in expert_labels.items()}
    rec["bid_values"][0, 0] = np.nan
    rec["bid_values"][0, 0, [2, 3]] = [10.0, 13.0]
    t = build_dataset(rec, net, temperature=3.0)["target"][bids[0]]
    assert t[BID_OFFSET + 2] == pytest.approx(1 / (1 + math.e))
    assert t[BID_OFFSET + 3] == pytest.approx(math.e / (1 + math.e))
    # without bid values (a hard teacher, bids not labelled): the reference's greedy bid
    rec["bid_values"][:] = np.nan
    t = build_dataset(rec, net, temperature=3.0)["target"][bids]
    assert (t.max(1) == 1.0).all()


def build_agent_of(path):
    from spades_env.training.checkpoint import build_agent
    return build_agent(load_checkpoint(path), "cpu").eval()


# ----------------------------------------------------------------------------- command line
@pytest.mark.slow
def test_command_line_teacher_expert_labels_bids_and_reports_progress(tiny, tmp_path, capsys):
    from spades_env.training.distill import main
    out = tmp_path / "e.pt"
    rc = main([tiny, "--out", str(out), "--chunks", "2", "--chunk-hands", "1",
               "--samples", "3", "--workers", "1", "--epochs", "1", "--bid-deals", "0",
               "--teacher", "expert", "--bid-samples", "3"])
    text = capsys.readouterr().out
    assert rc == 0, text
    d = load_checkpoint(str(out))["distill"]
    assert d["teacher"] == "expert" and d["bid_samples"] == 3 and d["bid_labels"] == 8
    assert d["own_hands"] == 2 and d["card_labels"] > 0 and d["labels_per_second"] > 0
    assert d["regret"] >= 0
    # one line per chunk: hands, card and bid labels, rate, the policy's regret
    lines = [ln for ln in text.splitlines() if ln.startswith("chunk_0000")]
    assert len(lines) == 2 and all("1 hands" in ln and "+ 4 bid labels" in ln
                                   and "labels/s" in ln and "policy regret" in ln for ln in lines)
    # the chunks record their teacher: the same folder with another teacher is refused
    rc = main([tiny, "--out", str(out), "--chunks", "2", "--chunk-hands", "1",
               "--samples", "3", "--workers", "1", "--epochs", "1", "--bid-deals", "0",
               "--bid-samples", "3"])
    assert rc == 2 and "teacher 'expert' (this run: 'hard')" in capsys.readouterr().err
    for bad, what in ((["--teacher", "insane"], "invalid choice"),
                      (["--bid-samples", "-1"], "--bid-samples")):
        with pytest.raises(SystemExit) if what == "invalid choice" else _no_raise():
            rc = main([tiny, "--out", str(tmp_path / "x.pt"), *bad])
            assert rc == 2
        assert what in capsys.readouterr().err


class _no_raise:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def test_config_fields_of_the_growing_teacher(tmp_path):
    from spades_env.training.config import load_yaml
    cfg = tmp_path / "c.yaml"
    cfg.write_text("distill_teacher: expert\ndistill_bid_samples: 24\nray_address: auto\n")
    a = load_yaml(str(cfg))
    assert (a.distill_teacher, a.distill_bid_samples, a.ray_address) == ("expert", 24, "auto")
    cfg.write_text("distill_teacher: insane\n")
    with pytest.raises(ValueError, match="distill_teacher"):
        load_yaml(str(cfg))
    from spades_env.training.distill_stage import label_folder_suffix
    assert label_folder_suffix(a) == "_expert_bids24"
    a.distill_teacher, a.distill_bid_samples = "hard", 0
    assert label_folder_suffix(a) == ""


def test_a_ray_address_is_checked_before_any_work():
    # a run that would label on Ray is refused before PPO when Ray is missing or the address
    # does not answer (127.0.0.2:1: nothing listens there)
    from spades_env.training.config import Args, check_ready
    a = Args(ray_address="127.0.0.2:1")
    with pytest.raises(ValueError, match="bad config: ray_address: (Ray is not installed|cannot "
                                         "connect to the Ray cluster at '127.0.0.2:1')"):
        check_ready(a)
    check_ready(Args())  # no cluster: nothing to check


@pytest.mark.slow
def test_a_training_stage_with_the_growing_teacher_logs_its_progress(tmp_path):
    # two rounds by `expert`, each on its round's own starting network, bids labelled: the label
    # folders carry the teacher, every chunk and round is a line in the log and a TensorBoard
    # scalar, and each round records its teacher, regret and labelling rate
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    from tests.training.test_distill import _nano_run
    from spades_env.training.ppo_selfplay import train
    a = _nano_run(tmp_path, "grow", distill_minutes=5.0, distill_rounds=2, distill_samples=3,
                  distill_epochs=1, distill_workers=1, distill_bid_deals=0, distill_chunks=2,
                  distill_chunk_hands=1, distill_teacher="expert", distill_bid_samples=2)
    logs: list[str] = []
    out = train(a, log=logs.append)
    ck = tmp_path / "ck" / "grow"
    it = load_checkpoint(out["checkpoint"])["progress"]["iteration"]
    for k in (1, 2):
        folder = ck / f"distilled_round{k}_labels_it{it}_expert_bids2"
        assert sorted(p.name for p in folder.glob("chunk_*.npz")) == ["chunk_00000.npz",
                                                                      "chunk_00001.npz"]
        assert load_labels(str(folder / "chunk_00000.npz"))["teacher"] == "expert"
    rounds = load_checkpoint(str(ck / "latest.pt"))["progress"]["distill_rounds"]
    assert [r["round"] for r in rounds] == [1, 2] and all(r["hands"] == 2 for r in rounds)
    assert all(r["labels_per_second"] > 0 and r["regret"] >= 0 for r in rounds)
    r2 = load_checkpoint(str(ck / "distilled_round2.pt"))
    assert r2["distill"]["teacher"] == "expert" and r2["distill"]["bid_labels"] == 8
    assert r2["source"].endswith("distilled_round1.pt")  # round 2's teacher: round 1's network
    assert sum("by expert (3 deals per card, 2 per bid, 1 workers)" in m for m in logs) == 2
    # in a training run a round logs a chunk line at most once a minute (CHUNK_LINE_SECONDS):
    # here each round's first; every chunk is still a TensorBoard point (below)
    assert sum(m.startswith("chunk_0000") and "policy regret" in m for m in logs) == 2
    acc = EventAccumulator(str(tmp_path / "runs" / "grow"))
    acc.Reload()
    tags = set(acc.Tags()["scalars"])
    assert {"distill/hands", "distill/labels_per_second", "distill/round_regret",
            "distill/round_labels_per_second", "distill/round_hands"} <= tags
    assert [e.step for e in acc.Scalars("distill/round_hands")] == [1, 2]
    assert len(acc.Scalars("distill/labels_per_second")) == 4


def test_command_line_refusals_found_by_a_review(tiny, tmp_path, capsys):
    # regressions: a huge count was a TypeError traceback; --ray without Ray was a
    # ModuleNotFoundError traceback after the label folder had been made
    from spades_env.training.distill import main
    out = tmp_path / "o.pt"
    assert main([tiny, "--out", str(out), "--bid-samples", "9" * 20]) == 2
    assert "--bid-samples must be an integer in [0, 100000]" in capsys.readouterr().err
    try:
        import ray  # noqa: F401
        have_ray = True
    except ImportError:
        have_ray = False
    rc = main([tiny, "--out", str(out), "--chunks", "1", "--chunk-hands", "1",
               "--samples", "2", "--ray", "127.0.0.2:1"])
    err = capsys.readouterr().err
    assert rc == 2 and err.startswith("error: ") and "Traceback" not in err
    assert ("Ray is not installed" in err) != have_ray or "127.0.0.2:1" in err
    assert not (tmp_path / "o_labels").exists()  # refused before any work
    from spades_env.training.evaluate import NetPlayer, duplicate_match
    with pytest.raises(ValueError, match="Ray is not installed|127.0.0.2:1"):
        duplicate_match(NetPlayer(build_agent_of(tiny)), "random", 2, ray_address="127.0.0.2:1")
