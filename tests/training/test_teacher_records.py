"""Teacher records (spades_env/training/teacher_records.py): shipped file valid, reproducible from seeds,
replayable, corrupt files refused; the command's options, folders and merge targets checked before
any work, its chunks kept on Ctrl-C, and chunk folders never read as glob patterns."""

import os
import subprocess
import sys

import numpy as np
import pytest

from spades_env.cards import action_str
from spades_env.observation import OBS_SIZE
from spades_env.training.teacher_records import (MOVES_PER_HAND, generate_chunk, load_records, replay,
                                      save_records, team_points)
import spades_env.fileio as fio
import spades_env.records as records
from tests.helpers import ROOT
from tests.training._records import _teacher_fields

SHIPPED = "checkpoints/records/hard_records.npz"


def test_shipped_records_load_and_first_hands_regenerate_from_seed(monkeypatch):
    from spades_env.bots import sampler
    rec = load_records(SHIPPED)
    assert rec["teacher"] == "hard" and rec["rules"] == "standard"
    assert len(rec["seed"]) >= 5000
    # chunk 0 of the shipped run (--seed 7): the first two hands come back move for move, with
    # the sampler they were made with (deal by deal: before ``DealSampler.samples`` batched)
    monkeypatch.setattr(sampler, "BATCH_MIN", 10**9)
    again = generate_chunk("hard", 2, seed=7, chunk=0)
    for k in ("seed", "scores", "bags", "moves"):
        np.testing.assert_array_equal(again[k], rec[k][:2])


def test_replay_rows_are_legal_and_returns_are_zero_sum_per_hand():
    rec = load_records(SHIPPED)
    d = replay(rec, limit=3)
    assert d["obs"].shape == (3 * MOVES_PER_HAND, OBS_SIZE)
    assert d["mask"][np.arange(len(d["action"])), d["action"]].all()
    # first 4 decisions are bids (ids 52..65), the rest cards (0..51)
    acts = d["action"].reshape(3, MOVES_PER_HAND)
    assert (acts[:, :4] >= 52).all() and (acts[:, 4:] < 52).all()
    # a team's return is minus the other's; partners share it
    r = d["ret"][:MOVES_PER_HAND]
    assert len(set(np.round(np.abs(r), 6))) == 1


def test_replay_rows_are_the_view_of_the_seat_to_act_at_every_decision():
    # the replay keeps every seat's row move by move (IncrementalEncoder) instead of encoding
    # game.view at each decision: the oracle is the view, encoded afresh, decision by decision,
    # on hands that start from scores and bags other than 0 (the records' random starts)
    from spades_env import Rules, SpadesGame
    from spades_env.compact import expand, pack
    from spades_env.observation import encode
    from spades_env.training.envs import seat_priv
    rec = load_records(SHIPPED)
    hands = [h for h in range(200) if rec["scores"][h].any() and rec["bags"][h].any()][:6] + [0]
    part = {**{k: rec[k][hands] for k in ("seed", "scores", "bags", "moves")},
            "rules": "standard"}
    d = replay(part, priv=True)
    c = replay(part, compact=True, priv=False)
    row = np.zeros(OBS_SIZE, np.float32)
    for i, h in enumerate(hands):
        g = SpadesGame(Rules(), seed=int(rec["seed"][h]))
        g.scores, g.bags = [int(x) for x in rec["scores"][h]], [int(x) for x in rec["bags"][h]]
        for k in range(MOVES_PER_HAND):
            r, p = i * MOVES_PER_HAND + k, g.current_player
            v = g.view(p)
            row[:] = 0
            encode(v, row)
            assert np.array_equal(d["obs"][r], row.astype(np.float16)), (h, k)
            assert np.array_equal(c["obs"][r], pack(row[None])[0]), (h, k)
            assert np.array_equal(expand(c["obs"][r:r + 1], c["table"])[0], row), (h, k)
            assert np.flatnonzero(d["mask"][r]).tolist() == sorted(v.legal_actions), (h, k)
            assert np.array_equal(d["priv"][r], seat_priv(g.hands, p)), (h, k)
            g.apply(int(rec["moves"][h, k]))
    # the error names the legal actions there: seat 0's 13 cards at the first lead it makes
    bad = {**part, "moves": part["moves"].copy()}
    g = SpadesGame(Rules(), seed=int(part["seed"][0]))
    g.scores, g.bags = [int(x) for x in part["scores"][0]], [int(x) for x in part["bags"][0]]
    for k in range(4):
        g.apply(int(part["moves"][0, k]))
    names = ", ".join(action_str(a) for a in sorted(g.legal_actions()))
    bad["moves"][0, 4] = 64  # a bid where a card is led
    with pytest.raises(ValueError) as e:
        replay(bad, where="x.npz")
    assert str(e.value) == (f"x.npz: hand 0, decision 4 (seat {g.current_player}): field "
                            f"'moves': {action_str(64)} (action 64) is illegal there (legal: "
                            f"{names})")


