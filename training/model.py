"""The policy/value network shared by all four seats.

Input: the observation of ``spades_env.observation`` (one seat's information set; 679 floats in
version 2, a network trained on version 1's 575 reads the first 575, ``obs_size``).
A shared ReLU trunk feeds three heads:

| head    | output                         | used in phase            |
|---------|--------------------------------|--------------------------|
| play    | 52 logits, one per card id     | play and Blind Nil exchange (action ids 0..51) |
| bid     | 16 logits: bid 0..13, Blind Nil, look | bidding (action ids 52..67) |
| value   | 1 scalar: expected scaled point difference of the seat's team until the episode ends |

The two policy heads are concatenated into the 68-wide action space (``spades_env.cards``); in each
phase the legal mask zeroes the other head's actions, so bidding and card play are separate
distributions that share features. Illegal logits are set to ``finfo.min`` (STYLE.md, Masks).
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn
from torch.distributions import Categorical

from spades_env.cards import NUM_ACTIONS, NUM_CARDS
from spades_env.observation import OBS_SIZE

NUM_BID_ACTIONS = NUM_ACTIONS - NUM_CARDS  # 16


def _layer(i: int, o: int, std: float = float(np.sqrt(2))) -> nn.Linear:
    lin = nn.Linear(i, o)
    nn.init.orthogonal_(lin.weight, std)
    nn.init.constant_(lin.bias, 0.0)
    return lin


class Agent(nn.Module):
    """Shared trunk with card-play, bidding and value heads.

    Args:
        hidden: trunk widths (list of ints), e.g. ``[512, 256]``.
        head_hidden: width of each head's hidden layer.
        obs_size: input width: ``OBS_SIZE`` (observation version 2), or ``OBS_SIZE_V1`` (575)
            for a network trained on version 1; a wider observation is cut to its first
            ``obs_size`` floats (version 1's pieces keep their offsets in version 2).
    Shapes: ``obs`` float32 ``[B, OBS_SIZE]`` (or ``[B, obs_size]``), ``mask`` bool ``[B, 68]``
    (True = legal).
    """

    def __init__(self, hidden=(512, 256), head_hidden: int = 128, obs_size: int = OBS_SIZE):
        super().__init__()
        layers, w = [], obs_size
        for h in hidden:
            layers += [_layer(w, h), nn.ReLU()]
            w = h
        self.trunk = nn.Sequential(*layers)
        self.play_head = nn.Sequential(_layer(w, head_hidden), nn.ReLU(),
                                       _layer(head_hidden, NUM_CARDS, 0.01))
        self.bid_head = nn.Sequential(_layer(w, head_hidden), nn.ReLU(),
                                      _layer(head_hidden, NUM_BID_ACTIONS, 0.01))
        self.value_head = nn.Sequential(_layer(w, head_hidden), nn.ReLU(),
                                        _layer(head_hidden, 1, 1.0))
        self.hidden = list(hidden)
        self.head_hidden = head_hidden
        self.obs_size = obs_size

    def forward(self, obs: torch.Tensor):
        """Returns ``(logits [B, 68] unmasked, value [B])``."""
        z = self.trunk(obs[..., :self.obs_size])
        logits = torch.cat([self.play_head(z), self.bid_head(z)], dim=-1)
        return logits, self.value_head(z).squeeze(-1)

    def get_value(self, obs: torch.Tensor) -> torch.Tensor:
        return self.value_head(self.trunk(obs[..., :self.obs_size])).squeeze(-1)

    @staticmethod
    def masked(logits: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """Set illegal logits to ``finfo.min``.

        Raises:
            ValueError: a row of ``mask`` with no legal action.
        """
        if not bool(mask.any(dim=-1).all()):
            raise ValueError("action mask row with no legal action")
        return torch.where(mask, logits, torch.finfo(logits.dtype).min)

    def get_action_and_value(self, obs, mask, action=None, greedy: bool = False):
        """Sample (or score) actions under the masked policy.

        Returns ``(action [B] int64, log_prob [B], entropy [B], value [B])``.
        """
        logits, value = self(obs)
        logits = self.masked(logits, mask)
        dist = Categorical(logits=logits)
        if action is None:
            action = logits.argmax(-1) if greedy else dist.sample()
        return action, dist.log_prob(action), dist.entropy(), value


__all__ = ["Agent", "NUM_BID_ACTIONS"]
