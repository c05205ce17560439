"""Batched environments for training.

``ScalarBatchEnv`` is the fallback: ``num_envs`` scalar ``SpadesGame``s stepped in a Python loop and
encoded with the reference encoder ``spades_env.observation.encode(game.view(seat))``, so an
observation depends only on the acting seat's information set. It has the interface of
``spades_env.vector.SpadesVectorEnv``:

- ``reset() -> (obs [N, 575] float32, action_mask [N, 68] bool, seat [N] int64)``: the observation
  and legal mask of the seat to act in each game.
- ``step(actions [N]) -> (obs, action_mask, seat, rewards [N, 4] float32, dones [N] bool, info)``:
  applies one action in every game. ``rewards[i, s]`` is non-zero only when a hand ended in game i:
  ``(points of seat s's team - points of the other team) * reward_scale``. A finished episode
  (``hands_per_episode`` hands, or a game won) is reset at once; the returned obs is the new one.
  ``info["hands"]`` lists ``(env index, HandResult, start bags)`` for each hand that ended.
- ``get_game(i)``: the scalar game of env i (full information: only for bots acting from
  ``game.view(seat)``).

``make_env`` picks ``SpadesVectorEnv`` when it exists and supports the configuration, else this.
"""

from __future__ import annotations

import numpy as np
import torch

from spades_env import Rules, SpadesGame, compact
from spades_env.cards import NUM_ACTIONS, SEATS_FROM
from spades_env.observation import OBS_SIZE, encode


def randomize_start(game: SpadesGame, rng: np.random.Generator) -> None:
    """Put a freshly dealt ``game`` at a random mid-game position before its first bid: team
    totals uniform in -150..450 in steps of 10 (clipped inside the target and loss threshold) and
    bag counts uniform in ``0..bag_limit-1``. Only the totals and bags change, not the deal."""
    r = game.rules
    lo = -150 if r.loss_threshold is None else max(-150, r.loss_threshold + 10)
    hi = min(450, r.target_score - 10)
    steps = (hi - lo) // 10 + 1
    sc = lo + 10 * rng.integers(steps, size=2)
    b = rng.integers(r.bag_limit, size=2)
    game.scores = [int(sc[0]), int(sc[1])]
    game.bags = [int(b[0]), int(b[1])]


def _short_list(arr) -> str:
    text = repr(arr.ravel()[:4].tolist())
    return text if arr.size <= 4 else text[:-1] + ", ...]"


