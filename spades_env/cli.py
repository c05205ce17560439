"""The ``spades`` command: one entry point for every tool of the package.

``spades COMMAND [options]`` (also ``python -m spades_env COMMAND``); ``spades COMMAND --help``
lists a command's options, all spelled in kebab case (``--total-decisions``; a config field's
snake-case spelling ``--total_decisions`` is still accepted).

| command | does | needs |
|---|---|---|
| ``train`` | self-play training on a YAML config, then (``--vs``) the arena | ``[train]`` |
| ``eval`` | a checkpoint against bots: full games in duplicate pairs, intervals | ``[train]`` |
| ``arena`` | any two players (bots, checkpoints) on duplicate deals | base |
| ``play`` | the play app: a local web page to play the bots or a checkpoint | ``[play]`` |
| ``distill`` | search-labelled hands (``hard`` or ``expert``) and a network trained on them | ``[train]`` |
| ``teacher-records`` | records of a teacher bot's hands for the warm start | ``[train]`` |
| ``export`` | a checkpoint stripped for shipping | ``[train]`` |
| ``plot`` | a run's learning curve as a PNG | ``[train]`` |

The options several commands take have one name, meaning and default each
(``spades_env.options``: ``--seed``, ``--games``, ``--hands``, ``--vs``, ``--out``, ``--quiet``,
``--ray``, ``--rules``, the positional ``checkpoint``); each module's ``build_parser()`` builds its
command's parser (``parser(command)``), and the old spellings still work with a warning line.

A command's module is imported only when it runs, inside the handling of Ctrl-C: an interrupt
from the moment ``import spades_env`` starts (the imports of torch included) ends with one
``interrupted`` line and exit status 130 (in the first few tens of milliseconds, before Python
reaches the package, and inside a native library's own start-up, the interpreter or that
library answers it), and a missing extra with one ``error:`` line naming the package and
what installs it (exit status 2). Output to a reader that has gone (``spades arena ... | head
-1``) is dropped and the command finishes its work. An empty argument (``--out ""``) is refused.
"""

from __future__ import annotations

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

EXTRAS: dict[str, str] = {
    "torch": "torch", "yaml": "train", "tensorboard": "train", "matplotlib": "train",
    "fastapi": "play", "starlette": "play", "uvicorn": "play", "platformdirs": "play",
    "ray": "ray",
}
"""``{optional package: the extra of pyproject.toml that installs it}``."""

_PIP_NAMES = {"yaml": "pyyaml"}
_EXTRA_HOLDS = {"train": " (torch, tensorboard, pyyaml, matplotlib)",
                "play": " (fastapi, uvicorn, platformdirs)"}


def usage() -> str:
    """The text of ``spades --help``."""
    width = max(map(len, COMMANDS))
    lines = ["usage: spades COMMAND [options]   (spades COMMAND --help for its options)", "",
             "commands:"]
    lines += [f"  {name:<{width}}  {summary}" for name, (_, summary) in COMMANDS.items()]
    return "\n".join(lines)


def missing_extra(error: ImportError) -> str | None:
    """What to say when an optional package is missing: ``needs PACKAGE, which is not installed:
    pip install 'spades_env[EXTRA]'``, or None when ``error`` is not about a package of
    ``EXTRAS``."""
    top = (getattr(error, "name", None) or "").split(".")[0]
    if top not in EXTRAS:
        return None
    extra = EXTRAS[top]
    return (f"needs {_PIP_NAMES.get(top, top)}, which is not installed: pip install "
            f"'spades_env[{extra}]'{_EXTRA_HOLDS.get(extra, '')}")


def empty_argument(argv: list[str]) -> str | None:
    """The message for the first empty argument of ``argv`` (``--out ""``, ``--out=``, an empty
    file name), None when there is none: no option of any command takes an empty value."""
    for i, arg in enumerate(argv):
        if arg.startswith("--") and arg.endswith("=") and arg.count("=") == 1 and len(arg) > 3:
            return f"{arg} has an empty value (give a value, or leave the option out)"
        if arg == "" and i and argv[i - 1].startswith("-"):
            return (f"an empty value after {_shown(argv[i - 1])} (give a value, or leave the "
                    f"option out)")
        if arg == "":
            return "an empty argument (a file name or a value needs at least one character)"
    return None


