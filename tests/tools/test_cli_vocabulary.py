"""One vocabulary at the edges: every ``spades`` command spells one idea with one option name, and
gives it one default (``spades_env.options``). The parsers are read as ``spades COMMAND --help``
shows them (options whose help is hidden, the old spellings and the config fields of ``spades
train``, are left out); the old spellings are checked to still work, with one warning line."""

from __future__ import annotations

import argparse
import re

import pytest

from spades_env import cli
from spades_env.options import GAMES, SEED

# Every name a command could give each idea: two commands using two of them fail the test.
SYNONYMS = {
    "the checkpoint the command works on": {"checkpoint", "src", "--from", "--src", "--ckpt",
                                            "--checkpoint-path", "--model"},
    "the opponents of a checkpoint": {"--vs", "--evaluate", "--opponent", "--opponents",
                                      "--against", "--bots", "--eval-vs"},
    "full games per match": {"--games", "--evaluate-games", "--num-games", "--n-games",
                             "--eval-games", "--match-games"},
    "single-hand deals instead of games": {"--hands", "--deals", "--num-hands"},
    "the seed": {"--seed", "--seeds", "--rng-seed", "--random-seed"},
    "the file or folder written": {"--out", "--output", "--json", "--folder", "--dst", "--dest",
                                   "dst", "out", "-o", "--output-dir", "--out-dir"},
    "print only the result": {"--quiet", "--no-progress", "--silent", "-q", "--no-bar"},
    "a Ray cluster": {"--ray", "--address", "--ray-address", "--cluster"},
    "the rules": {"--rules", "--preset", "--rule-set"},
}
# ``spades play --checkpoint`` is not in the first idea: it is an optional opponent level of the
# page, not the checkpoint the command works on. ``spades arena --team0/--team1`` name the two
# sides of a symmetric match (side A, side B), another idea than ``--vs``.
DEFAULTS = {"--seed": SEED, "--games": GAMES}


def _visible(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    """``{name: action}`` of what ``--help`` shows: option strings, and positionals by dest."""
    out = {}
    for action in parser._actions:
        if action.help == argparse.SUPPRESS or isinstance(action, argparse._HelpAction):
            continue
        for name in action.option_strings or [action.dest]:
            out[name] = action
    return out


@pytest.fixture(scope="module")
def parsers() -> dict[str, argparse.ArgumentParser]:
    return {command: cli.parser(command) for command in cli.COMMANDS}


def test_every_command_has_a_parser(parsers):
    assert {c: p.prog for c, p in parsers.items()} == {c: f"spades {c}" for c in cli.COMMANDS}


def test_one_name_for_one_idea_across_commands(parsers):
    problems = []
    for idea, names in SYNONYMS.items():
        used = {}  # name -> commands
        for command, parser in parsers.items():
            for name in names & set(_visible(parser)):
                used.setdefault(name, []).append(command)
        if len(used) > 1:
            problems.append(f"{idea}: " + "; ".join(f"{n} in {', '.join(c)}"
                                                    for n, c in sorted(used.items())))
        for command, parser in parsers.items():
            mine = sorted(names & set(_visible(parser)))
            if len(mine) > 1:
                problems.append(f"{idea}: spades {command} has {mine}")
    assert not problems, "two names for one idea:\n" + "\n".join(problems)


@pytest.mark.parametrize("name", sorted(DEFAULTS))
def test_one_default_for_one_idea_and_the_help_says_it(parsers, name):
    seen = {c: _visible(p)[name] for c, p in parsers.items() if name in _visible(p)}
    assert len(seen) >= 2, f"{name} is in fewer than two commands: {sorted(seen)}"
    assert {c: a.default for c, a in seen.items()} == dict.fromkeys(seen, DEFAULTS[name])
    said = {c: re.findall(r"default (\d+)", a.help) for c, a in seen.items()}
    assert said == dict.fromkeys(seen, [str(DEFAULTS[name])])


def test_the_trainers_config_seed_is_the_commands_seed():
    from spades_env.training.config import Args
    assert Args().seed == SEED == 1


def test_the_checker_sees_two_names_for_one_idea():
    """The test above can fail: the parsers of 0.8.0's first release, in miniature."""
    old_eval, old_arena = argparse.ArgumentParser(), argparse.ArgumentParser()
    old_eval.add_argument("--quiet", action="store_true", help="print only the summary table")
    old_arena.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    names = SYNONYMS["print only the result"]
    assert [sorted(names & set(_visible(p))) for p in (old_eval, old_arena)] == \
        [["--quiet"], ["--no-progress"]]


# command, the old spelling's arguments, the new spelling's, the warning line
OLD_SPELLINGS = [
    ("arena", ["--team0", "a", "--team1", "b", "--json", "r.json"],
     ["--team0", "a", "--team1", "b", "--out", "r.json"],
     "warning: spades arena --json is deprecated: use --out"),
    ("arena", ["--team0", "a", "--team1", "b", "--no-progress"],
     ["--team0", "a", "--team1", "b", "--quiet"],
     "warning: spades arena --no-progress is deprecated: use --quiet"),
    ("train", ["--evaluate", "easy", "medium"], ["--vs", "easy", "medium"],
     "warning: spades train --evaluate is deprecated: use --vs"),
    ("train", ["--evaluate-games", "40"], ["--games", "40"],
     "warning: spades train --evaluate-games is deprecated: use --games"),
    ("teacher-records", ["--folder", "recs"], ["--out", "recs"],
     "warning: spades teacher-records --folder is deprecated: use --out"),
    ("distill", ["--from", "a.pt", "--out", "b.pt"], ["a.pt", "--out", "b.pt"],
     "warning: spades distill --from is deprecated: use the positional checkpoint"),
    ("export", ["a.pt", "b.pt"], ["a.pt", "--out", "b.pt"],
     "warning: spades export DST (positional) is deprecated: use --out"),
    ("plot", ["a.pt", "c.png"], ["a.pt", "--out", "c.png"],
     "warning: spades plot OUT (positional) is deprecated: use --out"),
]


@pytest.mark.parametrize("command, old, new, warning", OLD_SPELLINGS,
                         ids=[f"{c} {o[-2] if len(o) > 1 else o[0]}" for c, o, _, _ in
                              OLD_SPELLINGS])
def test_old_spellings_parse_as_the_new_ones_with_one_warning(command, old, new, warning,
                                                               capsys):
    parser = cli.parser(command)
    ns_new = parser.parse_args(new)
    assert capsys.readouterr().err == ""
    ns_old = cli.parser(command).parse_args(old)
    assert capsys.readouterr().err == warning + "\n"
    assert vars(ns_old) == vars(ns_new)


def test_games_and_hands_together_are_refused_even_at_the_default_count(capsys):
    from spades_env.arena import main
    assert main(["--team0", "random", "--team1", "random", "--games", str(GAMES), "--hands",
                 "4", "--quiet"]) == 2
    assert capsys.readouterr().err == ("error: give --games (full games) or --hands (single "
                                       "hands), not both\n")
