"""The options the ``spades`` commands share: one name, one meaning and one default for one idea.

Every command that takes one of these ideas adds it with the function here, so ``spades COMMAND
--help`` reads the same across commands (``tests/tools/test_cli_vocabulary.py`` reads every
parser and fails on two names for one idea, or two defaults):

| idea | option | default | commands |
|---|---|---|---|
| the checkpoint the command works on | positional ``checkpoint`` | - | eval, distill, export, plot |
| the opponents of a checkpoint | ``--vs BOT [BOT ...]`` | per command | eval, train |
| full games per match (duplicate pairs) | ``--games N`` | ``GAMES`` (200) | eval, arena, train |
| single-hand deals instead of games | ``--hands N`` | - | eval, arena |
| seed of the deals and the bots | ``--seed N`` | ``SEED`` (1) | eval, arena, distill, teacher-records, train |
| the file or folder written | ``--out PATH`` | per command | arena, distill, export, plot, teacher-records |
| print only the result | ``--quiet`` | off | eval, arena |
| a Ray cluster | ``--ray ADDRESS`` | local processes | eval, arena, distill, train |
| the rules | ``--rules RULES`` | per command | eval, arena |

The arena's ``--team0`` / ``--team1`` are another idea: the two sides of a symmetric match, side
A and side B of its statistics and records, where ``--vs`` is the opponents of one checkpoint.

The old spellings still work and print one ``warning:`` line naming the new one
(``old_spelling``): ``--json``, ``--folder`` and the positional ``DST`` / ``OUT`` of ``--out``,
``--no-progress`` of ``--quiet``, ``--evaluate`` of ``--vs``, ``--evaluate-games`` of
``--games``, ``--from`` of the positional ``checkpoint``.
"""

from __future__ import annotations

import argparse
import sys

SEED = 1
"""the default ``--seed`` of every command (the config field ``seed`` too)."""
GAMES = 200
"""the default ``--games``: full games per match or per opponent (100 duplicate pairs)."""