def test_mask_bits_reads_bit_a_as_action_a():
    from spades_env.training.teacher_records import mask_bits
    # by hand: nothing; the 2 of clubs (action 0); the last action (67, bit 67); every action;
    # the last card bit of the low word (63) and the first of the high word (64)
    got = mask_bits([0, 1, 1 << 67, (1 << 68) - 1, 1 << 63, 1 << 64])
    assert got.shape == (6, 68) and got.dtype == bool
    assert [np.flatnonzero(r).tolist() for r in got] == [[], [0], [67], list(range(68)), [63],
                                                         [64]]
    rng = np.random.default_rng(3)
    ms = [int(x) << 36 | int(y) for x, y in zip(rng.integers(0, 1 << 32, 500),
                                               rng.integers(0, 1 << 36, 500))]
    assert np.array_equal(mask_bits(ms), [[m >> a & 1 for a in range(68)] for m in ms])
    assert mask_bits([]).shape == (0, 68)


class _TS:  # the fields of rules.TeamScore that team_points reads
    def __init__(self, hand_points, bag_penalty, bags):
        self.hand_points, self.bag_penalty, self.bags = hand_points, bag_penalty, bags


def test_team_points_charges_bags_and_replaces_a_reached_penalty():
    # bid 4, took 6: 42 points, 2 bags; crossing the limit cost -100 in the hand
    assert team_points(_TS(42 - 100, -100, 2), 0.0) == -58
    assert team_points(_TS(42 - 100, -100, 2), 10.0) == 42 - 20
    assert team_points(_TS(42, 0, 2), 10.0) == 22


def test_corrupt_and_foreign_files_are_value_errors(tmp_path):
    bad = tmp_path / "x.npz"
    bad.write_bytes(b"not a zip")
    with pytest.raises(ValueError, match="x.npz"):
        load_records(str(bad))
    rec = load_records(SHIPPED)
    short = {k: rec[k][:2] for k in ("seed", "scores", "bags")}
    short["moves"] = rec["moves"][:2, :10]  # wrong shape
    p = tmp_path / "short.npz"
    save_records(str(p), short, "hard")
    with pytest.raises(ValueError, match="moves"):
        load_records(str(p))
    moved = {k: rec[k][:1].copy() for k in ("seed", "scores", "bags", "moves")}
    moved["moves"][0, 10] = moved["moves"][0, 11]  # a card played twice
    with pytest.raises(ValueError, match="illegal"):
        replay({**moved, "rules": "standard"})


def test_replay_in_two_processes_gives_the_same_rows_and_names_the_hand():
    # 1,000 hands: two parts of 500 (REPLAY_PART), hands 0..499 in one process and 500..999 in
    # the other, joined in order: every array equal to the one-process replay
    rec = {**{k: v[:1000] for k, v in load_records(SHIPPED).items() if k != "rules"},
           "rules": "standard"}
    one = replay(rec, compact=True)
    two = replay(rec, compact=True, workers=2)
    assert set(one) == set(two) == {"obs", "mask", "action", "ret", "priv", "table"}
    for k in one:
        assert one[k].dtype == two[k].dtype and np.array_equal(one[k], two[k]), k
    assert one["obs"].shape[0] == 1000 * MOVES_PER_HAND
    # a bad move in hand 700 (the second part's 201st hand) is named by its place in the record
    bad = {**rec, "moves": rec["moves"].copy()}
    bad["moves"][700, 10] = bad["moves"][700, 11]
    with pytest.raises(ValueError, match=r"x.npz: hand 700, decision 10 .*illegal"):
        replay(bad, where="x.npz", workers=2)
    # a record that is itself a part of a larger one: its offset carries into the message
    with pytest.raises(ValueError, match=r"x.npz: hand 1700, decision 10 .*illegal"):
        replay(bad, where="x.npz", workers=2, first_hand=1000)
    with pytest.raises(ValueError, match="workers must be an int >= 1, got 0"):
        replay(rec, workers=0)
    with pytest.raises(ValueError, match="limit must be None or an int >= 0, got 2.5"):
        replay(rec, limit=2.5, workers=2)