class ScalarBatchEnv:
    """``num_envs`` scalar games behind a batched interface (fallback for the vector engine).

    Args:
        num_envs: games side by side (>= 1).
        seed: int; the env's own ``np.random.Generator`` seeds every game and start-bag draw.
        rules: ``Rules`` (default standard).
        hands_per_episode: hands before an episode is cut (truncated); a won game also ends it.
        random_start: probability that an episode starts from a random mid-game position: team
            totals uniform in -150..450 (multiples of 10, kept below the target and above a loss
            threshold) and bags uniform in ``0..bag_limit-1``; otherwise from 0-0.
        reward_scale: multiplier of the point difference in the rewards.
    """

    def __init__(self, num_envs: int, seed: int = 0, rules: Rules | None = None,
                 hands_per_episode: int = 1, random_start: float = 0.0,
                 reward_scale: float = 0.01):
        if num_envs < 1:
            raise ValueError(f"num_envs must be >= 1, got {num_envs}")
        self.num_envs = num_envs
        self.rules = rules if rules is not None else Rules()
        self.hands_per_episode = hands_per_episode
        self.random_start = random_start
        self.reward_scale = reward_scale
        self.rng = np.random.default_rng(seed)
        self.games: list[SpadesGame] = [None] * num_envs  # type: ignore
        self.start_bags = [(0, 0)] * num_envs
        self.start_hand = [0] * num_envs

    # -------------------------------------------------------------- episodes
    def _new_game(self, i: int) -> None:
        g = SpadesGame(self.rules, seed=int(self.rng.integers(2**63)))
        if self.random_start > 0 and self.rng.random() < self.random_start:
            randomize_start(g, self.rng)
        self.games[i] = g
        self.start_bags[i] = tuple(g.bags)
        self.start_hand[i] = g.hand_number

    def _encode(self, idx) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        n = len(idx)
        obs = np.zeros((n, OBS_SIZE), dtype=np.float32)
        mask = np.zeros((n, NUM_ACTIONS), dtype=bool)
        seat = np.zeros(n, dtype=np.int64)
        for k, i in enumerate(idx):
            g = self.games[i]
            p = g.current_player
            v = g.view(p)
            encode(v, obs[k])
            mask[k, list(v.legal_actions)] = True
            seat[k] = p
        return obs, mask, seat

    def reset(self):
        """Start a fresh episode in every env. Returns ``(obs, action_mask, seat)`` tensors."""
        for i in range(self.num_envs):
            self._new_game(i)
        obs, mask, seat = self._encode(range(self.num_envs))
        return torch.from_numpy(obs), torch.from_numpy(mask), torch.from_numpy(seat)

    def step(self, actions):
        """Apply ``actions[i]`` in game i (see the module docstring for the returns).

        Raises:
            ValueError: ``actions`` not ``num_envs`` integer action ids (floats, strings and bools
                are refused, never truncated or parsed); no game has moved.
            spades_env.IllegalActionError: an illegal action (that game is left unchanged; games
                before it in the batch have already moved).
            RuntimeError: ``step`` before ``reset`` (as ``SpadesVectorEnv``).
        """
        if self.games[0] is None:
            raise RuntimeError("call reset() before step()")
        if isinstance(actions, torch.Tensor):
            actions = actions.detach().cpu().numpy()
        try:
            arr = np.asarray(actions)
        except (TypeError, ValueError) as e:
            raise ValueError(f"actions must be {self.num_envs} integer action ids: {e}") from None
        if arr.dtype.kind not in "iu":  # floats (55.9 is not 55), strings, bools, objects
            raise ValueError(f"actions must be integer action ids 0..67, got dtype {arr.dtype} "
                             f"({_short_list(arr)})")
        if arr.shape != (self.num_envs,):
            raise ValueError(f"need {self.num_envs} actions (shape ({self.num_envs},)), got shape "
                             f"{arr.shape}")
        acts = arr.tolist()
        rewards = np.zeros((self.num_envs, 4), dtype=np.float32)
        dones = np.zeros(self.num_envs, dtype=bool)
        hands = []
        for i, a in enumerate(acts):
            g = self.games[i]
            n_before = len(g.hand_results)
            g.apply(int(a))
            if len(g.hand_results) > n_before:
                hr = g.hand_results[-1]
                d = (hr.teams[0].hand_points - hr.teams[1].hand_points) * self.reward_scale
                rewards[i] = (d, -d, d, -d)
                hands.append((i, hr, self.start_bags[i] if len(g.hand_results) == 1 else None))
                if g.is_over or g.hand_number - self.start_hand[i] >= self.hands_per_episode:
                    dones[i] = True
                    self._new_game(i)
        obs, mask, seat = self._encode(range(self.num_envs))
        return (torch.from_numpy(obs), torch.from_numpy(mask), torch.from_numpy(seat),
                torch.from_numpy(rewards), torch.from_numpy(dones), {"hands": hands})

    def get_game(self, i: int) -> SpadesGame:
        """The scalar game of env ``i`` (full information; for bots acting from ``view(seat)``)."""
        return self.games[i]

    def observe(self, i: int, seat: int) -> np.ndarray:
        """Observation of ``seat`` (any seat, acting or not) in env ``i``: ``[575]`` float32."""
        return encode(self.games[i].view(seat))

    # -------------------------------------------------------------- resume
    def state_dict(self) -> dict:
        """Everything needed to continue exactly (JSON strings and plain ints)."""
        return {"rng": self.rng.bit_generator.state,
                "games": [g.to_json() for g in self.games],
                "start_bags": [list(b) for b in self.start_bags],
                "start_hand": list(self.start_hand)}

    def load_state_dict(self, d: dict) -> None:
        """Restore ``state_dict`` output; everything is checked before anything changes.

        Raises:
            ValueError: not such a state, another number of envs, games saved with other rules, a
                game that does not load, bad start bags / start hands or RNG state.
        """
        def bad(why):
            return ValueError(f"bad scalar env state: {why}")
        if not isinstance(d, dict) or not all(k in d for k in ("rng", "games", "start_bags",
                                                                "start_hand")):
            raise bad("must hold rng, games, start_bags and start_hand")
        n = self.num_envs
        games, bags, hands = d["games"], d["start_bags"], d["start_hand"]
        for key, v in (("games", games), ("start_bags", bags), ("start_hand", hands)):
            if not isinstance(v, list) or len(v) != n:
                raise ValueError(f"saved env state has {len(v) if isinstance(v, list) else '?'} "
                                 f"{key}, need {n}")
        rng = np.random.default_rng(0)
        try:
            rng.bit_generator.state = d["rng"]
        except Exception as e:  # noqa: BLE001 - numpy raises several types for a bad state
            raise bad(f"rng: {type(e).__name__}: {e}") from None
        loaded = []
        for i, text in enumerate(games):
            if not isinstance(text, str):
                raise bad(f"game {i} is not a JSON string")
            try:
                g = SpadesGame.from_json(text)
            except Exception as e:  # noqa: BLE001 - a foreign game: any failure is a bad state
                raise bad(f"game {i}: {type(e).__name__}: {e}") from None
            if g.rules.to_dict() != self.rules.to_dict():
                raise bad(f"game {i} was saved with other rules")
            if g.is_over or not g.view(g.current_player).legal_actions:
                raise bad(f"game {i} is over (a live env always holds a game in play)")
            loaded.append(g)
        for i, b in enumerate(bags):
            if not (isinstance(b, (list, tuple)) and len(b) == 2 and all(
                    isinstance(x, int) and not isinstance(x, bool) and 0 <= x < 10**6
                    for x in b)):
                raise bad(f"start_bags[{i}] must be two bag counts, got {b!r}"[:200])
        for i, h in enumerate(hands):
            if not (isinstance(h, int) and not isinstance(h, bool)
                    and 0 <= h <= loaded[i].hand_number):
                raise bad(f"start_hand[{i}] must be a hand number <= the game's, got {h!r}"[:200])
        self.rng = rng
        self.games = loaded
        self.start_bags = [tuple(b) for b in bags]
        self.start_hand = list(hands)

    def current(self):
        """``(obs, action_mask, seat)`` of the current decision in every env (after a restore)."""
        obs, mask, seat = self._encode(range(self.num_envs))
        return torch.from_numpy(obs), torch.from_numpy(mask), torch.from_numpy(seat)


