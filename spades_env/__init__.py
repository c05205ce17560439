"""spades_env: the reference RL environment for partnership Spades (see README.md).

Layers (imports point down only; docs/architecture.md): ``cards``/``rules`` -> ``engine`` ->
``observation`` -> ``bots`` and ``agents`` (players, from a seat's view) -> ``spades_v1`` (PettingZoo
AEC), ``single_agent`` (Gymnasium) and ``vector`` (batched, torch) -> ``arena`` -> ``play`` and
``integrations``. The trainer (``training``) is built on top and never imported from here.
"""

import os
import sys

_COMMAND_SCRIPTS = ("spades",)  # the console script (pyproject.toml)
_COMMAND_PACKAGES = ("spades_env",)  # python -m spades_env[.X]


def _started_as_command(orig_argv=None) -> bool:
    """True when the interpreter was started to run one of the package's commands: the console
    script ``spades``, or ``python -m`` of a module of ``spades_env`` (read from
    ``sys.orig_argv``; worker processes are started with ``-c``).

    ``import spades_env`` then answers Ctrl-C during its own imports (numpy, Gymnasium) as the
    commands do: one ``interrupted`` line and exit status 130, not a traceback.
    """
    args = list(sys.orig_argv if orig_argv is None else orig_argv)[1:]
    i = 0
    while i < len(args) and args[i].startswith("-") and args[i] not in ("-", "--", "-c"):
        if args[i].startswith("-m"):  # -m MODULE or -mMODULE
            target = args[i][2:] or (args[i + 1] if i + 1 < len(args) else "")
            return target.split(".")[0] in _COMMAND_PACKAGES
        i += 2 if args[i] in ("-W", "-X", "--check-hash-based-pycs") else 1
    if i >= len(args) or args[i].startswith("-"):  # -c CODE, stdin, the interactive prompt
        return False
    name = os.path.basename(args[i])
    for suffix in ("-script.pyw", "-script.py", ".exe"):  # the Windows launchers
        name = name.removesuffix(suffix)
    return name in _COMMAND_SCRIPTS


def _command_excepthook(kind, value, tb, _default=sys.excepthook) -> None:
    """``sys.excepthook`` of a process started as a command (``_started_as_command``): Ctrl-C
    anywhere, a module's own imports included, prints one ``interrupted`` line (Python then ends
    the process by SIGINT: exit status 130); a reader that closed the output pipe ends it quietly;
    anything else prints its traceback as usual."""
    if issubclass(kind, KeyboardInterrupt):
        print("interrupted", file=sys.stderr)
    elif issubclass(kind, BrokenPipeError):
        try:  # nothing more reaches the closed pipe, nor a second error at exit
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, AttributeError, ValueError):
            pass
    else:
        _default(kind, value, tb)


# Gymnasium ids of the single-agent env (``gym.make("Spades-v1")``, ``gym.make_vec``, SB3's
# ``make_vec_env``). Registering imports gymnasium's registry (not the env itself, nor torch).
GYM_IDS = {"Spades-v1": {}, "SpadesHand-v1": {"hands_per_episode": 1},
           "Spades-v2": {"obs_version": 3}, "SpadesHand-v2": {"hands_per_episode": 1,
                                                               "obs_version": 3}}


def _register_gymnasium_ids() -> None:
    from gymnasium.envs.registration import register, registry
    for env_id, kwargs in GYM_IDS.items():
        if env_id not in registry:
            register(id=env_id, entry_point="spades_env.single_agent:SpadesSingleAgentEnv",
                     kwargs=dict(kwargs))


if _started_as_command():
    sys.excepthook = _command_excepthook

try:  # numpy and Gymnasium take a moment to import: Ctrl-C may land here
    from .cards import (
        BID_OFFSET, BLIND_NIL_ACTION, LOOK_ACTION, NUM_ACTIONS, NUM_CARDS, Rank, Seat, Suit,
        action_str, bid_action, card_id, card_str, format_hand, mask_to_cards, parse_card,
        parse_cards, partner_of, team_of,
    )
    from .engine import IllegalActionError, Phase, PlayerView, SpadesGame
    from .rules import PRESETS, HandResult, Rules, TeamScore, game_outcome, score_hand, trick_winner
    _register_gymnasium_ids()
except KeyboardInterrupt:
    if not _started_as_command():
        raise
    print("interrupted", file=sys.stderr)
    raise SystemExit(130) from None

__version__ = "0.9.0"

__all__ = [
    "BID_OFFSET", "BLIND_NIL_ACTION", "LOOK_ACTION", "NUM_ACTIONS", "NUM_CARDS", "Rank", "Seat",
    "Suit", "action_str", "bid_action", "card_id", "card_str", "format_hand", "mask_to_cards",
    "parse_card", "parse_cards", "partner_of", "team_of", "IllegalActionError", "Phase",
    "PlayerView", "SpadesGame", "PRESETS", "HandResult", "Rules", "TeamScore", "game_outcome",
    "score_hand", "trick_winner",
]


def __getattr__(name):
    # Lazy imports so the engine never pulls in pettingzoo/torch (only gymnasium's registry).
    # importlib, not ``from . import``: that form calls this __getattr__ again (endless recursion).
    import importlib
    if name in ("spades_v0", "spades_v1", "spades_v2"):  # v0: the deprecated alias of v1
        return importlib.import_module("." + name, __name__)
    if name == "SpadesSingleAgentEnv":
        return importlib.import_module(".single_agent", __name__).SpadesSingleAgentEnv
    raise AttributeError(f"module 'spades_env' has no attribute {name!r}")
