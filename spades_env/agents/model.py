"""The policy/value network shared by all four seats (what a checkpoint holds the weights of).

Input: the observation of ``spades_env.observation`` (one seat's information set; 711 floats in
version 3; a network trained on version 2's 679 or version 1's 575 reads the first 679 or 575,
``obs_size``).
A shared ReLU trunk feeds three heads:

| head    | output                         | used in phase            |
|---------|--------------------------------|--------------------------|
| play    | 52 logits, one per card id     | play and Blind Nil exchange (action ids 0..51) |
| bid     | 16 logits: bid 0..13, Blind Nil, look | bidding (action ids 52..67) |
| value   | 1 scalar: expected scaled point difference of the seat's team until the episode ends |

Privileged critic (optional, ``critic_hidden`` non-empty): a separate value network that reads the
observation *and* the cards the seat cannot see (the other three seats' current hands, ``PRIV_SIZE``
= 156 floats, seat-relative: left, partner, right; ``privileged_features``). It is used only to
compute advantages during training ("perfect-training, imperfect-execution" as in PerfectDou, Yang
et al. 2022; the centralised critic of MAPPO, Yu et al. 2022). The acting policy (``forward``,
``get_action_and_value`` without ``priv``) never reads it, so what plays at evaluation and in
``make_bot("checkpoint:...")`` decides from the seat's observation only.

The two policy heads are concatenated into the 68-wide action space (``spades_env.cards``); in each
phase the legal mask zeroes the other head's actions, so bidding and card play are separate
distributions that share features. Illegal logits are set to ``finfo.min``, so an illegal action
has probability 0; a mask row with no legal action is an error.
"""

from __future__ import annotations

import contextlib
import functools

import numpy as np

try:
    import torch
except ImportError:  # the base install has no torch: say what to install
    raise ImportError("spades_env.agents (trained policies, checkpoint bots) needs PyTorch, which is "
                      "not installed: pip install 'spades_env[torch]' (or torch>=2.2)",
                      name="torch") from None
from torch import nn
from torch.distributions import Categorical

from spades_env.cards import NUM_ACTIONS, NUM_CARDS
from spades_env.observation import OBS_SIZE
from spades_env.cards import is_int

from . import MAX_PARAMS, MAX_WIDTH, PRIV_SIZE, network_params  # also re-exported

NUM_BID_ACTIONS = NUM_ACTIONS - NUM_CARDS  # 16


@contextlib.contextmanager
def torch_threads(n: int | None):
    """Run the block with ``torch.set_num_threads(n)`` and restore the previous count after it
    (``None``, or the count already set: nothing changes). A bot's forward passes use it so that
    a match of several bots in one process keeps to its cores."""
    before = torch.get_num_threads()
    limit = n is not None and before != n
    if limit:
        torch.set_num_threads(n)
    try:
        yield
    finally:
        if limit:
            torch.set_num_threads(before)


PRECISIONS = ("auto", "fp32", "bf16")  # of a fit's arithmetic (``fit_precision``: "auto")
_NATIVE_BF16_CHECKS = ("_is_avx512_bf16_supported", "_is_amx_tile_supported",
                       "_is_cpu_support_amx_tile")  # torch.cpu's names, newer and older


def fit_precision(precision: str = "auto") -> str:
    """A fit's arithmetic (the warm start's, a distillation round's): ``precision`` itself, or
    for ``"auto"`` ``"bf16"`` on a CPU whose bfloat16 matrix products are native (AVX512-BF16 or
    AMX, by ``torch.cpu``'s checks; about 3x a training step of a ``[512, 256]`` network on the
    development host's AMD EPYC) and ``"fp32"`` anywhere else (emulated bf16 is slower than
    float32; a torch without those checks also picks fp32). It looks at the CPU only: a fit on
    a GPU given ``"auto"`` runs in fp32. The same host always picks the same, so a seed still
    gives the same weights there.

    Raises:
        ValueError: a name not in ``PRECISIONS``.
    """
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {PRECISIONS}, got {precision!r}")
    if precision != "auto":
        return precision
    native = any(bool(getattr(torch.cpu, f, lambda: False)()) for f in _NATIVE_BF16_CHECKS)
    return "bf16" if native else "fp32"


