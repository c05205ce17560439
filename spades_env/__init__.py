"""spades_env: the reference RL environment for partnership Spades (see README.md).

Layers (imports go one way): ``cards``/``rules`` -> ``engine`` -> ``observation`` -> ``env``
(PettingZoo AEC) and ``vector`` (torch); ``bots`` use engine views.
"""

from .cards import (
    BID_OFFSET, BLIND_NIL_ACTION, LOOK_ACTION, NUM_ACTIONS, NUM_CARDS, Rank, Seat, Suit,
    action_str, bid_action, card_id, card_str, format_hand, mask_to_cards, parse_card,
    parse_cards, partner_of, team_of,
)
from .engine import IllegalActionError, Phase, PlayerView, SpadesGame
from .rules import PRESETS, HandResult, Rules, TeamScore, game_outcome, score_hand, trick_winner

__version__ = "0.1.0"

__all__ = [
    "BID_OFFSET", "BLIND_NIL_ACTION", "LOOK_ACTION", "NUM_ACTIONS", "NUM_CARDS", "Rank", "Seat",
    "Suit", "action_str", "bid_action", "card_id", "card_str", "format_hand", "mask_to_cards",
    "parse_card", "parse_cards", "partner_of", "team_of", "IllegalActionError", "Phase",
    "PlayerView", "SpadesGame", "PRESETS", "HandResult", "Rules", "TeamScore", "game_outcome",
    "score_hand", "trick_winner",
]


def __getattr__(name):
    # Lazy imports so the engine never pulls in pettingzoo/gymnasium/torch.
    # importlib, not ``from . import``: that form calls this __getattr__ again (endless recursion).
    import importlib
    if name == "spades_v0":
        return importlib.import_module(".spades_v0", __name__)
    if name == "SpadesSingleAgentEnv":
        return importlib.import_module(".single_agent", __name__).SpadesSingleAgentEnv
    raise AttributeError(f"module 'spades_env' has no attribute {name!r}")