def parser(command: str):
    """The ``argparse`` parser of ``command`` (a key of ``COMMANDS``): its module's
    ``build_parser()``. Imports the module (and what it needs: torch for the trainer's)."""
    import importlib
    return importlib.import_module(COMMANDS[command][0]).build_parser()


def run(command: str, argv: list[str]) -> int:
    """Run ``command`` (a key of ``COMMANDS``) with the arguments ``argv``; returns its exit status.

    Ctrl-C at any point, the command's imports included, gives one line and 130; a missing
    optional package one ``error:`` line naming what to install, and an empty argument one
    ``error:`` line (both 2). Output to a closed pipe is dropped (``fileio.quiet_broken_pipe``).
    """
    module_name = COMMANDS[command][0]
    try:  # every import inside: Ctrl-C at any point is one line
        import importlib

        from .fileio import quiet_broken_pipe
    except KeyboardInterrupt:
        print(f"interrupted: spades {command}", file=sys.stderr)
        return 130
    with quiet_broken_pipe():
        try:
            problem = empty_argument(argv)
            if problem:
                print(f"error: spades {command}: {problem}", file=sys.stderr)
                return 2
            try:
                module = importlib.import_module(module_name)
            except ImportError as e:
                hint = missing_extra(e)
                print(f"error: spades {command} {hint}" if hint else
                      f"error: spades {command}: {e}", file=sys.stderr)
                return 2
            try:
                return module.main(argv)
            except ImportError as e:  # an optional package the command loads as it runs
                hint = missing_extra(e)
                if hint is None:
                    raise
                print(f"error: spades {command} {hint}", file=sys.stderr)
                return 2
        except KeyboardInterrupt:
            print(f"interrupted: spades {command}", file=sys.stderr)
            return 130


def main(argv: list[str] | None = None) -> int:
    """``spades COMMAND [options]``; returns the exit status (0 done, 2 bad input, 130 Ctrl-C).

    ``spades``, ``spades --help`` and ``spades help`` list the commands (the first, with no
    command, on stderr with status 2, as argparse does); ``spades help COMMAND`` and ``spades -h
    COMMAND`` show that command's help.
    """
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        from .fileio import quiet_broken_pipe
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    with quiet_broken_pipe():
        try:
            if not argv:
                print(usage(), file=sys.stderr)
                print("error: give a command", file=sys.stderr)
                return 2
            if argv[0] in ("-h", "--help", "help"):
                if len(argv) == 1:
                    print(usage())
                    return 0
                if argv[1] in COMMANDS and len(argv) == 2:
                    argv = [argv[1], "--help"]
                else:
                    print(f"error: {argv[0]} takes one command name, got "
                          f"{' '.join(map(_shown, argv[1:]))} (commands: {', '.join(COMMANDS)})",
                          file=sys.stderr)
                    return 2
            if argv[0] == "--version":
                if len(argv) > 1:
                    print(f"error: --version takes no arguments, got "
                          f"{' '.join(map(_shown, argv[1:]))}", file=sys.stderr)
                    return 2
                from . import __version__
                print(f"spades_env {__version__}")
                return 0
            if argv[0] not in COMMANDS:
                import difflib
                near = difflib.get_close_matches(argv[0], COMMANDS, n=1)
                hint = f"; did you mean {near[0]!r}?" if near else ""
                print(f"error: unknown command {_shown(argv[0])}{hint} (commands: "
                      f"{', '.join(COMMANDS)})", file=sys.stderr)
                return 2
        except KeyboardInterrupt:
            print("interrupted", file=sys.stderr)
            return 130
        return run(argv[0], argv[1:])


def _shown(arg: str, limit: int = 60) -> str:
    """``repr(arg)``, cut to ``limit`` characters for a message."""
    return repr(arg) if len(arg) <= limit else f"{arg[:limit]!r}... ({len(arg)} characters)"


__all__ = ["COMMANDS", "EXTRAS", "main", "run", "parser", "usage", "missing_extra",
           "empty_argument"]
