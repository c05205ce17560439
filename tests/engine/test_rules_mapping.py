"""A rules mapping (docs/rules.md, Variant switches): ``Rules.parse`` and ``Rules.spec``, and the
commands and the trainer's config that take one (``spades arena --rules``, ``spades eval
--rules``, ``rules:`` in a YAML config)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from spades_env import PRESETS, Rules

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.mark.parametrize("spec,want", [
    ("house", Rules(loss_threshold=-200, blind_nil=True)),
    ("house,min_team_bid=4", Rules(loss_threshold=-200, blind_nil=True, min_team_bid=4)),
    ("{preset: house, min_team_bid: 4}", Rules(loss_threshold=-200, blind_nil=True,
                                              min_team_bid=4)),
    ('{"preset": "short", "bid_total_not_13": true}', Rules(target_score=250,
                                                            bid_total_not_13=True)),
    ({"preset": "suicide", "target_score": 300}, Rules(target_score=300, loss_threshold=-200,
                                                       suicide=True, min_team_bid=4)),
    ({"mirror": True}, Rules(mirror=True)),
    ("mirror=True, loss_threshold=None", Rules(mirror=True)),
    ("'house', min_team_bid=4", Rules(loss_threshold=-200, blind_nil=True, min_team_bid=4)),
    ('"mirror"', Rules.preset("mirror")),
])
def test_parse_reads_a_preset_and_fields(spec, want):
    assert Rules.parse(spec) == want
    assert Rules.parse(Rules.parse(spec).spec()) == want  # spec() reads back


def test_spec_is_the_preset_name_or_the_fields_that_differ():
    assert [Rules.parse(n).spec() for n in PRESETS] == list(PRESETS)
    assert Rules(min_team_bid=4, target_score=250).spec() == "standard,target_score=250," \
                                                            "min_team_bid=4"


@pytest.mark.parametrize("spec,words", [
    ("nope", "unknown rules preset 'nope'; known: ['house', 'joker_joker_deuce_deuce', 'mirror', "
             "'short', 'standard', 'suicide', 'whiz']"),
    ("house,foo=1", "unknown rules field(s): ['foo']"),
    ("house,min_team_bid=four", "rules field min_team_bid: 'four' is not an int"),
    ("mirror,whiz=true", "Rules.mirror and Rules.whiz cannot both be on"),
    ("house,short", "two presets"),
    (7, "rules must be a Rules, a preset name (standard, short, house, suicide, mirror, whiz, "
        "joker_joker_deuce_deuce)"),
    ("min_team_bid=4,min_team_bid=5", "field min_team_bid given twice"),
    ("{preset: house, preset: short}", "field preset given twice"),
    ("min_team_bid=4_0", "rules field min_team_bid: '4_0' is not an int"),
    ("min_team_bid=\u0664", "is not an int"),
    ("min_team_bid=" + "9" * 5000, "(5000 digits) is out of range"),
])
def test_parse_refuses_with_the_reason(spec, words):
    with pytest.raises(ValueError) as e:
        Rules.parse(spec)
    assert words in str(e.value)


def _spades(*args):
    return subprocess.run([sys.executable, "-m", "spades_env", *args], capture_output=True,
                          text=True, timeout=240, cwd=ROOT)


def test_arena_takes_a_rules_mapping_and_lists_the_presets_in_its_help():
    """``spades arena --rules`` under a preset with a field changed: every bid of the match
    records keeps suicide's one Nil per partnership."""
    h = _spades("arena", "--help")
    assert h.returncode == 0
    assert all(name in " ".join(h.stdout.split()) for name in PRESETS)
    r = _spades("arena", "--team0", "medium", "--team1", "easy", "--hands", "2",
                "--quiet", "--rules", "{preset: suicide, target_score: 300}")
    assert r.returncode == 0, r.stderr
    bad = _spades("arena", "--team0", "easy", "--team1", "easy", "--hands", "2", "--quiet",
                  "--rules", "suicide,whiz=true")
    assert bad.returncode == 2
    assert "Rules.whiz and Rules.suicide cannot both be on" in bad.stderr.replace("\n", " ") or \
        "Rules.suicide" in bad.stderr


def test_a_config_takes_a_rules_mapping():
    """``rules:`` in a YAML config may be a mapping; the config stores it as the text
    ``Rules.parse`` reads, and a bad one is refused naming the field."""
    pytest.importorskip("torch")  # spades_env.training
    pytest.importorskip("yaml")
    from spades_env.training.config import from_dict
    a = from_dict({"rules": {"preset": "mirror", "target_score": 300}})
    assert Rules.parse(a.rules) == Rules(target_score=300, loss_threshold=-200, mirror=True)
    with pytest.raises(ValueError, match="bad config: rules"):
        from_dict({"rules": {"preset": "mirror", "whiz": True}})


def test_a_rules_pickled_before_the_house_rules_loads_with_them_off():
    """A ``Rules`` pickled by an earlier version (its state lacks the house-rule fields, as a Ray
    worker with an older install sends it) unpickles with those fields at their defaults and its
    checks run again; a current one round-trips exactly."""
    import pickle

    r = Rules(target_score=300, loss_threshold=-200, blind_nil=True)
    old_state = {k: v for k, v in r.__dict__.items()
                 if k in ("target_score", "loss_threshold", "blind_nil", "forced_spade_lead_breaks",
                          "bag_limit", "bag_penalty", "nil_bonus", "blind_nil_bonus",
                          "failed_nil_tricks_count")}
    old = Rules.__new__(Rules)
    old.__setstate__(old_state)
    assert old == r and old.min_team_bid == 0 and old.two_of_clubs_leads is False
    from spades_env.rules import legal_bids
    assert legal_bids(old, 0, 0, True, [None] * 4) == (1 << 14) - 1
    h = Rules(mirror=True, moon_wins=True)
    assert pickle.loads(pickle.dumps(h)) == h
    with pytest.raises(ValueError, match="target_score must be positive"):
        Rules.__new__(Rules).__setstate__({**old_state, "target_score": 0})