_BITS = (1 << np.arange(52, dtype=np.uint64)).astype(np.uint64)


def masks_to_bool(masks) -> np.ndarray:
    """52-bit hand masks (ints, ``SpadesGame.hands``) -> bool ``[..., 52]`` by card id."""
    m = np.asarray(masks, dtype=np.uint64)
    return (m[..., None] & _BITS) != 0


def seat_priv(hands_mask, seat: int) -> np.ndarray:
    """The other three hands from ``seat``'s side (left, partner, right): bool ``[156]`` from the
    four 52-bit hand masks of ``SpadesGame.hands`` (the privileged critic's extra input)."""
    h = masks_to_bool(hands_mask)
    return h[list(SEATS_FROM[seat][1:])].reshape(-1)


def env_hands(env) -> torch.Tensor:
    """The cards every seat holds now in every env: bool ``[num_envs, 4, 52]`` (absolute seats),
    on the CPU. Full information: for the privileged critic only (``spades_env.agents.model``).

    Works for ``ScalarBatchEnv`` (from its games), ``spades_env.vector.SpadesVectorEnv`` (its
    hands tensor, which the engine clears card by card as they are played) and
    ``MixedRulesEnv`` (its envs' in order).
    """
    if isinstance(env, MixedRulesEnv):
        return torch.cat([env_hands(e) for e in env.envs])
    if hasattr(env, "games"):
        return torch.from_numpy(masks_to_bool([g.hands for g in env.games]))
    return env._hands.view(env.num_envs, 4, 52).cpu()


def rules_table(env) -> torch.Tensor:
    """The rules table of ``env``'s observations (``spades_env.compact.rules_table``): float32
    ``[R, 32]`` on the CPU, row ``k`` the rules piece of ``env.envs[k]`` for a ``MixedRulesEnv``,
    one row otherwise."""
    rules = env.rules if isinstance(env, MixedRulesEnv) else [env.rules]
    return torch.from_numpy(compact.rules_table(rules))


