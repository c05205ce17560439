"""spades_env: the reference RL environment for partnership Spades (see README.md).

Layers (imports point down only; docs/architecture.md): ``cards``/``rules`` -> ``engine`` ->
``observation`` -> ``bots`` and ``agents`` (players, from a seat's view) -> ``spades_v1`` (PettingZoo
AEC), ``single_agent`` (Gymnasium) and ``vector`` (batched, torch) -> ``arena`` -> ``play`` and
``integrations``. The trainer (``training``) is built on top and never imported from here.
"""

from .cards import (
    BID_OFFSET, BLIND_NIL_ACTION, LOOK_ACTION, NUM_ACTIONS, NUM_CARDS, Rank, Seat, Suit,
    action_str, bid_action, card_id, card_str, format_hand, mask_to_cards, parse_card,
    parse_cards, partner_of, team_of,
)
from .engine import IllegalActionError, Phase, PlayerView, SpadesGame
from .rules import PRESETS, HandResult, Rules, TeamScore, game_outcome, score_hand, trick_winner

__version__ = "0.7.0"

__all__ = [
    "BID_OFFSET", "BLIND_NIL_ACTION", "LOOK_ACTION", "NUM_ACTIONS", "NUM_CARDS", "Rank", "Seat",
    "Suit", "action_str", "bid_action", "card_id", "card_str", "format_hand", "mask_to_cards",
    "parse_card", "parse_cards", "partner_of", "team_of", "IllegalActionError", "Phase",
    "PlayerView", "SpadesGame", "PRESETS", "HandResult", "Rules", "TeamScore", "game_outcome",
    "score_hand", "trick_winner",
]


# Gymnasium ids of the single-agent env (``gym.make("Spades-v1")``, ``gym.make_vec``, SB3's
# ``make_vec_env``). Registering imports gymnasium's registry (not the env itself, nor torch).
GYM_IDS = {"Spades-v1": {}, "SpadesHand-v1": {"hands_per_episode": 1}}


def _register_gymnasium_ids() -> None:
    from gymnasium.envs.registration import register, registry
    for env_id, kwargs in GYM_IDS.items():
        if env_id not in registry:
            register(id=env_id, entry_point="spades_env.single_agent:SpadesSingleAgentEnv",
                     kwargs=dict(kwargs))


_register_gymnasium_ids()


def __getattr__(name):
    # Lazy imports so the engine never pulls in pettingzoo/torch (only gymnasium's registry).
    # importlib, not ``from . import``: that form calls this __getattr__ again (endless recursion).
    import importlib
    if name in ("spades_v0", "spades_v1"):  # v0: the deprecated alias of v1
        return importlib.import_module("." + name, __name__)
    if name == "SpadesSingleAgentEnv":
        return importlib.import_module(".single_agent", __name__).SpadesSingleAgentEnv
    raise AttributeError(f"module 'spades_env' has no attribute {name!r}")