@pytest.mark.parametrize("args,match", [
    (["--workers", "0"], r"--workers must be an integer in \[1, 64\], got 0"),
    (["--teacher", "bogus"], "--teacher 'bogus': unknown bot 'bogus'"),
    (["--chunk-hands", "-1"], "--chunk-hands must be an integer"),
    (["--seed", "-1"], "--seed must be an integer"),
    (["--chunks", "0"], r"--chunks must be an integer in \[1, 100000\], got 0"),
    (["--random-start", "nan"], "--random-start must be a number in"),
])
def test_teacher_records_refuses_bad_options_before_any_work(tmp_path, capsys, args, match):
    from spades_env.training.teacher_records import main
    folder = tmp_path / "f"
    base = {"--teacher": "random", "--chunks": "1", "--chunk-hands": "1", "--workers": "1"}
    for k, v in zip(args[::2], args[1::2]):
        base[k] = v
    argv = [x for kv in base.items() for x in kv] + ["--out", str(folder)]
    assert main(argv) == 2
    import re
    assert re.match(f"error: {match}", capsys.readouterr().err)
    assert not folder.exists()


def test_teacher_records_folder_and_merge_targets(tmp_path, capsys):
    from spades_env.training.teacher_records import main, save_records
    (tmp_path / "afile").write_text("x")
    assert main(["--teacher", "random", "--chunks", "1", "--out", str(tmp_path / "afile")]) == 2
    assert "--out" in capsys.readouterr().err
    good = tmp_path / "good"
    rec = {k: v for k, v in _teacher_fields().items() if k in ("seed", "scores", "bags", "moves")}
    save_records(str(good / "chunk_00000.npz"), rec, "random")
    outdir = tmp_path / "outdir"
    outdir.mkdir()
    assert main(["--merge", str(outdir), "--out", str(good)]) == 2
    assert "is a folder" in capsys.readouterr().err
    assert main(["--merge", str(good / "chunk_00000.npz"), "--out", str(good)]) == 2
    assert "is the input" in capsys.readouterr().err
    assert sorted(os.listdir(tmp_path)) == ["afile", "good", "outdir"]
    assert sorted(os.listdir(good)) == ["chunk_00000.npz"]
    assert main(["--merge", str(tmp_path / "m.npz"), "--out", str(tmp_path / "none")]) == 2
    assert "no chunks" in capsys.readouterr().err


@pytest.mark.slow
def test_teacher_records_ctrl_c_is_one_line_and_keeps_the_chunks(tmp_path):
    import signal
    p = subprocess.Popen(
        [sys.executable, "-m", "spades_env.training.teacher_records", "--teacher", "random", "--chunks",
         "1000", "--chunk-hands", "20", "--workers", "1", "--out", str(tmp_path / "f")],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        first = p.stdout.readline()        # a chunk is done
        assert "chunk_00000.npz" in first
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=60)
    finally:
        p.kill()
    assert p.returncode == 130 and "Traceback" not in err, err
    assert err.startswith(f"interrupted: the finished chunks are kept in {tmp_path / 'f'}")
    assert "chunk_00000.npz" in os.listdir(tmp_path / "f")
    assert ".lock" not in os.listdir(tmp_path / "f")


def test_teacher_records_refuses_a_chunk_of_another_teacher(tmp_path):
    from spades_env.training.teacher_records import _worker, save_records
    rec = {k: v for k, v in _teacher_fields().items() if k in ("seed", "scores", "bags", "moves")}
    save_records(str(tmp_path / "chunk_00000.npz"), rec, "random")
    with pytest.raises(ValueError, match="belongs to another run .teacher 'random'"):
        _worker(("easy", 2, 7, 0, 0.5, str(tmp_path)))


def test_folder_names_are_never_glob_patterns(tmp_path):
    from spades_env.training.teacher_records import merge_folder, save_records
    folder = tmp_path / "run [1]?*"
    folder.mkdir()
    rec = {k: v for k, v in _teacher_fields().items() if k in ("seed", "scores", "bags", "moves")}
    save_records(str(folder / "chunk_00000.npz"), rec, "random")
    save_records(str(folder / "chunk_00001.npz"), rec, "random")
    (folder / "notes.txt").write_text("x")
    assert fio.files_in(str(folder), "chunk_", ".npz") == [str(folder / "chunk_00000.npz"),
                                                      str(folder / "chunk_00001.npz")]
    out = tmp_path / "merged.npz"
    assert merge_folder(str(folder), str(out)) == {"hands": 4, "chunks": 2}
    assert len(records.load_hand_records(str(out))["seed"]) == 4