def compact_obs(env, obs: torch.Tensor) -> torch.Tensor:
    """``env``'s observations in the compact form (``spades_env.compact``): ``[N, 120]`` uint8 on
    the CPU. The batched engine gives them so (``obs_format="compact"``; a ``MixedRulesEnv``
    marks each game's rules row); float32 ones (``ScalarBatchEnv``) are packed, with each game's
    rules row."""
    if obs.dtype == torch.uint8:
        return obs.cpu()
    ids = 0
    if isinstance(env, MixedRulesEnv):
        ids = np.repeat(np.arange(len(env.envs)), np.diff(env.offsets))
    return torch.from_numpy(compact.pack(obs.cpu().numpy(), ids))


class MixedRulesEnv:
    """Several batched envs, one per rule set, behind one batched interface (``rules_mix``).

    Game ``i`` of the whole is game ``i - offset[k]`` of ``envs[k]``: the first ``envs[0].num_envs``
    games are under the first rules, and so on. ``reset``, ``step``, ``current``, ``get_game``,
    ``observe``, ``state_dict`` and ``load_state_dict`` are those of ``ScalarBatchEnv`` /
    ``SpadesVectorEnv`` over the concatenated games; ``step``'s ``info`` holds ``"hands"`` with
    the whole's game indices (and ``"terminated"`` / ``"truncated"`` when every env gives them).
    The observation's rules piece (``spades_env.observation``) tells the rule sets apart.

    Args:
        envs: the batched envs (at least one), each with its own rules.
    """

    def __init__(self, envs):
        if not envs:
            raise ValueError("MixedRulesEnv needs at least one env")
        self.envs = list(envs)
        self.offsets = np.cumsum([0] + [e.num_envs for e in self.envs])
        self.num_envs = int(self.offsets[-1])
        self.rules = [e.rules for e in self.envs]

    def _where(self, i: int) -> tuple:
        if not 0 <= i < self.num_envs:
            raise IndexError(f"game {i} out of range 0..{self.num_envs - 1}")
        k = int(np.searchsorted(self.offsets, i, side="right")) - 1
        return self.envs[k], i - int(self.offsets[k])

    @staticmethod
    def _cat(parts):
        out = [torch.cat([p[j].cpu() for p in parts]) for j in range(len(parts[0]))]
        if out[0].dtype == torch.uint8:  # compact observations: byte 94 names the env's rules
            out[0][:, compact.RULES_ID] = torch.repeat_interleave(
                torch.arange(len(parts), dtype=torch.uint8),
                torch.tensor([len(p[0]) for p in parts]))
        return tuple(out)

    def reset(self):
        """Start a fresh episode in every game. Returns ``(obs, action_mask, seat)``."""
        return self._cat([e.reset() for e in self.envs])

    def current(self):
        """``(obs, action_mask, seat)`` of the pending decision in every game."""
        return self._cat([e.current() for e in self.envs])

    def step(self, actions):
        """Apply ``actions[i]`` in game ``i``; returns ``(obs, mask, seat, rewards, dones, info)``.

        Raises:
            ValueError: ``actions`` not ``num_envs`` ids, or an illegal action (from the env of
                that game; envs before it in the batch have already moved).
        """
        a = torch.as_tensor(actions)
        if a.shape != (self.num_envs,):
            raise ValueError(f"need {self.num_envs} actions (shape ({self.num_envs},)), got shape "
                             f"{tuple(a.shape)}")
        outs = [e.step(a[int(lo):int(hi)]) for e, lo, hi in
                zip(self.envs, self.offsets[:-1], self.offsets[1:])]
        obs, mask, seat, rewards, dones = self._cat([o[:5] for o in outs])
        info = {"hands": [(int(i) + int(off), hr, bags) for o, off in zip(outs, self.offsets)
                          for i, hr, bags in o[5].get("hands", ())]}
        for key in ("terminated", "truncated"):
            if all(key in o[5] for o in outs):
                info[key] = torch.cat([torch.as_tensor(o[5][key]).cpu() for o in outs])
        return obs, mask, seat, rewards, dones, info

    def get_game(self, i: int) -> SpadesGame:
        """The scalar game of game ``i`` (full information; for bots acting from ``view``)."""
        env, j = self._where(int(i))
        return env.get_game(j)

    def observe(self, i: int, seat: int) -> np.ndarray:
        """Observation of ``seat`` in game ``i`` (``OBS_SIZE`` float32)."""
        env, j = self._where(int(i))
        return np.asarray(env.observe(j, seat))

    def state_dict(self) -> dict:
        """The envs' states in order, with their rules."""
        return {"format": "spades_env.training.MixedRulesEnv",
                "rules": [r.to_dict() for r in self.rules],
                "envs": [e.state_dict() for e in self.envs]}

    def load_state_dict(self, d: dict) -> None:
        """Restore ``state_dict`` output; every env's state is checked before any is loaded.

        Raises:
            ValueError: not such a state, other rule sets or another split of the games.
        """
        if not isinstance(d, dict) or d.get("format") != "spades_env.training.MixedRulesEnv":
            raise ValueError("not a MixedRulesEnv state (format tag missing)")
        envs = d.get("envs")
        if not isinstance(envs, list) or len(envs) != len(self.envs):
            raise ValueError(f"MixedRulesEnv state holds {len(envs) if isinstance(envs, list) else '?'} "
                             f"envs, this one has {len(self.envs)}")
        if d.get("rules") != [r.to_dict() for r in self.rules]:
            raise ValueError("MixedRulesEnv state was saved with other rule sets")
        old = [e.state_dict() for e in self.envs]
        try:
            for e, s in zip(self.envs, envs):
                e.load_state_dict(s)
        except ValueError:
            for e, s in zip(self.envs, old):  # the ones already loaded go back
                e.load_state_dict(s)
            raise


