"""Batched Spades engine: ``num_envs`` games stepped together, as torch tensors (CPU or CUDA).

``SpadesVectorEnv`` plays the ``standard`` rules of ``docs/rules.md`` (with the switches
``target_score``, ``loss_threshold``, ``forced_spade_lead_breaks``, ``bag_limit``, ``bag_penalty``,
``nil_bonus``, ``failed_nil_tricks_count``, ``bags_score_points``, the bidding house rules, the
jokers' deck of ``jokers``, whose tables ``Rules.deck`` both backends read) in
every game of a batch, and returns, for every game, the observation and legal action mask of the
seat to act. The observation is exactly
``spades_env.observation.encode`` of that seat's ``PlayerView`` (same ``PIECES``/``OFFSETS`` table,
float32, bit for bit): a policy trained on one engine plays on the other. Action ids are
``spades_env.cards``' (0..51 cards, 52 + b bid b, 52 = Nil).

**Blind Nil and Nil passing are not supported here** (``Rules(blind_nil=True)`` or ``nil_pass``
raises ``ValueError``: no card exchange after the bids): use the
scalar engine (``spades_env.SpadesGame`` / the AEC env) for it.

API (N = ``num_envs``)
----------------------
| call | returns |
|---|---|
| ``reset(seed=None, holder=None, dealer=None)`` | ``obs (N,711) f32 (compact: (N,120) uint8), mask (N,68) bool, seat (N,)``
| ``step(actions (N,))`` | ``obs (as reset), mask, seat, rewards (N, 4) float32, dones (N,) bool, info`` |
| ``get_game(i)`` | a ``SpadesGame`` equal to game i's state (for scalar bots: ``.view(seat)``) |
| ``observe(i, seat)`` | any seat's observation of game i, ``(711,)`` float32 numpy (observation version 3, ``spades_v2``'s vector) |
| ``sample_actions(generator=None)`` | a uniformly random legal action per game, ``(N,)`` int64 |
| ``state_dict()`` / ``load_state_dict(d)`` | exact save / restore (generator included) |

``info`` always holds ``terminated`` and ``truncated`` ``(N,)`` bool; on a hand's last step also
``hand_points`` ``(N, 2)``, ``winner`` ``(N,)`` (-1: none), ``final_scores``/``final_bags``
``(N, 2)`` (the totals after the hand, before any reset), ``hands`` (lazy list of
``(env, HandResult, start bags)`` for every game) and ``final`` (``FinalResults`` of the games
that ended, or None). Rewards are by absolute seat (team of seat s is ``s % 2``).

Lockstep schedule
-----------------
Without Blind Nil every hand is exactly ``HAND_STEPS`` = 56 decisions (4 bids then 52 cards), so
all games of the batch are always at the same point of their hand (``hand_step``): step ``t`` of
a hand is a bid for ``t < 4`` and the ``(t - 4) % 4``-th card of trick ``(t - 4) // 4``
otherwise. Only *who* acts, *what* is held and the scores differ between games; scoring,
game-end checks and auto-resets run only on a hand's last step.

Backends
--------
``backend="torch"``: tensor ops on any device (``vector.torch_backend``, the reference path).
``backend="native"``, the default on the CPU: the same state updated by a C kernel, one loop over
the games per step (``vector.native_backend``); without the C kernel ``"auto"`` falls back to
``"torch"``. Both are checked step by step against the scalar engine and against each other.
The state's layout and memory sizing are in ``vector.layout``, the reported results in
``vector.results``. Which settings are fast, and the measured speeds: ``docs/vector.md``.

Episodes and rewards (the AEC env's definitions, ``spades_v1``)
----------------------------------------------------------------
- An episode is a full game to the target (docs/rules.md, End of the game): *terminated*; or
  ``hands_per_episode`` hands (if set): *terminated*, no winner; or ``max_hands`` hands (default
  100): *truncated* (not a win or a loss).
- ``reward="hand"``: at the end of every hand each seat gets (its team's hand points - the other
  team's hand points) / 100. ``reward="game"``: +1 / -1 to the winning / losing seats when a game
  is won; at a ``hands_per_episode`` end +1 / -1 / 0 to the team ahead / behind / level in game
  total; 0 for a truncation and on every other step.
- A finished game is reset at once inside ``step`` (new random dealer, new deal, scores 0); the
  returned observation is the new game's. Its final results (scores, bags, winner, truncation, and
  every hand's score table) are in ``info["final"]``.

Determinism: every deal and first dealer come from one ``torch.Generator`` on the CPU seeded with
``seed``, so the same seed gives the same games on every device and backend. The deals are not the
scalar engine's RNG stream; ``get_game(i)`` rebuilds a ``SpadesGame`` equal to game ``i``'s state.

Version history: 1 (first version); 1.5 ``obs_format="compact"`` (``spades_env.compact``), and
the native kernel assembles observations from the game state (its rows are written on demand;
states are unchanged); 1.4 observation version 3 (711 floats: the rules piece;
states saved with version 2 are refused by ``load_state_dict``); 1.3 observation version 2 (679 floats: the Blind Nil exchange
piece, all 0 here, and the voids a spade led before spades were broken reveals; states of
earlier versions are refused by ``load_state_dict``, their observation rows are 576 bytes);
1.2 int64 score records (int32 ones are widened on load);
1.1 native CPU backend, stable argsort for the deal
(identical deals except for ties between two of a game's 52 floats).
"""