class _OldSpelling(argparse.Action):
    """A hidden old spelling of an option: one ``warning:`` line naming the new spelling, then
    the value stored where the new spelling stores it."""

    def __init__(self, option_strings, dest, new: str, **kwargs):
        self.new = new
        super().__init__(option_strings, dest, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        old = option_string or self.metavar or self.dest
        print(f"warning: {parser.prog} {old} is deprecated: use {self.new}", file=sys.stderr)
        setattr(namespace, self.dest, True if self.nargs == 0 else values)


def old_spelling(p: argparse.ArgumentParser, old: str, new: str, dest: str, *,
                 flag: bool = False, **kwargs) -> None:
    """Accept ``old`` as a hidden spelling of ``new``: it stores into ``dest`` after a one-line
    warning. ``old`` is an option (``--json``), or an old positional's metavar (``DST``): that
    positional is optional now, and ``required`` asks for ``new`` after parsing. ``flag``: the
    option takes no value."""
    kwargs.update(action=_OldSpelling, new=new, help=argparse.SUPPRESS, default=argparse.SUPPRESS)
    if flag:
        kwargs["nargs"] = 0
    if old.startswith("-"):
        p.add_argument(old, dest=dest, **kwargs)
    else:
        kwargs["metavar"] = f"{old} (positional)"
        p.add_argument(dest, nargs="?", **kwargs)


def add_checkpoint(p: argparse.ArgumentParser, help: str, *, old: tuple[str, ...] = ()) -> None:
    """The positional ``checkpoint``: the checkpoint the command works on. With ``old`` spellings
    (``--from``) the positional is optional to argparse; ``required(p, ns, "checkpoint")`` then
    asks for it after parsing."""
    if old:
        p.add_argument("checkpoint", nargs="?", default=argparse.SUPPRESS, help=help)
        for name in old:
            old_spelling(p, name, "the positional checkpoint", "checkpoint", metavar="PATH")
    else:
        p.add_argument("checkpoint", help=help)


def add_vs(p: argparse.ArgumentParser, default: list[str] | None, help: str, *,
           old: tuple[str, ...] = ()) -> None:
    """``--vs BOT [BOT ...]``: the opponents of a checkpoint (``make_bot`` names)."""
    p.add_argument("--vs", nargs="+", default=default, metavar="BOT", help=help)
    for name in old:
        old_spelling(p, name, "--vs", "vs", nargs="+", metavar="BOT")


class _Games(argparse.Action):
    def __call__(self, parser, namespace, values, option_string=None):
        if option_string != "--games":
            print(f"warning: {parser.prog} {option_string} is deprecated: use --games",
                  file=sys.stderr)
        setattr(namespace, self.dest, values)
        namespace.games_given = True


def add_games(p: argparse.ArgumentParser, help: str, *, hands: str | None = None,
              old: tuple[str, ...] = ()) -> None:
    """``--games N`` (default ``GAMES``), and with ``hands`` the help of ``--hands N`` (single-hand
    deals instead of games; ``match_problem`` refuses both together)."""
    p.add_argument("--games", type=int, default=GAMES, action=_Games, metavar="N",
                   help=f"{help} (default {GAMES} = {GAMES // 2} duplicate pairs)")
    for name in old:  # hidden; _Games says it is deprecated
        p.add_argument(name, dest="games", type=int, action=_Games, metavar="N",
                       default=argparse.SUPPRESS, help=argparse.SUPPRESS)
    p.set_defaults(games_given=False)
    if hands is not None:
        p.add_argument("--hands", type=int, default=None, metavar="N", help=hands)


def match_problem(ns: argparse.Namespace) -> str | None:
    """What is wrong with ``ns.games`` / ``ns.hands`` (both given, an odd or too small count), or
    None. Full games come in duplicate pairs."""
    hands = getattr(ns, "hands", None)
    if hands is not None and ns.games_given:
        return "give --games (full games) or --hands (single hands), not both"
    if hands is None and (ns.games < 2 or ns.games % 2):
        return (f"--games must be an even number >= 2 (full games come in duplicate pairs), "
                f"got {ns.games}")
    if hands is not None and hands < 2:
        return f"--hands must be >= 2, got {hands}"
    return None


def add_seed(p: argparse.ArgumentParser, help: str = "seed of the deals and the bots") -> None:
    """``--seed N`` (default ``SEED``)."""
    p.add_argument("--seed", type=int, default=SEED, metavar="N", help=f"{help} (default {SEED})")


def add_out(p: argparse.ArgumentParser, help: str, *, default: str | None = None,
            metavar: str = "PATH", old: tuple[str, ...] = ()) -> None:
    """``--out PATH``: the file or folder the command writes. ``old`` spellings: options
    (``--json``) or old positionals' metavars (``DST``; ``required(p, ns, "out", "--out")`` then
    asks for ``--out`` where it must be given)."""
    p.add_argument("--out", default=default, metavar=metavar, help=help)
    for name in old:
        old_spelling(p, name, "--out", "out", **({"metavar": metavar} if name[0] == "-" else {}))


def add_quiet(p: argparse.ArgumentParser, help: str, *, old: tuple[str, ...] = ()) -> None:
    """``--quiet``: print only the result."""
    p.add_argument("--quiet", action="store_true", help=help)
    for name in old:
        old_spelling(p, name, "--quiet", "quiet", flag=True)


def add_ray(p: argparse.ArgumentParser, help: str, dest: str = "ray") -> None:
    """``--ray ADDRESS``: a Ray cluster (``auto`` or ``HOST:PORT``)."""
    p.add_argument("--ray", dest=dest, default=None, metavar="ADDRESS", help=help)


def add_rules(p: argparse.ArgumentParser, default: str | None, what: str) -> None:
    """``--rules RULES``: ``what`` the default is, then the forms a rules text takes."""
    from .rules import PRESETS
    p.add_argument("--rules", default=default, metavar="RULES",
                   help=f"the rules to play (default: {what}): a preset ({', '.join(PRESETS)}), "
                        f"a preset and fields ('house,min_team_bid=4') or a mapping ('{{preset: "
                        f"house, min_team_bid: 4}}'); docs/rules.md")


def required(p: argparse.ArgumentParser, ns: argparse.Namespace, dest: str, shown: str) -> None:
    """Exit as argparse does (status 2, usage) when ``dest`` got no value: an argument that only
    its old spelling made optional to argparse."""
    if getattr(ns, dest, None) is None:
        p.error(f"the following arguments are required: {shown}")


__all__ = ["SEED", "GAMES", "old_spelling", "add_checkpoint", "add_vs", "add_games",
           "match_problem", "add_seed", "add_out", "add_quiet", "add_ray", "add_rules", "required"]