def _make_one(args, rules: Rules, num_envs: int, seed: int):
    want = args.vector_env == "vector" or (args.vector_env == "auto"
                                            and str(args.device).startswith("cuda"))
    if want:
        try:
            from spades_env.vector import SpadesVectorEnv  # noqa: optional, built elsewhere
        except ImportError:
            SpadesVectorEnv = None
        if SpadesVectorEnv is not None and args.random_start == 0 \
                and abs(args.reward_scale - 0.01) < 1e-12 and all(
                hasattr(SpadesVectorEnv, m) for m in ("state_dict", "load_state_dict", "get_game")):
            return SpadesVectorEnv(num_envs, device=args.device, seed=seed % 2**62,
                                   rules=rules, hands_per_episode=args.hands_per_episode,
                                   obs_format="compact")
        if args.vector_env == "vector":
            why = ("spades_env.vector is not available" if SpadesVectorEnv is None else
                   f"the batched engine starts every game at 0-0 and scales rewards by 0.01: it "
                   f"needs random_start 0 (got {args.random_start}) and reward_scale 0.01 (got "
                   f"{args.reward_scale})")
            raise ValueError(f"vector_env=vector cannot be used: {why}")
    return ScalarBatchEnv(num_envs, seed=seed, rules=rules,
                          hands_per_episode=args.hands_per_episode,
                          random_start=args.random_start,
                          reward_scale=args.reward_scale)


def make_env(args, seed: int):
    """Build the training env for ``args`` (``spades_env.training.config.Args``).

    ``vector_env``: ``scalar`` -> ``ScalarBatchEnv``; ``vector`` -> ``SpadesVectorEnv`` (needs
    ``random_start = 0`` and ``reward_scale = 0.01``, its fixed scale); ``auto`` -> the vector env
    on a CUDA device when it can be used, else the scalar one. On a CPU the scalar adapter is kept
    by default because only it supports ``random_start`` (the vector env starts every game at
    0-0); in the full training loop the vector env steps faster (``benchmarks/bench_train.py``),
    so ``vector_env: vector`` with ``random_start: 0`` is the choice when speed matters more.
    With ``rules_mix`` of ``k`` rule sets: a ``MixedRulesEnv`` of ``k`` such envs, the games split
    evenly (the first ``num_envs % k`` rule sets get one game more), env ``j`` seeded from
    ``[seed, j]``.
    """
    if not args.rules_mix:
        return _make_one(args, Rules.parse(args.rules), args.num_envs, seed)
    k = len(args.rules_mix)
    sizes = [args.num_envs // k + (j < args.num_envs % k) for j in range(k)]
    return MixedRulesEnv([
        _make_one(args, Rules.parse(r), n, int(np.random.default_rng([seed, j]).integers(2**62)))
        for j, (r, n) in enumerate(zip(args.rules_mix, sizes))])


__all__ = ["MixedRulesEnv", "ScalarBatchEnv", "make_env", "rules_table", "compact_obs"]