from __future__ import annotations

import numpy as np

try:
    import torch
except ImportError:  # the base install has no torch: say what to install
    raise ImportError("spades_env.vector (the batched engine) needs PyTorch, which is not "
                      "installed: pip install 'spades_env[torch]' (or torch>=2.2)",
                      name="torch") from None

from ..cards import NUM_ACTIONS, NUM_CARDS, NUM_TRICKS
from ..compact import COMPACT_SIZE
from ..devices import check_device
from ..engine import SpadesGame
from ..observation import OBS_SIZE, rules_features
from ..rules import Rules
from .layout import (HAND_STEPS, HIST_WIDTH, MAX_HANDS_LIMIT, ROW, available_memory,
                     bytes_per_game)
from .native_backend import NativeBackend
from .results import FinalResults, HandList, hand_result
from .saved_state import SavedState
from .torch_backend import TorchBackend


OBS_FORMATS = ("float32", "compact")


def _check_seed(seed, none_ok: bool) -> None:
    """A deal-generator seed: an int in 0..2**64-1 (``torch.Generator.manual_seed``'s range)."""
    if seed is None and none_ok:
        return
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)):
        raise ValueError(f"seed must be an int in 0..2**64-1{' or None' if none_ok else ''}, "
                         f"got {seed!r}")
    if not 0 <= int(seed) < 2 ** 64:
        raise ValueError(f"seed must be an int in 0..2**64-1, got {seed}")


def _check_size(n: int, device: torch.device, copy: bool, hands_per_episode,
                obs_format: str) -> None:
    """Refuse, before allocating anything, a batch that does not fit in memory."""
    per = bytes_per_game(copy, hands_per_episode, obs_format)
    need = n * per
    avail, what = available_memory(device)
    if avail is not None and need > avail:
        raise ValueError(f"num_envs={n} needs about {need / 2 ** 30:.2f} GiB ({per} bytes per "
                         f"game) on {device}, more than the {avail / 2 ** 30:.2f} GiB of {what}; "
                         f"use at most about {avail // per} games")


def _check_args(num_envs, rules, hands_per_episode, max_hands, reward, seed, backend, threads,
                adapt_threads, obs_format) -> Rules:
    """``SpadesVectorEnv``'s arguments but the device and the batch's size, each checked in turn
    (``ValueError`` naming the first bad one); returns the rules (``Rules()`` for None)."""
    if isinstance(num_envs, bool) or not isinstance(num_envs, (int, np.integer)) \
            or num_envs < 1:
        raise ValueError(f"num_envs must be an int >= 1, got {num_envs!r}")
    rules = rules if rules is not None else Rules()
    if not isinstance(rules, Rules):
        raise ValueError(f"rules must be a spades_env.Rules, got {type(rules).__name__}")
    if rules.has_exchanges:
        raise ValueError("SpadesVectorEnv does not implement card exchanges after the bids "
                         "(Blind Nil, Nil passing: Rules.blind_nil, Rules.nil_pass): every "
                         "hand is 56 steps here; "
                         "use the scalar engine (SpadesGame / spades_v1) for those variants")
    for name, v in (("hands_per_episode", hands_per_episode), ("max_hands", max_hands)):
        if v is not None and (isinstance(v, bool) or not isinstance(v, (int, np.integer))
                              or not 1 <= v <= MAX_HANDS_LIMIT):
            raise ValueError(f"{name} must be None or an int in 1..{MAX_HANDS_LIMIT}, got "
                             f"{v!r}")
    if reward not in ("hand", "game"):
        raise ValueError(f"reward must be 'hand' or 'game', got {reward!r}")
    _check_seed(seed, none_ok=False)
    if backend not in ("auto", "torch", "native"):
        raise ValueError(f"backend must be 'auto', 'torch' or 'native', got {backend!r}")
    if isinstance(threads, bool) or not isinstance(threads, (int, np.integer)) \
            or not 1 <= threads <= 256:
        raise ValueError(f"threads must be an int in 1..256, got {threads!r}")
    if not isinstance(adapt_threads, bool):
        raise ValueError(f"adapt_threads must be a bool, got {adapt_threads!r}")
    if obs_format not in OBS_FORMATS:
        raise ValueError(f"obs_format must be one of {', '.join(map(repr, OBS_FORMATS))}, "
                         f"got {obs_format!r}")
    return rules


