"""``CheckpointBot``: a trained policy playing anywhere a bot can (``make_bot("checkpoint:PATH")``).

It acts from the seat's ``PlayerView`` only: ``spades_env.observation.encode(view)`` and the legal
actions of the view, through the checkpoint's network (``spades_env.agents.model.Agent``).
"""

from __future__ import annotations

import dataclasses

import numpy as np

try:
    import torch
except ImportError:  # the base install has no torch: say what to install
    raise ImportError("spades_env.agents (trained policies, checkpoint bots) needs PyTorch, which is "
                      "not installed: pip install 'spades_env[torch]' (or torch>=2.2)",
                      name="torch") from None

from ..agents.checkpoint import build_agent, load_checkpoint, trained_rules
from ..agents.model import torch_threads
from ..cards import NUM_ACTIONS
from ..devices import check_device
from ..observation import OBS_SIZE, OBS_SIZES, encode
from .base import Bot


class CheckpointBot(Bot):
    """A bot backed by a training checkpoint.

    Args:
        path: a ``.pt`` file written by ``spades train`` (full or stripped/shipped).
        seed: seed of the bot's own RNG (used when ``greedy`` is False).
        greedy: play the most probable legal action (default); else sample from the masked policy.
        device: torch device: ``cpu`` or ``cuda`` (``cuda:N``), present on this machine
            (``spades_env.devices.check_device``).
        any_rules: let a network of observation version 1 or 2 (575 or 679 floats: no rules
            piece) play rules other than those it was trained under. By default such a game is
            refused at the bot's first decision (``ValueError`` naming the file and both rule
            sets): the network cannot see the difference. A network of version 3 (711 floats)
            reads the rules piece and plays any rules. ``True`` is for transfer experiments.
        threads: torch CPU threads for each decision (default 1; ``None`` keeps the process's
            setting). A decision is one observation through a small network, which a second
            thread barely speeds up (0.34 against 0.24 ms on an idle 2-core machine), while its
            idle thread spin-waits on a core the rest of the game needs (the search bots at the
            same table, other arena processes): with torch's default of one thread per core, two
            arena processes against ``hard`` took 1.8 times as long
            (``benchmarks/bench_checkpoint_threads.py``; results in
            ``benchmarks/results/checkpoint_threads.md``). The process's own setting is restored
            after each decision, so the bot changes nothing for the code around it.
        numpy_forward: on ``device="cpu"``, compute each decision's logits in numpy (float32, the
            same weights; only the head the decision needs) instead of torch: about 40 µs a
            decision against 200 (a single row pays torch's per-call costs), the probabilities
            equal to torch's within float32 rounding (1e-5). The PIMC labels use it
            (``training.labelling``). ``threads`` is then not used.
    Raises:
        FileNotFoundError: no such file.
        ValueError: a corrupt, foreign or incompatible file, a bad ``threads``, or a bad or
            absent ``device`` (checked before the file is read; the message names the device).
    """

    name = "checkpoint"

    def __init__(self, path: str, seed=None, greedy: bool = True, device: str = "cpu",
                 threads: int | None = 1, any_rules: bool = False, numpy_forward: bool = False):
        if not isinstance(any_rules, bool):
            raise ValueError(f"any_rules must be True or False, got {any_rules!r}")
        if threads is not None and (type(threads) is not int or not 1 <= threads <= 1024):
            raise ValueError(f"threads must be an int in 1..1024 or None, got {threads!r}")
        device = check_device(device, "device")  # before the file: a bad device is not its fault
        super().__init__(seed)
        self.threads = threads
        self.path = path
        self.data = load_checkpoint(path, map_location=device)
        self.agent = build_agent(self.data, device)
        self.device = device
        self.greedy = greedy
        self.any_rules = any_rules or self.agent.obs_size >= OBS_SIZE
        self.trained_rules = trained_rules(self.data)
        self._rules_ok = self.trained_rules  # the last rules checked (an identity fast path)
        if not isinstance(numpy_forward, bool):
            raise ValueError(f"numpy_forward must be True or False, got {numpy_forward!r}")
        self._numpy = _numpy_layers(self.agent) if numpy_forward and device.type == "cpu" else None

    def check_rules(self, rules) -> None:
        """Refuse ``rules`` the network cannot play (``any_rules`` in the class docstring): rules
        that differ from those it was trained under in any field but ``target_score`` (which the
        observation shows since version 1), for a network without the rules piece.

        Raises:
            ValueError: naming the checkpoint, its rules and ``rules``.
        """
        if rules is self._rules_ok or self.any_rules:
            return
        if dataclasses.replace(rules, target_score=self.trained_rules.target_score) \
                != self.trained_rules:
            raise ValueError(
                f"checkpoint {self.path!r} was trained under the rules {self.trained_rules.spec()!r} "
                f"and its network reads no rules piece (observation version "
                f"{OBS_SIZES.index(self.agent.obs_size) + 1}), so it cannot play "
                f"{rules.spec()!r}; train a network on observation version 3 (spades train), or "
                f"pass any_rules=True (make_bot('checkpoint:PATH', any_rules=True)) to play it "
                f"anyway")
        self._rules_ok = rules

    def action_probs(self, view) -> np.ndarray:
        """The policy's probabilities of the 68 actions, float64 ``[68]`` (0 for illegal ones),
        computed from ``encode(view)`` and the view's legal actions only (the acting policy:
        ``Agent.policy_logits``; a privileged critic in the checkpoint is never read).

        Raises:
            ValueError: the view's seat has no legal action.
        """
        self.check_rules(view.rules)
        legal = view.legal_actions
        if not legal:
            raise ValueError(f"seat {view.seat} has no legal action (not its turn?)")
        if self._numpy is not None:
            return _numpy_probs(self._numpy, encode(view), legal)
        return self._torch_probs(view, legal)

    @torch.no_grad()
    def _torch_probs(self, view, legal) -> np.ndarray:
        obs = torch.as_tensor(encode(view), device=self.device).unsqueeze(0)
        mask = np.zeros((1, NUM_ACTIONS), dtype=bool)
        mask[0, list(legal)] = True
        with torch_threads(self.threads):
            logits = self.agent.policy_logits(obs)
            logits = self.agent.masked(logits, torch.as_tensor(mask, device=self.device))[0].cpu()
        p = torch.softmax(logits.double(), -1).numpy()
        return p / p.sum()

    def act(self, view) -> int:
        p = self.action_probs(view)
        if self.greedy:
            return int(p.argmax())
        return int(self.rng.choice(len(p), p=p))

    def __repr__(self) -> str:
        return f"CheckpointBot({self.path!r})"


