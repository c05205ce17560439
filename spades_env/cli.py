"""The ``spades`` command: one entry point for every tool of the package.

``spades COMMAND [options]`` (also ``python -m spades_env COMMAND``); ``spades COMMAND --help``
lists a command's options, all spelled in kebab case (``--total-decisions``; a config field's
snake-case spelling ``--total_decisions`` is still accepted).

| command | does | needs |
|---|---|---|
| ``train`` | self-play training on a YAML config, then (``--evaluate``) the arena | ``[train]`` |
| ``eval`` | a checkpoint against bots: full games in duplicate pairs, intervals | ``[train]`` |
| ``arena`` | any two players (bots, checkpoints) on duplicate deals | base |
| ``play`` | the play app: a local web page to play the bots or a checkpoint | ``[play]`` |
| ``distill`` | search-labelled hands (``hard`` or ``expert``) and a network trained on them | ``[train]`` |
| ``teacher-records`` | records of a teacher bot's hands for the warm start | ``[train]`` |
| ``export`` | a checkpoint stripped for shipping | ``[train]`` |
| ``plot`` | a run's learning curve as a PNG | ``[train]`` |

A command's module is imported only when it runs, inside the handling of Ctrl-C: an interrupt at
any point (the imports of torch included) ends with one ``interrupted`` line and exit status 130,
and a missing extra with one ``error:`` line naming what to install (exit status 2).
"""

from __future__ import annotations

import difflib
import importlib
import sys

COMMANDS: dict[str, tuple[str, str]] = {
    "train": ("spades_env.training.train", "train a policy by self-play on a YAML config"),
    "eval": ("spades_env.training.evaluate", "evaluate a checkpoint against bots (duplicate "
                                             "pairs, 95% intervals)"),
    "arena": ("spades_env.arena", "play any two players on duplicate deals"),
    "play": ("spades_env.play.cli", "the play app: a local web page to play the bots"),
    "distill": ("spades_env.training.distill", "label hands by search and train the network on "
                                               "the labels"),
    "teacher-records": ("spades_env.training.teacher_records", "record a teacher bot's hands "
                                                               "for the warm start"),
    "export": ("spades_env.training.export", "strip a checkpoint for shipping"),
    "plot": ("spades_env.training.plot", "plot a run's learning curve as a PNG"),
}
"""``{command: (module whose main(argv) runs it, one-line summary)}``."""


def usage() -> str:
    """The text of ``spades --help``."""
    width = max(map(len, COMMANDS))
    lines = ["usage: spades COMMAND [options]   (spades COMMAND --help for its options)", "",
             "commands:"]
    lines += [f"  {name:<{width}}  {summary}" for name, (_, summary) in COMMANDS.items()]
    return "\n".join(lines)


def run(command: str, argv: list[str]) -> int:
    """Run ``command`` (a key of ``COMMANDS``) with the arguments ``argv``; returns its exit status.

    Ctrl-C at any point, the command's imports included, gives one line and 130; a missing
    optional package one ``error:`` line and 2.
    """
    module_name = COMMANDS[command][0]
    try:
        try:
            module = importlib.import_module(module_name)
        except ImportError as e:
            print(f"error: spades {command}: {e}", file=sys.stderr)
            return 2
        return module.main(argv)
    except KeyboardInterrupt:
        print(f"interrupted: spades {command}", file=sys.stderr)
        return 130


def moved(old: str, command: str, argv: list[str] | None = None) -> int:
    """Run an old ``python -m OLD`` form as ``spades COMMAND``, after a one-line notice."""
    print(f"notice: `python -m {old}` is now `spades {command}` (the old form is removed in "
          f"0.8.0)", file=sys.stderr)
    return run(command, sys.argv[1:] if argv is None else list(argv))


def main(argv: list[str] | None = None) -> int:
    """``spades COMMAND [options]``; returns the exit status (0 done, 2 bad input, 130 Ctrl-C)."""
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        if not argv or argv[0] in ("-h", "--help", "help"):
            print(usage())
            return 0 if argv else 2
        if argv[0] == "--version":
            from . import __version__
            print(f"spades_env {__version__}")
            return 0
        if argv[0] not in COMMANDS:
            near = difflib.get_close_matches(argv[0], COMMANDS, n=1)
            hint = f"; did you mean {near[0]!r}?" if near else ""
            print(f"error: unknown command {argv[0]!r}{hint} (commands: "
                  f"{', '.join(COMMANDS)})", file=sys.stderr)
            return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    return run(argv[0], argv[1:])


__all__ = ["COMMANDS", "main", "run", "moved", "usage"]