def privileged_features(hands: torch.Tensor, seat: torch.Tensor) -> torch.Tensor:
    """The hidden cards from seat ``seat``'s point of view, for the privileged critic.

    Args:
        hands: bool ``[B, 4, 52]``: the cards each seat (absolute seat index) holds now.
        seat: int64 ``[B]``: the deciding seat of each row.
    Returns:
        float32 ``[B, 156]``: the hands of the seats to the left (seat + 1), opposite (partner,
        seat + 2) and right (seat + 3), in that order, 0/1 per card id.
    """
    b = torch.arange(len(seat), device=hands.device)[:, None]
    order = (seat.to(hands.device)[:, None] + torch.arange(1, 4, device=hands.device)) % 4
    return hands[b, order].reshape(len(seat), PRIV_SIZE).float()


def _layer(i: int, o: int, std: float = float(np.sqrt(2)), init: bool = True) -> nn.Linear:
    if not init:  # weights to be loaded: allocated, not initialised (no QR, no random numbers)
        return nn.utils.skip_init(nn.Linear, i, o)
    lin = nn.Linear(i, o)
    nn.init.orthogonal_(lin.weight, std)
    nn.init.constant_(lin.bias, 0.0)
    return lin


class Agent(nn.Module):
    """Shared trunk with card-play, bidding and value heads.

    Args:
        hidden: trunk widths (list of ints), e.g. ``[512, 256]``.
        head_hidden: width of each head's hidden layer.
        obs_size: input width: ``OBS_SIZE`` (observation version 3, 711), or ``OBS_SIZE_V2``
            (679) / ``OBS_SIZE_V1`` (575) for a network trained on an earlier version; a wider
            observation is cut to its first ``obs_size`` floats (earlier pieces keep their
            offsets in later versions).
        critic_hidden: widths of the privileged critic (empty: none; the value head is the critic).
        init: initialise the weights (orthogonal, biases 0; draws from torch's global RNG). False
            leaves them uninitialised, for weights that are loaded next (``build_agent``): the
            orthogonal initialisation of a ``[512, 256]`` network is QR factorisations, about 20 ms
            on an idle 2-core machine and up to 1.8 s measured with both cores busy, which a
            checkpoint bot made for every game of a match paid each time.
    Shapes: ``obs`` float32 ``[B, OBS_SIZE]`` (or ``[B, obs_size]``), ``mask`` bool ``[B, 68]``
    (True = legal).
    """

    def __init__(self, hidden=(512, 256), head_hidden: int = 128, obs_size: int = OBS_SIZE,
                 critic_hidden=(), init: bool = True):
        super().__init__()
        layer = functools.partial(_layer, init=init)
        layers, w = [], obs_size
        for h in hidden:
            layers += [layer(w, h), nn.ReLU()]
            w = h
        self.trunk = nn.Sequential(*layers)
        self.play_head = nn.Sequential(layer(w, head_hidden), nn.ReLU(),
                                       layer(head_hidden, NUM_CARDS, 0.01))
        self.bid_head = nn.Sequential(layer(w, head_hidden), nn.ReLU(),
                                      layer(head_hidden, NUM_BID_ACTIONS, 0.01))
        self.value_head = nn.Sequential(layer(w, head_hidden), nn.ReLU(),
                                        layer(head_hidden, 1, 1.0))
        self.critic = None
        if len(critic_hidden):
            c, w = [], obs_size + PRIV_SIZE
            for h in critic_hidden:
                c += [layer(w, h), nn.ReLU()]
                w = h
            self.critic = nn.Sequential(*c, layer(w, 1, 1.0))
        self.hidden = list(hidden)
        self.head_hidden = head_hidden
        self.obs_size = obs_size
        self.critic_hidden = list(critic_hidden)

    def critic_value(self, obs: torch.Tensor, priv: torch.Tensor | None) -> torch.Tensor:
        """Training-time value ``[B]``: the privileged critic on ``obs`` and ``priv`` (float
        ``[B, 156]``, ``privileged_features``) when the network has one, else the value head."""
        if self.critic is None or priv is None:
            return self.get_value(obs)
        return self.critic(torch.cat([obs[..., :self.obs_size], priv], -1)).squeeze(-1)

    def forward(self, obs: torch.Tensor):
        """Returns ``(logits [B, 68] unmasked, value [B])``."""
        z = self.trunk(obs[..., :self.obs_size])
        logits = torch.cat([self.play_head(z), self.bid_head(z)], dim=-1)
        return logits, self.value_head(z).squeeze(-1)

    def policy_logits(self, obs: torch.Tensor) -> torch.Tensor:
        """The acting policy's unmasked logits ``[B, 68]`` (no value computed)."""
        z = self.trunk(obs[..., :self.obs_size])
        return torch.cat([self.play_head(z), self.bid_head(z)], dim=-1)

    def act(self, obs: torch.Tensor, mask: torch.Tensor, greedy: bool = False,
            generator: torch.Generator | None = None):
        """Sample (or take the argmax of) the masked policy from the observation only.

        Returns ``(action [B] int64, log_prob [B] float32)``.
        Raises:
            ValueError: a row of ``mask`` with no legal action.
        """
        logits = self.masked(self.policy_logits(obs), mask)
        logp_all = torch.log_softmax(logits, -1)
        if greedy:
            action = logits.argmax(-1)
        else:
            action = torch.multinomial(logp_all.exp(), 1, generator=generator).squeeze(-1)
        return action, logp_all.gather(-1, action[:, None]).squeeze(-1)

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


