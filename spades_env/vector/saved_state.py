"""Save and restore of the batched engine (``SpadesVectorEnv.state_dict`` /
``load_state_dict``): the state tensors, and the check that a loaded state is one the rules can
reach (the deal and this hand's action log replayed on the torch backend, the reference)."""

from __future__ import annotations

import numpy as np
import torch

from ..cards import MAX_BID, NUM_ACTIONS, NUM_CARDS, NUM_TRICKS
from ..observation import OBS_VERSION
from ..rules import Rules
from .layout import HAND_STEPS, HIST_WIDTH, ROW
from .torch_backend import game_outcomes, moon_teams, score_records


class SavedState:
    """The save/restore part of ``SpadesVectorEnv`` (a mixin over the env's state tensors)."""

    _STATE = ("_obs4", "_side", "_mask", "_hands", "_owner", "_voids", "_bids", "_tricks", "_trick",
              "_trick_obs", "_broken", "_dealer", "_cur", "_leader", "_led", "_scores", "_bags",
              "_hand_count",
              "_actions", "_hist", "_game_ids")

    def state_dict(self) -> dict:
        """Everything needed to continue exactly: CPU tensor copies, ints, and the generator."""
        d = {k: getattr(self, k).detach().cpu().clone() for k in self._STATE}
        d.update(format="spades_env.vector", version=1, obs_version=OBS_VERSION,
                 num_envs=self.num_envs, t=self._t,
                 started=self._started, seed=self.seed, gen=self._gen.get_state(),
                 rules=self.rules.to_dict(), hands_per_episode=self.hands_per_episode,
                 max_hands=self.max_hands, reward=self.reward)
        return d

    def load_state_dict(self, d: dict) -> None:
        """Restore ``state_dict`` output.

        The state is checked before anything changes: shapes, dtypes and index ranges, then that
        it is one the rules can reach (``_check_loaded``: the deal, the score records and totals,
        and every observation row, mask, hand, bid, trick and seat re-derived from the deal and
        this hand's action log on the reference path).

        Raises:
            ValueError: not a vector-env state, made for another batch size / rules / episode
                settings, or inconsistent (the message names the env and the tensor); the state
                is left unchanged.
        """
        self._check_state_header(d)
        tensors, t, started, seed, gen = self._read_state(d)
        self._check_state_tensors(tensors, t, seed)
        if started:
            self._check_loaded({k: v.cpu() for k, v in tensors.items()}, t)
        for k, v in tensors.items():
            if k == "_hist":
                # int64 since version 1.2 (int32 before: widened on load)
                self._hist = v.to(device=self.device, dtype=torch.int64).contiguous().clone()
            else:
                getattr(self, k).copy_(v)
        if self._kernel is not None:  # the kernel's hand masks follow from the loaded state
            self._native_bits()
        self._rows_stale = False
        self._t = t
        self._serial += 1
        self._mirror.clear()
        self._started = bool(started)
        self.seed = seed
        self._gen.set_state(gen)

    def _check_state_header(self, d) -> None:
        """``load_state_dict``'s first check: ``d`` is a vector-env state of this observation
        version, batch size, rules, reward and episode settings (``ValueError`` otherwise)."""
        if not isinstance(d, dict) or d.get("format") != "spades_env.vector" \
                or d.get("version") != 1:
            raise ValueError("not a spades_env.vector state dict (format/version tag missing)")
        if d.get("obs_version", 1) != OBS_VERSION:
            raise ValueError(f"state was saved with observation version {d.get('obs_version', 1)}"
                             f"; this spades_env uses version {OBS_VERSION} "
                             f"(spades_env.observation)")
        if d.get("num_envs") != self.num_envs:
            raise ValueError(f"state has {d.get('num_envs')} envs, this env has {self.num_envs}")
        try:  # read as a Rules: a switch added later is absent from older states (its default)
            same_rules = isinstance(d.get("rules"), dict) \
                and Rules.from_dict(d["rules"]) == self.rules
        except ValueError:
            same_rules = False
        if not same_rules or d.get("reward") != self.reward or \
                d.get("hands_per_episode") != self.hands_per_episode or \
                d.get("max_hands") != self.max_hands:
            raise ValueError("state was saved with other rules / reward / episode settings")

    def _read_state(self, d: dict) -> tuple:
        """``load_state_dict``'s fields of ``d``, read and type-checked before anything changes:
        ``(tensors by name, t, started, seed, gen)`` (``ValueError`` for a corrupt state)."""
        try:
            tensors = {k: torch.as_tensor(d[k]) for k in self._STATE}
            t = d["t"]
            if isinstance(t, bool) or not isinstance(t, (int, np.integer)):
                raise TypeError(f"hand step t must be an int, got {t!r}")
            t = int(t)
            started = d["started"]
            seed = int(d["seed"])
            gen = d["gen"]
            torch.Generator(device="cpu").set_state(gen)  # check it before changing anything
        except (KeyError, TypeError, ValueError, RuntimeError) as e:
            raise ValueError(f"corrupt vector-env state: {type(e).__name__}: {e}") from None
        if not isinstance(started, (bool, np.bool_)):
            raise ValueError(f"corrupt vector-env state: started must be a bool, got {started!r}")
        return tensors, t, started, seed, gen

    def _check_state_tensors(self, tensors: dict, t: int, seed: int) -> None:
        """``load_state_dict``'s check of the state's tensors (shapes and dtypes, and the values
        used as indices in range), its hand step ``t`` and its ``seed`` (``ValueError``)."""
        for k, v in tensors.items():
            cur = getattr(self, k)
            if k == "_hist":
                ok = v.dim() == 3 and v.shape[0] == self.num_envs and v.shape[1] >= 1 \
                    and v.shape[2] == HIST_WIDTH and v.dtype in (torch.int32, torch.int64)
                want = f"({self.num_envs}, H >= 1, {HIST_WIDTH}) torch.int64"
            else:
                ok = v.shape == cur.shape and v.dtype == cur.dtype
                want = f"{tuple(cur.shape)} {cur.dtype}"
            if not ok:
                raise ValueError(f"corrupt vector-env state: {k} has shape {tuple(v.shape)} "
                                 f"{v.dtype}, expected {want}")
        if not 0 <= t < HAND_STEPS:
            raise ValueError(f"corrupt vector-env state: hand step {t}")
        # values used as indices (by the C kernel too) must be in range
        limits = {"_cur": (0, 3), "_leader": (0, 3), "_led": (0, 3), "_dealer": (0, 3),
                  "_owner": (0, 3), "_bids": (-1, MAX_BID), "_tricks": (0, NUM_TRICKS),
                  "_trick": (0, NUM_CARDS - 1), "_trick_obs": (0, 4 * ROW - 1),
                  "_actions": (0, NUM_ACTIONS - 1), "_bags": (0, self.rules.bag_limit - 1),
                  "_hand_count": (0, tensors["_hist"].shape[1]), "_game_ids": (0, None)}
        for k, (lo, hi) in limits.items():
            v = tensors[k]
            if v.numel() and (int(v.min()) < lo or (hi is not None and int(v.max()) > hi)):
                raise ValueError(f"corrupt vector-env state: {k} values outside {lo}..{hi}")
        if not 0 <= seed < 2 ** 64:
            raise ValueError(f"corrupt vector-env state: seed {seed} outside 0..2**64-1")

    # tensors that follow from the deal, the dealer, the totals and this hand's action log
    _DERIVED = ("_obs4", "_side", "_mask", "_hands", "_voids", "_bids", "_tricks", "_trick",
                "_trick_obs", "_broken", "_cur", "_leader", "_led", "_actions")

    def _check_loaded(self, tensors: dict, t: int) -> None:
        """Raise ``ValueError`` unless the (CPU) state ``tensors`` at hand step ``t`` is one the
        rules can reach, game by game: each seat dealt 13 cards; every score record the scoring
        of its bids and tricks, chained from 0-0 (dealers rotating, totals and bags carried, no
        hand ending the game or the episode before the last); the totals, bags and dealer
        following the last record; and every other tensor (observation rows, masks, hands, bids,
        tricks, voids, the current trick, whose turn...) equal to what the reference (torch)
        path computes by dealing the recorded deal and replaying this hand's action log, each
        action checked legal. Nothing is changed."""
        n, r = self.num_envs, self.rules

        def fail(i, why):
            raise ValueError(f"corrupt vector-env state: env {i}: {why}")

        owner = tensors["_owner"]
        counts = (owner[:, None, :] == torch.arange(4)[None, :, None]).sum(2)
        bad = (counts != NUM_TRICKS).any(1)
        if bool(bad.any()):
            i = int(bad.nonzero()[0, 0])
            fail(i, f"the deal gives the seats {counts[i].tolist()} cards, not 13 each")
        hist = tensors["_hist"].to(torch.int64)
        hc = tensors["_hand_count"]
        for name, cap in (("hands_per_episode", self.hands_per_episode),
                          ("max_hands", self.max_hands)):
            if cap is not None and bool((hc >= cap).any()):
                fail(int((hc >= cap).nonzero()[0, 0]), f"{int(hc.max())} hands played in a "
                     f"running game, {name} is {cap}")
        scores = torch.zeros((n, 2), dtype=torch.int64)
        bags = torch.zeros((n, 2), dtype=torch.int64)
        last_dealer = torch.zeros(n, dtype=torch.int64)
        for h in range(int(hc.max()) if n else 0):
            live = hc > h
            row = hist[:, h]
            dealer, bids, tricks = row[:, 0], row[:, 1:5], row[:, 5:9]
            ok = (dealer >= 0) & (dealer <= 3) & ((bids >= 0) & (bids <= MAX_BID)).all(1) \
                & (tricks >= 0).all(1) & (tricks.sum(1) == NUM_TRICKS)
            if h:
                ok &= dealer == (last_dealer + 1) & 3
            rec, _, after, bags_after = score_records(dealer, bids.clamp(0, MAX_BID),
                                                       tricks.clamp(min=0), bags, scores, r)
            ok &= (rec == row).all(1) & (game_outcomes(after, r, moon_teams(rec, r)) < 0)
            bad = live & ~ok
            if bool(bad.any()):
                fail(int(bad.nonzero()[0, 0]), f"score record {h} is not the rules' scoring of "
                     f"its bids and tricks from the totals before it, or ends the game")
            scores = torch.where(live[:, None], after, scores)
            bags = torch.where(live[:, None], bags_after, bags)
            last_dealer = torch.where(live, dealer, last_dealer)
        bad = (tensors["_scores"] != scores).any(1) | (tensors["_bags"] != bags).any(1)
        if bool(bad.any()):
            fail(int(bad.nonzero()[0, 0]), "the totals or bags do not follow the score records")
        bad = (hc > 0) & (tensors["_dealer"] != (last_dealer + 1) & 3)
        if bool(bad.any()):
            fail(int(bad.nonzero()[0, 0]), "the dealer does not follow the last score record")
        # everything else: deal the recorded deal and replay the action log on the torch path
        step = 4096
        for lo in range(0, n, step):
            hi = min(n, lo + step)
            ref = type(self)(hi - lo, rules=r, hands_per_episode=self.hands_per_episode,
                                  max_hands=self.max_hands, reward=self.reward, backend="torch")
            for k in ("_dealer", "_scores", "_bags", "_hand_count", "_game_ids"):
                getattr(ref, k).copy_(tensors[k][lo:hi])
            ref._hist = hist[lo:hi].clone()
            ref._start_hands(tensors["_owner"][lo:hi].clone())
            ref._started = True
            for k in range(t):
                try:
                    ref.step(tensors["_actions"][lo:hi, k].clone())
                except ValueError as e:
                    raise ValueError(f"corrupt vector-env state: the action log is not legal at "
                                     f"hand step {k}: {e}") from None
            ref.current()  # marks the seat to act in every observation row, as the env does
            for k in self._DERIVED:
                mine = getattr(ref, k)
                bad = (mine != tensors[k][lo:hi]).reshape(hi - lo, -1).any(1)
                if bool(bad.any()):
                    fail(lo + int(bad.nonzero()[0, 0]), f"{k} does not follow from the deal and "
                         f"the action log (hand step {t})")


__all__ = ["SavedState"]