def _linears(seq) -> list:
    """The ``(weight.T, bias)`` float32 arrays of a ``Sequential``'s linear layers, in order."""
    return [(m.weight.detach().cpu().numpy().T.copy(), m.bias.detach().cpu().numpy().copy())
            for m in seq if isinstance(m, torch.nn.Linear)]


def _numpy_layers(agent) -> tuple:
    """``agent``'s acting policy as numpy arrays: ``(obs_size, trunk, play head, bid head)``,
    each a list of ``(weight.T, bias)`` with a ReLU after every layer but a head's last
    (``agents.model.Agent``)."""
    return agent.obs_size, _linears(agent.trunk), _linears(agent.play_head), \
        _linears(agent.bid_head)


def _numpy_probs(layers, obs: np.ndarray, legal) -> np.ndarray:
    """``CheckpointBot.action_probs`` in numpy: float64 ``[68]``, 0 off ``legal`` (a decision's
    legal actions are all cards or all bidding actions: one head)."""
    size, trunk, play, bid = layers
    x = obs[:size]
    for w, b in trunk:
        x = x @ w
        x += b
        np.maximum(x, 0.0, out=x)
    legal = np.array(legal)
    head, lo = (play, 0) if legal[0] < 52 else (bid, 52)
    for i, (w, b) in enumerate(head):
        x = x @ w
        x += b
        if i < len(head) - 1:
            np.maximum(x, 0.0, out=x)
    z = x[legal - lo].astype(np.float64)
    e = np.exp(z - z.max())
    p = np.zeros(NUM_ACTIONS)
    p[legal] = e / e.sum()
    return p