def _widen_linear(old: nn.Linear, new: nn.Linear, grow_in: bool) -> None:
    """Copy ``old`` into the top-left block of ``new``. The rows of new units keep ``new``'s
    fresh initialisation; the columns that read new units of the layer below are set to 0."""
    o, i = old.weight.shape
    if new.weight.shape[0] < o or new.weight.shape[1] < i:
        raise ValueError(f"cannot widen a {i}->{o} layer into a narrower "
                         f"{new.weight.shape[1]}->{new.weight.shape[0]} one")
    with torch.no_grad():
        if grow_in:
            new.weight[:, i:] = 0.0
        new.weight[:o, :i] = old.weight
        new.bias[:o] = old.bias


def check_widen(agent: Agent, hidden, head_hidden) -> tuple[list[int], int]:
    """The widths of ``widen(agent, hidden, head_hidden)``, checked before anything is allocated.

    Returns ``(hidden as a list of int, head_hidden as int)``.
    Raises:
        ValueError: widths that are not integers, a different number of trunk layers, a width
            that shrinks or exceeds ``MAX_WIDTH``, or more than ``MAX_PARAMS`` parameters.
    """
    if isinstance(hidden, (str, bytes)) or not hasattr(hidden, "__len__"):
        raise ValueError(f"widen: hidden must be a list of integer widths, got {hidden!r}")
    if not all(is_int(h) for h in [*hidden, head_hidden]):
        raise ValueError(f"widen: widths must be integers, got hidden {hidden!r}, head_hidden "
                         f"{head_hidden!r}")
    hidden, head_hidden = [int(h) for h in hidden], int(head_hidden)
    if len(hidden) != len(agent.hidden):
        raise ValueError(f"widen keeps the number of trunk layers: {len(agent.hidden)} "
                         f"({agent.hidden}), got {len(hidden)} ({hidden})")
    if any(h < o for h, o in zip(hidden, agent.hidden)) or head_hidden < agent.head_hidden:
        raise ValueError(f"widen only grows layers: trunk {agent.hidden} -> {hidden}, heads "
                         f"{agent.head_hidden} -> {head_hidden}")
    if max(hidden + [head_hidden]) > MAX_WIDTH:
        raise ValueError(f"widen: widths are at most {MAX_WIDTH}, got {hidden}, {head_hidden}")
    n = network_params(hidden, head_hidden, agent.critic_hidden)
    if n > MAX_PARAMS:
        raise ValueError(f"widen: {hidden}, {head_hidden} gives {n:,} parameters, over "
                         f"MAX_PARAMS ({MAX_PARAMS:,})")
    return hidden, head_hidden