class SpadesVectorEnv(SavedState, NativeBackend, TorchBackend):
    """``num_envs`` Spades games in lockstep, as torch tensors on ``device``.

    Args:
        num_envs: games in the batch (>= 1). A batch that does not fit is refused before anything
            is allocated (``ValueError`` stating the memory needed: ``bytes_per_game()`` times
            ``num_envs``, against ``available_memory(device)``).
        device: ``"cpu"``, ``"cuda"``, ``"cuda:1"``... or a ``torch.device``
            (``spades_env.devices.check_device``: cpu or cuda only, a CUDA device must be
            present; else ``ValueError``).
        seed: int in 0..2**64-1; seeds the one CPU ``torch.Generator`` that draws every deal and
            first dealer.
        rules: a ``Rules`` (default ``standard``); ``blind_nil=True`` or ``nil_pass`` raises
            ``ValueError``.
        hands_per_episode: end an episode after this many hands (terminated, no winner), or
            ``None`` (at most ``MAX_HANDS_LIMIT``).
        max_hands: end a game after this many hands (a truncation), or ``None`` for no cap (at
            most ``MAX_HANDS_LIMIT``).
        reward: ``"hand"`` or ``"game"`` (see the module docstring).
        validate: check every action against the mask (one host sync per step); an illegal action
            raises ``ValueError`` naming the game and the reason, before any state changes.
            ``False`` skips that check: the actions must be legal, else the games' state is
            undefined. It is never memory-unsafe: the native kernel still refuses an id that is
            not a bid while bidding or not a card in play (the same ``ValueError``, nothing
            changed); the torch path relies on torch's index checks, which may raise
            ``IndexError`` after part of the step was applied, or let an id through.
        copy: return fresh output tensors (default). ``False`` returns the env's own
            observation and mask buffers, overwritten by the next ``step`` (on the native backend
            the all-zero rewards and flags of a step that ends no hand are reused too, and zeroed
            again every step); the seat is always fresh.
        backend: ``"torch"`` (tensor ops, any device), ``"native"`` (CPU only: the per-step work
            fused in one C loop over the games, ``spades_env.native``; same buffers, same
            results) or ``"auto"`` (default: ``"native"`` on the CPU when the C kernel is built,
            else ``"torch"``). The choice is in ``self.backend``.
        threads: native backend only: OpenMP threads sharing the loop over games (default 1;
            more pays from about 1024 games when cores are free, see ``adapt_threads``; ignored
            when the kernel was built without OpenMP, see ``self.threads``). The kernel shares
            torch's OpenMP runtime, whose thread pool does not survive ``fork``: in a process
            forked after a multi-threaded kernel ran, kernels and torch run on one thread.
        adapt_threads: with ``threads > 1``, time ``threads`` against 1 thread side by side
            every 0.02 to 2 s of steps and run the faster (default; ``spades_env.native.
            ThreadChooser``): OpenMP threads that wait for a busy core made 2 threads slower
            than 1 on a loaded machine, down to 1/80. ``False``: always ``threads`` (for a
            machine or set of cores kept free for this process).
        obs_format: ``"float32"`` (default: observations ``(N, OBS_SIZE)`` float32) or
            ``"compact"`` (``(N, COMPACT_SIZE)`` uint8, ``spades_env.compact``: expand with
            ``compact.expand(obs, self.rules_table)``, bit for bit the float32 observation).
            ``observe`` gives float32 either way.

    Raises:
        ValueError: bad arguments (the message names the argument), or ``backend="native"`` on a
            non-CPU device. ``spades_env.native.NativeUnavailable`` (a ``RuntimeError``):
            ``backend="native"`` and the C kernel cannot be built here.
    """

    def __init__(self, num_envs: int, device="cpu", seed: int = 0, rules: Rules | None = None,
                 hands_per_episode: int | None = None, max_hands: int | None = 100,
                 reward: str = "hand", validate: bool = True, copy: bool = True,
                 backend: str = "auto", threads: int = 1, adapt_threads: bool = True,
                 obs_format: str = "float32"):
        rules = _check_args(num_envs, rules, hands_per_episode, max_hands, reward, seed, backend,
                            threads, adapt_threads, obs_format)
        self.obs_format = obs_format
        self.device = check_device(device, "device", present=False)
        if backend == "native" and self.device.type != "cpu":
            raise ValueError(f"backend='native' runs on the CPU only, not on {self.device}")
        check_device(self.device, "device")  # present on this machine
        _check_size(int(num_envs), self.device, bool(copy), hands_per_episode, obs_format)
        self.num_envs = n = int(num_envs)
        self.rules = rules
        self.hands_per_episode = None if hands_per_episode is None else int(hands_per_episode)
        self.max_hands = None if max_hands is None else int(max_hands)
        self.reward = reward
        self.validate = bool(validate)
        self.copy = bool(copy)
        self.seed = int(seed)
        self._gen = torch.Generator(device="cpu")
        self._gen.manual_seed(self.seed)
        self._build_consts()
        self._make_buffers(n)
        self._t = 0
        self._serial = 0  # hands dealt (all games deal together)
        self._mirror: dict = {}  # env -> (serial, cached SpadesGame, moves applied to it)
        self._started = False
        # games started in each env (for get_game seeds)
        self._game_ids = torch.zeros(n, dtype=torch.int64, device=self.device)
        self._make_views()
        self._kernel = None
        self._threads = 1
        self._chooser = None  # native.ThreadChooser when threads > 1 adapt to the load
        self._adapt = adapt_threads
        self._backend_request = backend
        self.backend = "torch" if backend == "torch" or self.device.type != "cpu" else \
            self._load_native(backend == "native", int(threads))

    def _make_buffers(self, n: int) -> None:
        """Allocate the state of the ``n`` games (all zeros; ``reset`` deals): the observation
        rows, the hands as masks and flags, bids, tricks, the trick in play, scores, the hand's
        moves and the per-hand score records."""
        dev = self.device
        i64 = dict(dtype=torch.int64, device=dev)
        # every seat's observation as uint8: 0/1 flags, and the counts tricks_won and
        # trick_number (divided by 13 on output); scores, bags and target live in _side
        self._obs4 = torch.zeros((n, 4 * ROW), dtype=torch.uint8, device=dev)
        # the native kernel's hand masks: (N, 4) 52-bit masks of each seat's cards now and
        # at the deal (it assembles observations from them instead of keeping _obs4's rows)
        self._hbits = torch.zeros((n, 4), **i64)
        self._dealt = torch.zeros((n, 4), **i64)
        self._lbits = torch.zeros(n, **i64)  # ... and the legal actions' bits (sample_actions)
        self._side = torch.zeros((n, 4, 5), dtype=torch.float32, device=dev)  # by observer
        # the observation's rules piece, the same in every row (observation.rules_features)
        self._rules_feat = torch.tensor(rules_features(self.rules), dtype=torch.float32,
                                        device=dev)
        self._mask = torch.zeros((n, NUM_ACTIONS), dtype=torch.bool, device=dev)
        self._obs_out = None if self.copy else self._new_obs()
        self._gather = torch.zeros((n, ROW // 8), dtype=torch.int64, device=dev)
        self._hands = torch.zeros((n, 4 * NUM_CARDS), dtype=torch.bool, device=dev)
        self._owner = torch.zeros((n, NUM_CARDS), **i64)
        self._voids = torch.zeros((n, 16), dtype=torch.bool, device=dev)
        self._bids = torch.zeros((n, 4), **i64)
        self._tricks = torch.zeros((n, 4), **i64)
        self._trick = torch.zeros((n, 4), **i64)  # cards of the current trick, in play order
        self._trick_obs = torch.zeros((n, 16), **i64)  # its entries in the trick blocks
        self._broken = torch.zeros(n, dtype=torch.bool, device=dev)
        self._dealer = torch.zeros(n, **i64)
        self._cur = torch.zeros(n, **i64)
        self._leader = torch.zeros(n, **i64)
        self._led = torch.zeros(n, **i64)
        self._scores = torch.zeros((n, 2), **i64)
        self._bags = torch.zeros((n, 2), **i64)
        self._hand_count = torch.zeros(n, **i64)
        self._actions = torch.zeros((n, HAND_STEPS), **i64)  # this hand's moves, for get_game
        # per-hand score records of the running games; grows (doubling) when a game gets longer
        cap = 8 if self.hands_per_episode is None else min(8, self.hands_per_episode)
        self._hist = torch.zeros((n, cap, HIST_WIDTH), dtype=torch.int64, device=dev)

    @property
    def _obs4(self) -> torch.Tensor:
        """Every observer's uint8 observation row, ``(N, 4 * ROW)``, up to date (the native
        kernel writes them on demand: ``_sync_rows``)."""
        self._sync_rows()
        return self._obs4_buf

    @_obs4.setter
    def _obs4(self, value: torch.Tensor) -> None:
        self._obs4_buf = value

    def _new_obs(self) -> torch.Tensor:
        """An empty output for every game's observation: ``(N, OBS_SIZE)`` float32, or with
        ``obs_format="compact"`` ``(N, COMPACT_SIZE)`` uint8."""
        if self.obs_format == "compact":
            return torch.empty((self.num_envs, COMPACT_SIZE), dtype=torch.uint8,
                               device=self.device)
        return torch.empty((self.num_envs, OBS_SIZE), dtype=torch.float32, device=self.device)

    @property
    def rules_table(self) -> torch.Tensor:
        """``(1, RULES_SIZE)`` float32 on the env's device (a copy): the table
        ``compact.expand`` takes to turn this env's compact observations back into float32 (its
        rules piece)."""
        return self._rules_feat.view(1, -1).clone()

    @property
    def threads(self) -> int:
        """OpenMP threads the native kernel uses (1 on the torch backend, without OpenMP, or in a
        process forked after a multi-threaded kernel ran: libgomp does not survive a fork); with
        ``adapt_threads`` the most it uses (``threads_now`` is the current choice)."""
        return self._threads

    @property
    def threads_now(self) -> int:
        """The thread count the kernel runs with between probes: ``threads``, or 1 while
        ``adapt_threads`` finds 1 thread faster (a busy machine)."""
        return self._threads if self._chooser is None else self._chooser.best

    def __getstate__(self) -> dict:
        """Pickle / deep-copy support: the ctypes handles are dropped and rebuilt on load (the
        observation rows are written first, so that the copy can run on either backend)."""
        self._sync_rows()
        drop = self._NATIVE_ATTRS + self._VIEWS
        return {k: v for k, v in self.__dict__.items() if k not in drop}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._make_views()
        self._kernel = None
        if self.backend == "native":
            self._reload_native()

    # ------------------------------------------------------------------ public API
    def reset(self, seed: int | None = None, holder=None, dealer=None):
        """Start a new game in every env (first dealer drawn at random, scores 0).

        Args:
            seed: reseed the deal generator first (int), or ``None`` to continue its stream.
            holder: optional first deal, ``(N, 52)`` ints: the seat (0..3) dealt each card id;
                each seat must get 13 cards. Later hands are drawn as usual.
            dealer: optional ``(N,)`` first dealers (seats), only together with ``holder``.
        Returns:
            ``(obs, action_mask, seat)``: ``(N, OBS_SIZE)`` float32 (``obs_format="compact"``:
            ``(N, COMPACT_SIZE)`` uint8), ``(N, 68)`` bool, ``(N,)`` int64, for the seat to act
            in each game.
        Raises:
            ValueError: a bad seed, or a ``holder``/``dealer`` of the wrong shape or values.
        """
        n = self.num_envs
        _check_seed(seed, none_ok=True)
        if (holder is None) != (dealer is None):
            raise ValueError("give both holder and dealer (a given first deal), or neither")
        if holder is not None:
            try:
                holder, dealer = torch.as_tensor(holder), torch.as_tensor(dealer)
            except (TypeError, ValueError, RuntimeError, OverflowError) as e:
                raise ValueError(f"holder and dealer must be integer seats (arrays of ints): "
                                 f"{e}") from None
            if holder.dtype.is_floating_point or dealer.dtype.is_floating_point \
                    or holder.dtype == torch.bool or dealer.dtype == torch.bool:
                raise ValueError(f"holder and dealer must hold integer seats, got dtypes "
                                 f"{holder.dtype} and {dealer.dtype}")
            holder = holder.to(device=self.device, dtype=torch.int64)
            dealer = dealer.to(device=self.device, dtype=torch.int64)
            if holder.shape != (n, NUM_CARDS) or dealer.shape != (n,):
                raise ValueError(f"holder must have shape ({n}, 52) and dealer ({n},), got "
                                 f"{tuple(holder.shape)} and {tuple(dealer.shape)}")
            if bool(((holder < 0) | (holder > 3)).any()) or \
                    bool(((dealer < 0) | (dealer > 3)).any()):
                raise ValueError("holder and dealer values must be seats 0..3")
            counts = (holder[:, None, :] == self._c.seats[None, :, None]).sum(2)
            if bool((counts != NUM_TRICKS).any()):
                i = int((counts != NUM_TRICKS).any(1).nonzero()[0, 0])
                raise ValueError(f"each seat must be dealt 13 cards; env {i} has "
                                 f"{counts[i].tolist()}")
        if seed is not None:
            self.seed = int(seed)
            self._gen.manual_seed(self.seed)
        self._scores.zero_()
        self._bags.zero_()
        self._hand_count.zero_()
        self._hist.zero_()
        self._game_ids.zero_()
        if holder is None:
            self._dealer.copy_(torch.randint(4, (n,), generator=self._gen).to(self.device))
        else:
            self._dealer.copy_(dealer)
        self._start_hands(holder)
        self._started = True
        return self._output()

    def step(self, actions):
        """Apply ``actions[i]`` (an action id, see ``spades_env.cards``) in every game ``i``.

        Args:
            actions: ``(N,)`` ints (tensor, array or list), each legal in its game.
        Returns:
            ``(obs, action_mask, seat, rewards, dones, info)``: obs ``(N, OBS_SIZE)`` float32
            (``obs_format="compact"``: ``(N, COMPACT_SIZE)`` uint8),
            mask ``(N, 68)`` bool and seat ``(N,)`` int64 of the next decision (of the new game
            where one ended); ``rewards`` ``(N, 4)`` float32 by absolute seat; ``dones`` ``(N,)``
            bool (episode ended: terminated or truncated). ``info`` always has ``"terminated"`` and
            ``"truncated"`` ``(N,)`` bool; on the step that ends a hand also ``"hand_points"``
            ``(N, 2)`` int64, ``"hands"`` (lazy list of ``(env, HandResult, start bags)``), and
            ``"final"`` (``FinalResults`` of the games that ended, or None).
        Raises:
            ValueError: wrong shape, or an illegal action (names the first bad game and why);
                nothing is changed then (with ``validate=True``).
            RuntimeError: ``step`` before ``reset``.
        """
        if not self._started:
            raise RuntimeError("call reset() before step()")
        n = self.num_envs
        try:
            a = torch.as_tensor(actions, device=self.device)
        except (OverflowError, RuntimeError, TypeError, ValueError) as e:
            raise ValueError(f"actions must be integer action ids 0..{NUM_ACTIONS - 1}: {e}") \
                from None
        if a.shape != (n,):
            raise ValueError(f"actions must have shape ({n},), got {tuple(a.shape)}")
        if a.dtype != torch.int64:
            if a.dtype.is_floating_point or a.dtype.is_complex or a.dtype == torch.bool \
                    or a.dtype == torch.uint64:
                raise ValueError(f"actions must be integer action ids (int8..int64, uint8..32), "
                                 f"got dtype {a.dtype}")
            a = a.long()
        t = self._t
        if self._kernel is not None:
            a = a.contiguous()
            if t < HAND_STEPS - 1:
                return self._step_native(a, t) if self._chooser is None else \
                    self._step_timed(a, t)
            if self.validate:  # a hand's end is mostly Python: not timed
                self._check_native(a)
            self._reserve_hist()  # before anything changes: may refuse for lack of memory
            self._apply_native(a, t)
            return self._end_hands()
        if self.validate:
            self._check(a)
        if t == HAND_STEPS - 1:
            self._reserve_hist()  # before anything changes: may refuse for lack of memory
            self._apply_torch(a, t)
            return self._end_hands()
        self._apply_torch(a, t)
        self._t = t + 1
        return self._finish_step()

    def get_game(self, i: int) -> SpadesGame:
        """A scalar ``SpadesGame`` equal to game ``i``'s current state (hands, bids, trick,
        scores, bags, dealer, hand number and the score tables of this game's earlier hands).

        The game is built once per hand (``SpadesGame.from_deal``) and cached; later calls in the
        same hand apply only the moves made since, and return a clone of the cached game: playing
        or editing the returned game never changes the env or a later ``get_game``. Its RNG (for
        deals after
        this hand) is seeded from ``(seed, i, game number)``; those deals are not the ones this
        env will draw. Full information: bots must act from ``view(seat)``.
        Raises:
            ValueError: ``i`` out of range. RuntimeError: before ``reset``.
        """
        if not self._started:
            raise RuntimeError("call reset() before get_game()")
        if isinstance(i, bool) or not isinstance(i, (int, np.integer)) \
                or not 0 <= i < self.num_envs:
            raise ValueError(f"env index must be an int in 0..{self.num_envs - 1}, got {i!r}")
        i = int(i)
        t = self._t
        cached = self._mirror.get(i)
        if cached is not None and cached[0] == self._serial and len(cached[1].moves) == cached[2] \
                and cached[2] <= t:
            g = cached[1]
            if cached[2] < t:
                for act in self._actions[i, cached[2]:t].tolist():
                    g.apply(act)
                self._mirror[i] = (self._serial, g, t)
            return g.clone()
        owner = self._owner[i].tolist()
        hands = [[c for c in range(NUM_CARDS) if owner[c] == s] for s in range(4)]
        nh = int(self._hand_count[i])
        g = SpadesGame.from_deal(
            hands, int(self._dealer[i]), self._scores[i].tolist(), self._bags[i].tolist(),
            self.rules, seed=np.random.default_rng([self.seed, i, int(self._game_ids[i])]))
        table = self._hist[i, :nh].cpu().numpy()
        g.hand_results = [hand_result(table[h], h) for h in range(nh)]
        g.hand_number = nh
        for act in self._actions[i, :t].tolist():
            g.apply(act)
        self._mirror[i] = (self._serial, g, t)
        return g.clone()

    def observe(self, i: int, seat: int) -> np.ndarray:
        """Observation of any ``seat`` (acting or not) in game ``i``: ``(OBS_SIZE,)`` float32 numpy
        array, equal to ``observation.encode(get_game(i).view(seat))``."""
        if isinstance(seat, bool) or not isinstance(seat, (int, np.integer)) \
                or seat not in (0, 1, 2, 3):
            raise ValueError(f"seat must be an int in 0..3, got {seat!r}")
        if isinstance(i, bool) or not isinstance(i, (int, np.integer)) \
                or not 0 <= i < self.num_envs:
            raise ValueError(f"env index must be an int in 0..{self.num_envs - 1}, got {i!r}")
        if not self._started:
            raise RuntimeError("call reset() first")
        self._sync_rows()
        return self._observe_row(int(i), int(seat))

    def sample_actions(self, generator: torch.Generator | None = None) -> torch.Tensor:
        """A uniformly random legal action for every game's pending decision: ``(N,)`` int64.

        The ``k``-th legal action id of each mask row with ``k = int(u * count)`` (float32),
        ``u = torch.rand(N, generator=generator)`` on the env's device (the same ids on both
        backends for the same ``generator`` state). For random opponents, exploration and
        benchmarks.

        A row with no legal action (impossible in a state the rules reach) gives -1.

        Raises:
            RuntimeError: before ``reset``. ValueError: ``generator`` is not ``None`` or a
                ``torch.Generator`` on the env's device.
        """
        if not self._started:
            raise RuntimeError("call reset() first")
        if generator is not None and (not isinstance(generator, torch.Generator)
                                      or generator.device.type != self.device.type):
            raise ValueError(f"generator must be None or a torch.Generator on {self.device}, got "
                             f"{generator!r}")
        n = self.num_envs
        u = torch.rand(n, generator=generator, device=self.device, dtype=torch.float32)
        return self._sample_native(u) if self._kernel is not None else self._sample_torch(u)

    def current(self):
        """``(obs, action_mask, seat)`` of the pending decision in every game."""
        if not self._started:
            raise RuntimeError("call reset() first")
        return self._output()

    @property
    def scores(self) -> torch.Tensor:
        """``(N, 2)`` int64 team totals of the running games (copy)."""
        return self._scores.clone()

    @property
    def bags(self) -> torch.Tensor:
        """``(N, 2)`` int64 team bag counts of the running games (copy)."""
        return self._bags.clone()

    @property
    def dealer(self) -> torch.Tensor:
        """``(N,)`` int64 dealer seats of the running games' hands (copy)."""
        return self._dealer.clone()

    @property
    def hand_step(self) -> int:
        """Decisions taken in the current hand (0..55), the same in every game."""
        return self._t

    def memory_bytes(self) -> int:
        """Bytes of the env's state tensors (observation buffers included; each storage counted
        once, views of it not again)."""
        seen: dict[int, int] = {}
        for v in [*vars(self).values(), *getattr(self, "_lean", ()), *self._c.tensors()]:
            if isinstance(v, torch.Tensor):
                st = v.untyped_storage()
                seen[st.data_ptr()] = st.nbytes()
        return sum(seen.values())

    # ------------------------------------------------------------------ internals
    def _illegal(self, i: int, act: int) -> None:
        """Raise the ``ValueError`` for an illegal action ``act`` in game ``i``."""
        why = self.get_game(i).explain_illegal(act) or "not in the action mask"
        raise ValueError(f"illegal action {act} in env {i} (seat {int(self._cur[i])} to act): "
                         f"{why}")

    def _reserve_hist(self) -> None:
        """Room for this hand's score record in every game (``_hist`` doubles when the longest
        running game needs it). Raises ``ValueError`` with the memory needed, before anything
        changes, when the larger table does not fit."""
        need = int(self._hand_count.max()) + 1
        cap = self._hist.shape[1]
        if need <= cap:
            return
        new = max(need, 2 * cap)
        n = self.num_envs
        extra = n * new * HIST_WIDTH * 8
        avail, what = available_memory(self.device)
        if avail is not None and extra > avail:
            raise ValueError(f"the score records of {n} games need {extra / 2 ** 30:.2f} GiB to "
                             f"hold {new} hands (a game has run {need - 1} hands), more than the "
                             f"{avail / 2 ** 30:.2f} GiB of {what}: set max_hands or use fewer "
                             f"games")
        grow = torch.zeros((n, new, HIST_WIDTH), dtype=torch.int64, device=self.device)
        grow[:, :cap] = self._hist
        self._hist = grow

    def _output(self):
        """``(obs, mask, seat)`` of the pending decision in every game."""
        return self._output_native() if self._kernel is not None else self._output_torch()

    def _finish_step(self, rewards=None, info=None):
        """``step``'s tuple: the next decision's outputs, then ``rewards`` and ``info`` of an
        ended hand, or zero rewards and flags."""
        obs, mask, seat = self._output()
        if rewards is None:
            n, dev = self.num_envs, self.device
            rewards = torch.zeros((n, 4), dtype=torch.float32, device=dev)
            z = torch.zeros(n, dtype=torch.bool, device=dev)
            return obs, mask, seat, rewards, z, {"terminated": torch.zeros_like(z),
                                                 "truncated": torch.zeros_like(z)}
        return obs, mask, seat, rewards, info["terminated"] | info["truncated"], info

    def _start_hands(self, holder: torch.Tensor | None = None) -> None:
        """Deal a new hand in every game (``_dealer``, ``_scores``, ``_bags`` already set) and
        rebuild every seat's observation from scratch. The deal: a uniform random permutation
        of the deck dealt one card at a time from the left of the dealer (docs/rules.md, Deal), or
        ``holder`` ``(N, 52)`` when given."""
        if self._kernel is not None:
            self._start_hands_native(holder)
        else:
            self._start_hands_torch(holder)
        self._t = 0
        self._serial += 1  # a new hand everywhere: cached get_game mirrors are stale

    def _end_hands(self):
        """Score the hand in every game (docs/rules.md, Scoring a hand; End of the game), record it,
        end and reset finished games, deal the next hand."""
        n, r, dev = self.num_envs, self.rules, self.device
        hc = self._hand_count  # room for this hand's record: made by _reserve_hist
        hand_number = hc.clone()
        if self._kernel is not None:
            rec, hand_points, winner, terminated, truncated, rewards, any_done = \
                self._score_native()
        else:
            rec, hand_points, winner, terminated, truncated, rewards, any_done = \
                self._score_torch()
        scores, bags_after = self._scores, self._bags
        info = {"terminated": terminated, "truncated": truncated, "hand_points": hand_points,
                "winner": winner, "final_scores": scores.clone(), "final_bags": bags_after.clone()}
        info["hands"] = HandList(torch.arange(n, device=dev), rec, hand_number,
                                 self.rules.bag_limit)
        final = None
        if any_done:
            done = terminated | truncated
            ids = done.nonzero()[:, 0]
            final = FinalResults(ids, scores[ids], bags_after[ids], winner[ids], truncated[ids],
                                 hc[ids], self._hist[ids].clone(), r)
            # reset finished games: new first dealer, scores and bags 0
            new_dealer = torch.randint(4, (n,), generator=self._gen).to(dev)
            self._dealer.copy_(torch.where(done, new_dealer, (self._dealer + 1) & 3))
            self._scores.masked_fill_(done[:, None], 0)
            self._bags.masked_fill_(done[:, None], 0)
            hc.masked_fill_(done, 0)
            self._game_ids.add_(done.long())
        else:
            self._dealer.add_(1).bitwise_and_(3)
        info["final"] = final
        self._start_hands()
        return self._finish_step(rewards=rewards, info=info)


__all__ = ["SpadesVectorEnv", "FinalResults", "HAND_STEPS", "OBS_SIZE", "COMPACT_SIZE",
           "OBS_FORMATS"]
