"""Teacher records (spades_env/training/teacher_records.py): shipped file valid, reproducible from seeds,
replayable, corrupt files refused."""

import numpy as np
import pytest

from spades_env.observation import OBS_SIZE
from spades_env.training.teacher_records import (MOVES_PER_HAND, generate_chunk, load_records, replay,
                                      save_records, team_points)

SHIPPED = "checkpoints/records/hard_records.npz"


def test_shipped_records_load_and_first_hands_regenerate_from_seed():
    rec = load_records(SHIPPED)
    assert rec["teacher"] == "hard" and rec["rules"] == "standard"
    assert len(rec["seed"]) >= 5000
    # chunk 0 of the shipped run (--seed 7): the first two hands come back move for move
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