def widen(agent: Agent, hidden, head_hidden: int) -> Agent:
    """A wider copy of ``agent`` that computes the same logits, values and critic values (equal up
    to float rounding, about 1e-7 relative: the same greedy play).

    Each trunk layer and each head's hidden layer may only grow. The old weights are copied into
    the top-left block of each new matrix; the new units get a fresh initialisation of their inputs
    and outgoing weights of 0, so they change nothing until training moves them (the
    function-preserving widening of Net2Net, Chen, Goodfellow and Shlens 2016, with zero outgoing
    weights in place of split ones). Use it to give a trained network more capacity, e.g. before
    ``training.distill``.

    Args:
        agent: the trained ``Agent`` (unchanged).
        hidden: new trunk widths, same length as ``agent.hidden``, each at least the old width.
        head_hidden: new head width, at least ``agent.head_hidden``.
    Returns:
        a new ``Agent`` on ``agent``'s device, with its dtype and train/eval mode (the privileged
        critic copied unchanged).
    Raises:
        ValueError: widths that are not integers, a different number of trunk layers, a width
            that shrinks or exceeds ``MAX_WIDTH``, or more than ``MAX_PARAMS`` parameters.
    """
    hidden, head_hidden = check_widen(agent, hidden, head_hidden)
    p = next(agent.parameters())
    new = Agent(hidden, head_hidden, agent.obs_size, agent.critic_hidden).to(p.device, p.dtype)
    new.train(agent.training)
    old_lin = [m for m in agent.trunk if isinstance(m, nn.Linear)]
    new_lin = [m for m in new.trunk if isinstance(m, nn.Linear)]
    for k, (a, b) in enumerate(zip(old_lin, new_lin)):
        _widen_linear(a, b, grow_in=k > 0)
    for name in ("play_head", "bid_head", "value_head"):
        a, b = getattr(agent, name), getattr(new, name)
        _widen_linear(a[0], b[0], grow_in=True)
        _widen_linear(a[2], b[2], grow_in=True)
    if agent.critic is not None:
        new.critic.load_state_dict(agent.critic.state_dict())
    return new


def widen_input(state: dict, kwargs: dict, obs_size: int) -> tuple[dict, dict]:
    """A network's ``state`` dict and ``Agent`` keyword arguments ``kwargs`` made to read a wider
    observation of ``obs_size`` floats (a later observation version: earlier pieces keep their
    offsets), acting exactly as before: every layer that reads the observation gets zero weights
    for the new floats (the first trunk layer, or the heads without a trunk, and the privileged
    critic's first layer, whose observation columns come before the privileged ones).

    Used by ``init_from`` to start training on observation version 3 (the rules piece) from a
    version-2 network. Returns new ``(state, kwargs)``; the inputs are not changed.

    Raises:
        ValueError: ``obs_size`` narrower than the network's input.
    """
    old = int(kwargs.get("obs_size", obs_size))
    if obs_size < old:
        raise ValueError(f"widen_input: the network reads {old} floats, more than {obs_size}")
    if obs_size == old:
        return dict(state), dict(kwargs)
    firsts = ["trunk.0.weight"] if kwargs.get("hidden") else \
        [f"{h}.0.weight" for h in ("play_head", "bid_head", "value_head")]
    out = dict(state)
    for k in firsts:
        w = state[k]
        out[k] = torch.cat([w, w.new_zeros((w.shape[0], obs_size - old))], 1)
    if "critic.0.weight" in state:
        w = state["critic.0.weight"]
        out["critic.0.weight"] = torch.cat([w[:, :old], w.new_zeros((w.shape[0], obs_size - old)),
                                            w[:, old:]], 1)
    return out, {**kwargs, "obs_size": int(obs_size)}


__all__ = ["Agent", "torch_threads", "PRECISIONS", "fit_precision", "widen", "widen_input", "check_widen", "NUM_BID_ACTIONS", "PRIV_SIZE", "MAX_WIDTH", "MAX_PARAMS", "network_params",
           "privileged_features"]
