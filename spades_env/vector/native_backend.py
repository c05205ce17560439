"""The batched engine's native backend (CPU): the step of every game in one loop of the C kernel
(``spades_env/_native/vector_kernel.c``, built and loaded by ``spades_env.native``) instead of
~50 tensor ops.

The kernel updates the same buffers as the torch backend (``torch_backend``, the reference),
through the pointers of one ``native.SpEnv`` struct: per step bids, card play, trick completion,
masks and the acting seats' observations; per hand start the deal and the rebuilt observation
rows; per hand end scoring, game end and rewards. Both give the same results for the same
generator state (the deal: card ``perm[k]`` of a stable argsort of uniform floats goes to seat
``(first + k) % 4``). With ``threads > 1`` the loop over games runs on OpenMP threads, and
``native.ThreadChooser`` picks 1 thread or ``threads``, whichever runs faster under the load.
"""

from __future__ import annotations

import ctypes
import time

import numpy as np
import torch

from .. import native
from .. import compact as cpt
from ..cards import NUM_CARDS
from ..observation import OBS_SIZE, OFFSETS
from .layout import HIST_WIDTH, ROW, SIDE, TRICK_NUMBER


class NativeBackend:
    """The native backend's part of ``SpadesVectorEnv`` (a mixin: it points the kernel at the
    env's state tensors and raises through the env's ``_illegal``). ``_load_native`` picks it at
    construction; then the env calls ``_step_native`` (or ``_step_timed``, adapting the thread
    count) for a hand's steps but the last, ``_check_native`` and ``_apply_native`` for the last,
    ``_start_hands_native``, ``_score_native``, ``_output_native`` and ``_sample_native``."""

    _NATIVE_ATTRS = ("_kernel", "_spenv", "_spenv_ref", "_lean_ptrs")
    _rows_stale = False  # the kernel stepped since the observation rows were last written

    def _load_native(self, required: bool, threads: int) -> str:
        """Load the C kernel and bind it to this env: ``"native"``, or ``"torch"`` when it cannot
        be built here and ``required`` is false. Raises ``native.NativeUnavailable`` when it
        cannot and ``required``."""
        try:
            self._kernel = native.load_kernel()
        except native.NativeUnavailable:
            if required:
                raise
            return "torch"
        if self._kernel.sp_openmp() and not native.openmp_unsafe():
            self._threads = threads
            if threads > 1:
                native.note_openmp_use()
                if self._adapt:
                    self._chooser = native.ThreadChooser(threads)
        if not self.copy:  # reused outputs: obs, zero rewards, done, terminated, truncated
            n = self.num_envs
            self._lean = (self._obs_out, torch.zeros((n, 4), dtype=torch.float32),
                          torch.zeros(n, dtype=torch.bool), torch.zeros(n, dtype=torch.bool),
                          torch.zeros(n, dtype=torch.bool))
        self._bind_native()
        native.track(self)
        return "native"

    def _reload_native(self) -> None:
        """After unpickling or deep-copying a native env: load the kernel again and bind it to
        the new tensors; with ``backend="auto"`` and no kernel here, go on with torch ops on the
        same state."""
        try:
            self._kernel = native.load_kernel()
        except native.NativeUnavailable:
            if self._backend_request == "native":
                raise
            self.backend, self._threads = "torch", 1  # "auto": the same state, torch ops
            return
        if native.openmp_unsafe():
            self._threads, self._chooser = 1, None
        self._bind_native()
        native.track(self)

    def _bind_native(self) -> None:
        """Point the kernel's ``sp_env`` struct at this env's tensors (after building the env, and
        after unpickling or deep-copying it: the tensors are new then)."""
        o, r = OFFSETS, self.rules
        ptr = lambda x: x.data_ptr()  # noqa: E731  (tensors allocated once, updated in place)
        self._spenv = native.SpEnv(
            n=self.num_envs, row=ROW, obs_size=OBS_SIZE, rules=native.c_rules(r),
            o_phase=o["phase"][0],
            o_hand=o["hand"][0], o_played=o["played"][0], o_trick=o["trick"][0],
            o_led=o["led_suit"][0], o_bids=o["bids"][0], o_won=o["tricks_won"][0],
            o_voids=o["voids"][0], o_broken=o["spades_broken"][0], o_tn=TRICK_NUMBER,
            o_to_act=o["to_act"][0], o_side=SIDE[0],
            cur=ptr(self._cur), actions=ptr(self._actions), bids=ptr(self._bids),
            trick_obs=ptr(self._trick_obs), leader=ptr(self._leader), led=ptr(self._led),
            trick=ptr(self._trick), tricks=ptr(self._tricks), obs4=ptr(self._obs4_buf),
            hands=ptr(self._hands), voids=ptr(self._voids), broken=ptr(self._broken),
            mask=ptr(self._mask), side=ptr(self._side),
            o_looked=o["looked"][0], o_dealer=o["dealer"][0],
            hands_per_episode=self.hands_per_episode or 0, max_hands=self.max_hands or 0,
            reward_game=int(self.reward == "game"), owner=ptr(self._owner),
            dealer=ptr(self._dealer), scores=ptr(self._scores), bags=ptr(self._bags),
            hand_count=ptr(self._hand_count),
            target_feature=float(np.float32(r.target_score / 500.0)), threads=self._threads,
            o_rules=o["rules"][0], n_rules=o["rules"][1] - o["rules"][0],
            rules_feat=ptr(self._rules_feat), compact=int(self.obs_format == "compact"),
            c_size=cpt.COMPACT_SIZE, c_counts=cpt.COUNTS[0], c_side=cpt.SIDE[0],
            hbits=ptr(self._hbits), dealt=ptr(self._dealt), lbits=ptr(self._lbits))
        self._spenv_ref = ctypes.byref(self._spenv)
        if not self.copy:
            self._lean_ptrs = [x.data_ptr() for x in self._lean[1:]]

    def _serial_after_fork(self) -> None:
        """In a process forked after a multi-threaded kernel ran (``native.track``): one thread."""
        self._threads = 1
        self._chooser = None
        if self._kernel is not None:
            self._spenv.threads = 1

    def _step_native(self, a: torch.Tensor, t: int):
        """``step`` at hand step ``t`` < 55 (``a``: contiguous int64 ids): checked (with
        ``validate``), applied and rendered in one kernel call; returns ``step``'s tuple."""
        k, n, check = self._kernel, self.num_envs, self.validate  # checked in the same call
        seat = torch.empty(n, dtype=torch.int64)
        if self.copy:
            obs = self._new_obs()
            r = k.sp_step_render(self._spenv_ref, a.data_ptr(), t, obs.data_ptr(),
                                 seat.data_ptr(), None, None, None, None, check)
            if r < 0:
                self._refused(r, a)
            self._t = t + 1
            self._rows_stale = True
            z = torch.zeros(n, dtype=torch.bool)
            return obs, self._mask.clone(), seat, torch.zeros((n, 4), dtype=torch.float32), \
                z, {"terminated": torch.zeros_like(z), "truncated": torch.zeros_like(z)}
        # copy=False: the env's own obs and mask; the all-zero rewards and flags of a step
        # that ends no hand are reused too (re-zeroed in C each step)
        lean = self._lean
        r = k.sp_step_render(self._spenv_ref, a.data_ptr(), t, lean[0].data_ptr(),
                             seat.data_ptr(), *self._lean_ptrs, check)
        if r < 0:
            self._refused(r, a)
        self._t = t + 1
        self._rows_stale = True
        return lean[0], self._mask, seat, lean[1], lean[2], \
            {"terminated": lean[3], "truncated": lean[4]}

    def _step_timed(self, a: torch.Tensor, t: int):
        """``_step_native`` on the thread count ``ThreadChooser`` picks, timed for it."""
        ch = self._chooser
        self._spenv.threads = ch.next()
        t0 = time.perf_counter()
        try:
            out = self._step_native(a, t)
        except BaseException:
            self._spenv.threads = ch.best
            raise
        ch.record(time.perf_counter() - t0)
        self._spenv.threads = ch.best  # for the untimed calls (sample_actions...)
        return out

    def _check_native(self, a: torch.Tensor) -> None:
        """Raise (``_illegal``) unless every action is in its game's mask."""
        bad = self._kernel.sp_check(self._spenv_ref, a.data_ptr())
        if bad >= 0:
            self._illegal(int(bad), int(a[bad]))

    def _apply_native(self, a: torch.Tensor, t: int) -> None:
        """Apply ``a`` at hand step ``t`` without rendering (a hand's last card: scoring
        follows, ``_score_native``)."""
        r = self._kernel.sp_step(self._spenv_ref, a.data_ptr(), t)
        if r < 0:
            self._refused(r, a)
        self._rows_stale = True

    def _refused(self, r: int, a: torch.Tensor) -> None:
        """Raise for the kernel's refusal code ``r = -1 - game`` (``sp_step``)."""
        self._illegal(-1 - r, int(a[-1 - r]))

    def _output_native(self):
        """``(obs, mask, seat)`` of the seat to act in every game, rendered by the kernel."""
        n = self.num_envs
        seat = torch.empty(n, dtype=torch.int64)
        out = self._new_obs() if self.copy else self._obs_out
        self._kernel.sp_render(self._spenv_ref, out.data_ptr(), seat.data_ptr(), self._t)
        return (out, self._mask.clone(), seat) if self.copy else (out, self._mask, seat)

    def _start_hands_native(self, holder: torch.Tensor | None) -> None:
        """``_start_hands_torch`` in the kernel (``sp_start_hands``): the same deal from the
        same uniform floats of the env's generator, or ``holder``."""
        u = None if holder is not None else torch.rand((self.num_envs, NUM_CARDS),
                                                       generator=self._gen, dtype=torch.float32)
        if holder is not None:
            holder = holder.contiguous()
        self._kernel.sp_start_hands(self._spenv_ref, None if u is None else u.data_ptr(),
                                    None if holder is None else holder.data_ptr())
        self._rows_stale = True

    def _sync_rows(self) -> None:
        """Bring the observation rows (``_obs4``) up to date: the kernel's steps update the game
        state only, and the rows are written from it when read (``state_dict``, ``observe``,
        pickling)."""
        if self._rows_stale and self._kernel is not None:
            self._kernel.sp_sync_rows(self._spenv_ref, self._t)
        self._rows_stale = False

    def _native_bits(self) -> None:
        """The kernel's hand masks (``_hbits``, ``_dealt``) and legal bits (``_lbits``) from
        ``_hands``, ``_owner`` and ``_mask`` (after ``load_state_dict``, which restores those)."""
        n = self.num_envs
        w = torch.ones(NUM_CARDS, dtype=torch.int64) << torch.arange(NUM_CARDS)
        self._hbits.copy_((self._hands.view(n, 4, NUM_CARDS).long() * w).sum(-1))
        seats = torch.arange(4)[None, :, None]
        self._dealt.copy_(((self._owner[:, None, :] == seats).long() * w).sum(-1))
        cards = (self._mask[:, :NUM_CARDS].long() * w).sum(1)
        rest = self._mask[:, NUM_CARDS:].long()
        bids = (rest * w[:rest.shape[1]]).sum(1) | torch.tensor(-2 ** 63)  # bit 63: bidding
        self._lbits.copy_(torch.where(rest.any(1), bids, cards))

    def _score_native(self):
        """``_score_torch`` in the C kernel (``sp_end_hands``)."""
        n = self.num_envs
        rec = torch.empty((n, HIST_WIDTH), dtype=torch.int64)
        hand_points = torch.empty((n, 2), dtype=torch.int64)
        winner = torch.empty(n, dtype=torch.int64)
        terminated = torch.empty(n, dtype=torch.bool)
        truncated = torch.empty(n, dtype=torch.bool)
        rewards = torch.empty((n, 4), dtype=torch.float32)
        ended = self._kernel.sp_end_hands(
            self._spenv_ref, rec.data_ptr(), self._hist.data_ptr(), self._hist.shape[1],
            hand_points.data_ptr(), winner.data_ptr(), terminated.data_ptr(),
            truncated.data_ptr(), rewards.data_ptr())
        return rec, hand_points, winner, terminated, truncated, rewards, ended > 0

    def _sample_native(self, u: torch.Tensor) -> torch.Tensor:
        """``_sample_torch`` in the kernel (``sp_sample``)."""
        out = torch.empty(self.num_envs, dtype=torch.int64)
        self._kernel.sp_sample(self._spenv_ref, u.data_ptr(), out.data_ptr())
        return out


__all__ = ["NativeBackend"]
