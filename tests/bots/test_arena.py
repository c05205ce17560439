"""Tests of the duplicate-deal arena (``spades_env.arena``)."""

from __future__ import annotations

import json
import math
import os
import time

import numpy as np
import pytest
from scipy import stats

import spades_env as se
from spades_env import Phase, Rules, SpadesGame
from spades_env.arena import ArenaResult, main, play_match
from spades_env.arena import main as arena_main
from spades_env.bots import make_bot
from spades_env.bots.heuristic import MediumBot
from tests.helpers import _main, _one_line_error

SHORT = Rules(target_score=150)


class Recorder:
    """Wraps a bot; records the seat and hand of every first-hand bidding decision."""

    def __init__(self, log, tag, seed):
        self.log, self.tag = log, tag
        self.bot = make_bot("medium", seed=seed)
        self.name = "medium"

    def act(self, view):
        if view.phase == Phase.BIDDING and view.hand_number == 0 and view.hand:
            self.log.append((self.tag, view.seat, view.hand))
        return self.bot.act(view)


def test_duplicate_pairing_gives_each_side_the_other_sides_cards():
    log = []
    made = []

    def factory(tag):
        def f(seed):
            made.append(tag)
            return Recorder(log, (tag, len(made)), seed)
        return f

    res = play_match(factory("A"), factory("B"), games=4, seed=3, rules=SHORT)
    assert res.pairs == 2 and res.games == 4
    assert made == ["A", "A", "B", "B"] * 4  # two seats per side, per game
    # group the first-hand holdings by game: each game creates 4 players
    by_game = {}
    for (tag, k), seat, hand in log:
        by_game.setdefault((k - 1) // 4, {})[seat] = (tag, hand)
    for pair in range(2):
        g1, g2 = by_game[2 * pair], by_game[2 * pair + 1]
        assert {g1[0][0], g1[2][0]} == {"A"} and {g1[1][0], g1[3][0]} == {"B"}
        assert {g2[0][0], g2[2][0]} == {"B"} and {g2[1][0], g2[3][0]} == {"A"}
        for seat in range(4):
            assert g1[seat][1] == g2[seat][1]  # same cards, other side holding them
    assert res.pair_seeds[0] != res.pair_seeds[1]


def test_identical_players_cancel_exactly():
    # medium is deterministic: with the same player on both sides, the two games of a pair are
    # identical with the sides swapped, so every per-pair difference is exactly 0
    res = play_match("medium", "medium", games=6, seed=4, rules=SHORT)
    assert res.pair_diffs == [0.0, 0.0, 0.0]
    assert res.point_diff_per_hand == 0.0 and res.point_diff_ci == (0.0, 0.0)
    a, b = res.sides
    assert a.games_won == b.games_won == 3
    assert a.points == b.points and a.bags == b.bags and a.contracts_set == b.contracts_set


def test_ci_fields_and_counts():
    res = play_match("easy", "random", games=4, seed=1, rules=SHORT)
    a, b = res.sides
    assert res.truncated == 0 and a.games_won == 4 and b.games_won == 0
    # Clopper-Pearson for 4 of 4: lower bound 0.025 ** (1/4)
    assert a.win_ci[0] == pytest.approx(0.025 ** 0.25) and a.win_ci[1] == pytest.approx(1.0)
    assert b.win_ci[0] == pytest.approx(0.0) and b.win_ci[1] == pytest.approx(1 - 0.025 ** 0.25)
    assert a.win_rate == 1.0
    d = np.array(res.pair_diffs)
    assert res.point_diff_per_hand == pytest.approx(d.mean())
    half = stats.t.ppf(0.975, len(d) - 1) * d.std(ddof=1) / np.sqrt(len(d))
    assert res.point_diff_ci == pytest.approx((d.mean() - half, d.mean() + half))
    assert res.point_diff_per_hand > 0
    assert a.hands == b.hands > 0
    assert a.decisions > 0 and a.sec_per_decision_median > 0
    assert 0 <= a.contracts_set <= a.contracts <= a.hands
    assert b.nil_made <= b.nil_bids
    assert a.bags_per_hand == pytest.approx(a.bags / a.hands)


def test_same_seed_same_result_and_hands_mode():
    r1 = play_match("easy", "medium", hands=6, seed=9)
    r2 = play_match("easy", "medium", hands=6, seed=9)
    r3 = play_match("easy", "medium", hands=6, seed=10)
    assert r1.mode == "hands" and r1.games == 12 and r1.sides[0].hands == 12
    assert r1.pair_diffs == r2.pair_diffs and r1.pair_seeds == r2.pair_seeds
    assert r1.pair_seeds != r3.pair_seeds
    assert np.isnan(r1.sides[0].win_rate)


def test_hand_cap_truncates_as_draw():
    res = play_match("random", "random", games=2, seed=0, hand_cap=3)
    assert res.truncated == 2
    assert res.sides[0].games_won == res.sides[1].games_won == 0
    assert res.sides[0].win_rate == 0.5 and res.sides[0].hands == 6


def test_player_objects_and_bad_input():
    bot = MediumBot()
    res = play_match(bot, "easy", hands=2, seed=1, names=("mine", "easy"))
    assert res.sides[0].name == "mine"
    with pytest.raises(ValueError, match="even"):
        play_match("easy", "easy", games=3)
    with pytest.raises(ValueError, match="unknown bot"):
        play_match("nobody", "easy", games=2)
    with pytest.raises(ValueError, match="player"):
        play_match(42, "easy", games=2)

    class Cheater:
        def act(self, view):
            return 67  # never legal without Blind Nil

    with pytest.raises(ValueError):
        play_match(Cheater(), "easy", hands=2)


def test_cli_prints_and_writes_json(tmp_path, capsys):
    out = tmp_path / "r.json"
    rc = main(["--team0", "medium", "--team1", "easy", "--hands", "4", "--seed", "2",
               "--out", str(out), "--quiet"])
    assert rc == 0
    text = capsys.readouterr().out
    assert "point difference per hand" in text and "ms per decision (median)" in text
    d = json.loads(out.read_text(), parse_constant=lambda c: pytest.fail(f"non-JSON {c}"))
    assert d["sides"][0]["win_rate"] is None  # NaN in hands mode is written as null
    assert d["mode"] == "hands" and d["pairs"] == 4 and len(d["pair_diffs"]) == 4
    assert d["sides"][0]["name"] == "medium" and "_times" not in d["sides"][0]
    rc = main(["--team0", "medium", "--team1", "nobody", "--games", "2", "--quiet"])
    assert rc == 2
    assert "unknown bot" in capsys.readouterr().err
    assert isinstance(play_match("easy", "easy", hands=2), ArenaResult)


def test_workers_give_the_same_result_as_one_process():
    """Each pair's seeds derive from the match seed and its index alone, so playing the pairs in
    two processes changes nothing but the timing."""
    one = play_match("medium", "easy", games=8, seed=5, rules=SHORT)
    two = play_match("medium", "easy", games=8, seed=5, rules=SHORT, workers=2,
                     keep_records=True)
    assert two.pair_diffs == one.pair_diffs and two.pair_seeds == one.pair_seeds
    # the game records made in the workers are the games one process plays
    assert one.records == [] and len(two.records) == 8
    assert two.records == play_match("medium", "easy", games=8, seed=5, rules=SHORT,
                                     keep_records=True).records
    assert two.point_diff_ci == one.point_diff_ci and two.truncated == one.truncated
    for a, b in zip(one.sides, two.sides):
        for f in ("games_won", "hands", "points", "contracts_set", "nil_bids", "nil_made", "bags",
                  "avg_team_bid", "decisions"):
            assert getattr(a, f) == getattr(b, f), f
    assert sum(s.games_won for s in one.sides) == 8


def test_workers_bad_input():
    with pytest.raises(ValueError, match="workers must be a positive int"):
        play_match("easy", "easy", games=2, workers=0)
    with pytest.raises(ValueError, match="make_bot name"):
        play_match(MediumBot(), "easy", games=2, workers=2)


def test_cli_refuses_games_and_hands_together(capsys):
    rc = main(["--team0", "easy", "--team1", "easy", "--games", "4", "--hands", "4",
               "--quiet"])
    assert rc == 2
    assert "not both" in capsys.readouterr().err


def test_hands_mode_bag_adjusted_difference():
    """Each bag charged bag_penalty / bag_limit = 10 points: per pair (2 hands) the adjusted value
    is the plain one minus 10 * (bags A - bags B) / 2, so over the match the mean moves by
    10 * (total bags A - total bags B) / (2 * pairs)."""
    res = play_match("medium", "easy", hands=30, seed=4)
    a, b = res.sides
    assert a.bags != b.bags  # easy overtricks more than medium on these deals
    want = res.point_diff_per_hand - 10.0 * (a.bags - b.bags) / (2 * 30)
    assert res.bag_adjusted_diff == pytest.approx(want)
    lo, hi = res.bag_adjusted_ci
    assert lo < res.bag_adjusted_diff < hi
    assert "long-run cost" in res.summary()
    games = play_match("medium", "easy", games=2, seed=4, rules=SHORT)
    assert np.isnan(games.bag_adjusted_diff)


def test_bag_adjusted_difference_replaces_a_tripped_penalty():
    """With bag_limit 2 single hands do trip the bag penalty (100 points per 2 bags): the adjusted
    difference charges every bag 100 / 2 = 50 points *instead of* the penalty taken, not on top of
    it: per side, points - penalty points - 50 * bags."""
    rules = Rules(bag_limit=2)
    res = play_match("medium", "easy", hands=30, seed=4, rules=rules)
    a, b = res.sides
    assert a._bag_penalty_points < 0 or b._bag_penalty_points < 0  # penalties were tripped

    def charge(st):
        return 50.0 * st.bags + st._bag_penalty_points

    want = res.point_diff_per_hand - (charge(a) - charge(b)) / (2 * 30)
    assert res.bag_adjusted_diff == pytest.approx(want)


def test_more_bad_match_arguments_and_an_illegal_move_names_the_side():
    with pytest.raises(ValueError, match="names must be two labels"):
        play_match("easy", "easy", games=2, names=("x",))
    with pytest.raises(ValueError, match="hand_cap"):
        play_match("easy", "easy", games=2, hand_cap=True)
    assert play_match("easy", "easy", games=np.int64(2), workers=np.int64(1)).games == 2

    class Cheater:
        name = "cheater"

        def act(self, view):
            return 67

    with pytest.raises(ValueError, match=r"side B \(team1\) in seat \d returned an illegal action"):
        play_match("easy", Cheater(), hands=2)


@pytest.mark.slow
def test_ctrl_c_stops_a_multi_process_match_at_once():
    """Ctrl-C during `--workers 2` used to wait for the queued pairs; now they are dropped, the
    workers stopped, and the CLI exits with 130 at once.

    The signal goes only once the progress bar shows a finished pair (the workers are really
    playing, however loaded the machine), with up to 999 pairs still queued (about 0.25 s each
    on two workers here: minutes of work, far over the 15 s bound below; with the queued pairs
    kept, this failed)."""
    import os
    import re
    import signal
    import subprocess
    import sys
    import threading
    import time
    # the CLI's main() as `spades arena` runs it, with Ctrl-C's default Python
    # handler set first: a process started in the background (`pytest ... &`, nohup) inherits
    # SIGINT ignored, as Unix shells do for background jobs, and would rightly ignore the signal
    run_cli = ("import signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
               "from spades_env.arena import main; sys.exit(main(sys.argv[1:]))")
    proc = subprocess.Popen([sys.executable, "-c", run_cli, "--team0", "medium", "--team1", "easy",
                             "--games", "2000", "--workers", "2", "--seed", "1"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    err_parts: list[bytes] = []
    started = threading.Event()

    def read_stderr():  # the tqdm bar (carriage returns, no newlines) then the messages
        while True:
            chunk = os.read(proc.stderr.fileno(), 4096)
            if not chunk:
                return
            err_parts.append(chunk)
            if re.search(rb"\b([2-9]|\d\d+)/2000\b", b"".join(err_parts)):
                started.set()

    reader = threading.Thread(target=read_stderr, daemon=True)
    reader.start()
    try:
        assert started.wait(timeout=600), (
            f"no pair finished within 600 s: {b''.join(err_parts)[-500:]!r}")
        t0 = time.time()
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=120)
        elapsed = time.time() - t0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    reader.join(timeout=10)
    err = b"".join(err_parts).decode(errors="replace")
    assert elapsed < 15, f"Ctrl-C took {elapsed:.1f} s to stop the match"
    assert proc.returncode == 130 and "interrupted" in err
    assert proc.stdout.read() == b""  # no summary of a match that did not finish
    proc.stdout.close()
    proc.stderr.close()


# ---------------------------------------------------------------------- game records (--records)
def test_records_hold_every_game_of_the_match():
    """keep_records: one record per game in pair order, names by seat and side, the games the
    statistics were made from (their hand points add up to the sides' points)."""
    r = play_match("medium", "easy", games=4, seed=3, rules=SHORT, keep_records=True)
    assert len(r.records) == 4 and "records" not in r.to_dict()
    assert r.records[0]["players"] == ["North (A: medium)", "East (B: easy)",
                                       "South (A: medium)", "West (B: easy)"]
    assert r.records[1]["players"] == ["North (B: easy)", "East (A: medium)",
                                       "South (B: easy)", "West (A: medium)"]
    points, won = [0, 0], [0, 0]
    for i, rec in enumerate(r.records):
        assert (rec["format"], rec["version"]) == ("spades_env.game_record", 1)
        g = SpadesGame.from_dict(rec["game"])  # replays and checks the move log
        pair, rot = divmod(i, 2)
        # both games of a pair are dealt from the pair's seed: the same first deal
        assert g.initial["hands"] == SpadesGame(SHORT, seed=r.pair_seeds[pair]).hands
        for hr in g.hand_results:  # side A holds team `rot` in the pair's game `rot`
            points[rot] += hr.teams[0].hand_points
            points[1 - rot] += hr.teams[1].hand_points
        if g.is_over:
            won[(g.winner + rot) % 2] += 1
    assert points == [r.sides[0].points, r.sides[1].points]
    assert won == [r.sides[0].games_won, r.sides[1].games_won]
    assert sum(won) + r.truncated == 4


def test_records_in_hands_mode_stop_after_the_hand():
    r = play_match("medium", "easy", hands=2, seed=1, keep_records=True)
    games = [SpadesGame.from_dict(rec["game"]) for rec in r.records]
    assert len(games) == 4 and all(len(g.hand_results) == 1 and not g.is_over for g in games)
    assert sum(g.hand_results[0].teams[(k % 2)].hand_points for k, g in enumerate(games)) \
        == r.sides[0].points
    with pytest.raises(ValueError, match="keep_records must be a bool"):
        play_match("medium", "easy", hands=2, keep_records="yes")


def test_cli_records_checked_before_the_match_and_written_whole(tmp_path, capsys):
    base = ["--team0", "medium", "--team1", "easy", "--hands", "2", "--quiet"]
    cases = [(tmp_path / "games.json", "must end in .jsonl"),
             (tmp_path / "nofolder" / "g.jsonl", "no such folder"),
             (tmp_path, "must end in .jsonl")]
    (tmp_path / "dir.jsonl").mkdir()
    cases.append((tmp_path / "dir.jsonl", "is a folder, not a file"))
    for path, msg in cases:
        assert main(base + ["--records", str(path)]) == 2
        err = capsys.readouterr().err
        assert msg in err and str(path) in err and "Traceback" not in err
    same = str(tmp_path / "same.jsonl")
    assert main(base + ["--records", same, "--out", same]) == 2
    assert "--out and --records name the same file" in capsys.readouterr().err
    # a match that fails writes nothing
    out = tmp_path / "g.jsonl"
    assert main(["--team0", "medium", "--team1", "nobody", "--games", "2", "--quiet",
                 "--records", str(out)]) == 2
    assert not out.exists()
    assert main(base + ["--seed", "4", "--records", str(out)]) == 0
    assert f"wrote {out} (4 game records)" in capsys.readouterr().out
    lines = out.read_text().splitlines()
    assert [json.loads(x) for x in lines] == play_match(
        "medium", "easy", hands=2, seed=4, keep_records=True).records
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no temp files


def test_a_single_pair_says_why_it_has_no_interval():
    one = play_match("medium", "random", games=2, seed=1)
    assert one.pairs == 1 and all(math.isnan(x) for x in one.point_diff_ci)
    text = one.summary()
    assert "(no 95% CI: it needs at least 2 duplicate pairs)" in text and "nan, nan" not in text
    two = play_match("medium", "random", games=4, seed=1)
    lo, hi = two.point_diff_ci
    assert f"95% CI [{lo:+.2f}, {hi:+.2f}]" in two.summary()


def test_cli_checks_bot_names_before_playing(capsys):
    from spades_env.arena import main
    assert main(["--team0", "mediun", "--team1", "easy", "--games", "2"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: unknown bot 'mediun'") and "game/s" not in err and "%|" not in err


def test_arena_summary_percentage_matches_games_won():
    # target 100 with a hand cap of 1: a game ends after hand 1 only if a team reaches 100
    from spades_env.arena import play_match
    res = play_match("random", "random", games=20, seed=3, rules=se.Rules(target_score=100),
                     hand_cap=1)
    a, b = res.sides
    assert res.truncated > 0 and a.games_won + b.games_won + res.truncated == 20
    line = next(ln for ln in res.summary().splitlines() if ln.startswith("games won"))
    assert f"{a.games_won}/20 ({100 * a.games_won / 20:.1f}%)" in line
    assert f"{b.games_won}/20 ({100 * b.games_won / 20:.1f}%)" in line
    assert "win rate, draws as 1/2" in res.summary()


def test_arena_cli_bad_json_folder_fails_before_playing(tmp_path, capsys):
    rc = arena_main(["--team0", "medium", "--team1", "easy", "--games", "2", "--quiet",
                     "--out", str(tmp_path / "missing" / "out.json")])
    assert rc == 2
    captured = capsys.readouterr()
    assert "no such folder" in captured.err and "arena:" not in captured.out


def test_arena_cli_missing_checkpoint_is_a_clean_error(tmp_path, capsys):
    rc = arena_main(["--team0", f"checkpoint:{tmp_path / 'nope.pt'}", "--team1", "easy",
                     "--games", "2", "--quiet"])
    assert rc == 2
    assert "no checkpoint" in capsys.readouterr().err


def test_arena_json_target_is_checked_before_the_match(tmp_path, capsys):
    for target, why in ((str(tmp_path), "is a folder"), (str(tmp_path) + "/", "names a folder"),
                        ("/proc/spades_arena.json", "cannot write"),
                        (str(tmp_path / "no" / "x.json"), "no such folder")):
        t = time.time()
        r = _main("spades_env.arena", "--team0", "random", "--team1", "random", "--games",
                  "200", "--quiet", "--out", target, capsys=capsys)
        assert why in _one_line_error(r) and r.stdout == ""  # refused before playing
        assert time.time() - t < 5


@pytest.mark.parametrize("umask,mode", [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_arena_json_file_mode_follows_the_umask(tmp_path, capsys, umask, mode):
    out = tmp_path / "r.json"
    old = os.umask(umask)
    try:
        r = _main("spades_env.arena", "--team0", "random", "--team1", "random", "--games", "2",
                  "--quiet", "--out", str(out), capsys=capsys)
    finally:
        os.umask(old)
    assert r.returncode == 0, r.stderr
    assert os.stat(out).st_mode & 0o777 == mode
    assert os.listdir(tmp_path) == ["r.json"]
