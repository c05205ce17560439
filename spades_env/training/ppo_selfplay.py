"""Self-play PPO for partnership Spades (CleanRL style), to read top to bottom.

Sections, in order: seeding, agent, storage, rollout, GAE, update, checkpoint, and ``train``,
which runs them; the run's clock, evaluations and logs are ``training.run_log``. The stages around PPO have their own modules:
``training.warm_start`` (behaviour cloning and DAgger on a teacher bot, before PPO),
``training.opponents`` (the opponent pool) and ``training.distill_stage`` (search distillation
after PPO).

Algorithm: PPO with the clipped surrogate objective, clipped value loss and entropy bonus
(Schulman et al. 2017, "Proximal Policy Optimization Algorithms"; implementation details as in
CleanRL ``ppo.py``), advantages by GAE (Schulman et al. 2016). One network (``spades_env.agents.model.Agent``)
plays every learner seat, each from its own seat's observation; illegal actions are masked to
probability 0.

Multi-agent bookkeeping: every learner decision is a transition of *its seat's* trajectory. In each
game we keep, per seat, the index of that seat's last transition; the next decision of the same
seat is its successor for GAE. Rewards (the hand's point difference, scaled) arrive for all four
seats when a hand ends and are added to each seat's last transition; the episode end makes it
terminal. A trajectory cut by the end of a rollout is bootstrapped with the value of that seat's
current observation. With single-hand episodes without Blind Nil every hand is exactly 56
decisions, so ``num_steps = 56`` collects whole hands and nothing is bootstrapped.

Determinism and resume: every random source is seeded from ``Args.seed``; python/numpy/torch and
the bots are reseeded at the start of each iteration from ``(seed, iteration)``, and the
environment state (games and RNG), the opponent assignments and the pool are checkpointed, so
``--resume`` continues a killed run exactly from its last checkpoint.
"""

from __future__ import annotations

import math
import os
import random
import time

import numpy as np
import torch
from torch import nn

from spades_env import Rules
from spades_env.agents.model import PRIV_SIZE, Agent, privileged_features, widen_input
from spades_env.bots import make_bot
from spades_env.cards import NUM_ACTIONS, NUM_CARDS, TEAM
from spades_env.compact import COMPACT_SIZE, expand

from .checkpoint import check_model, load_checkpoint, save_checkpoint
from .config import Args, has_distill_stage, to_dict
from .distill_stage import (beside_due, beside_hands, distill_stage, fit_probe,
                            next_labels_beside, stage_minutes, start_labels_beside)
from .envs import compact_obs, env_hands, make_env, rules_table
from .evaluate import format_table
from .opponents import Opponents
from .run_log import (Clock, bar_figures, eval_summary, game_metrics, log_iteration, ppo_status,
                      record_eval, stage_rows)
from .teacher_records import team_points
from .warm_start import warm_start


# ============================================================================= seeding
def seed_everything(seed: int, threads: int = 1) -> None:
    """Seed python, numpy (legacy global) and torch once; fix threads; deterministic cuDNN."""
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)
    torch.set_num_threads(max(1, threads))
    torch.backends.cudnn.deterministic = True
    torch.backends.cudnn.benchmark = False


def iteration_seed(seed: int, iteration: int) -> int:
    """Per-iteration seed, so a resumed run draws the same numbers as an unbroken one."""
    return int(np.random.default_rng([seed, iteration, 17]).integers(2**62))


# ============================================================================= agent
# The envs are ``training.envs.make_env`` (the batched engine, or scalar games with its interface).
def make_agent(args: Args) -> Agent:
    """The shared-trunk policy/value network of ``args`` on ``args.device``."""
    return Agent(hidden=args.hidden, head_hidden=args.head_hidden,
                 critic_hidden=args.critic_hidden).to(args.device)


# ============================================================================= storage
def rules_table_standard() -> torch.Tensor:
    """The rules table of the standard rules, ``[1, 32]`` float32 (a fresh storage's)."""
    from spades_env.compact import rules_table as table_of
    return torch.from_numpy(table_of(Rules()))


class Storage:
    """Learner transitions of one rollout (at most ``capacity``), flat in time order.

    Observations are kept compact (``spades_env.compact``: 120 bytes a decision instead of 711
    float32, 2844 bytes) and expanded on the learner's device when read (``floats``), with the
    rules table ``table`` of the env that made them (set by ``rollout``).
    ``next_idx[t]`` is the index of the same seat's next decision in the same game (-1 none);
    ``done[t]`` marks the last decision of an episode; ``boot[t]`` the bootstrap value of a
    trajectory cut by the end of the rollout.
    """

    def __init__(self, capacity: int, device):
        self.obs = torch.zeros((capacity, COMPACT_SIZE), dtype=torch.uint8)
        self.table = rules_table_standard()
        self.mask = torch.zeros((capacity, NUM_ACTIONS), dtype=torch.bool)
        self.action = torch.zeros(capacity, dtype=torch.int64)
        self.logprob = torch.zeros(capacity)
        self.value = np.zeros(capacity, np.float32)
        self.reward = np.zeros(capacity, np.float32)
        self.done = np.zeros(capacity, bool)
        self.next_idx = np.full(capacity, -1, np.int64)
        self.boot = np.zeros(capacity, np.float32)
        self.teacher = torch.full((capacity,), -1, dtype=torch.int64)  # -1: no label
        self.priv = torch.zeros((capacity, PRIV_SIZE), dtype=torch.bool)  # privileged critic
        self.n = 0
        self.device = device

    def reset(self):
        """Empty the storage for the next rollout (labels, rewards and links cleared)."""
        self.n = 0
        self.teacher[:] = -1
        self.reward[:] = 0
        self.done[:] = False
        self.next_idx[:] = -1
        self.boot[:] = 0

    def floats(self, rows, device) -> torch.Tensor:
        """The float32 observations ``[k, OBS_SIZE]`` of compact rows ``rows`` (uint8
        ``[k, 120]``, any device), expanded on ``device``."""
        return expand(rows.to(device), self.table.to(device))

    def add(self, obs, mask, action, logprob, value, priv=None) -> np.ndarray:
        """Append ``k = len(action)`` decisions (rows of ``obs`` [k, 120] uint8 compact,
        ``mask`` [k, 68] bool, ``priv`` [k, 156] bool or None); returns their indices, int64
        ``[k]``."""
        k = len(action)
        s = self.n
        if priv is not None:
            self.priv[s:s + k] = priv
        self.obs[s:s + k] = obs
        self.mask[s:s + k] = mask
        self.action[s:s + k] = action
        self.logprob[s:s + k] = logprob
        self.value[s:s + k] = value
        self.n += k
        return np.arange(s, s + k)


# ============================================================================= rollout
def rollout(env, cur, agent: Agent, opp: Opponents, store: Storage, args: Args,
            rng: np.random.Generator, stats: dict, teacher=None):
    """Step every env ``args.num_steps`` times; store the learner's transitions in ``store``.

    With a ``teacher`` bot, each learner decision is also labelled with the teacher's action
    (from the same seat's view) for the auxiliary imitation loss (``ppo_teacher_coef``).

    ``cur`` is ``(obs, mask, seat)`` of the current decisions; returns the new ``cur``.
    ``stats`` collects finished hands: ``stats["hands"]`` list of ``(HandResult, ctrl row)``.
    """
    dev = torch.device(args.device)
    n_env = env.num_envs
    last = np.full((n_env, 4), -1, np.int64)
    obs, mask, seat = cur
    store.reset()
    store.table = rules_table(env)
    table = store.table.to(dev)
    ar = np.arange(n_env)
    privileged = agent.critic is not None
    for _ in range(args.num_steps):
        seat_np = seat.numpy()
        who = opp.ctrl[ar, seat_np]
        actions = np.zeros(n_env, np.int64)
        learn = np.flatnonzero(who == 0)
        packed = compact_obs(env, obs)  # what the storage keeps
        x = expand(packed.to(dev), table)  # what the networks read
        if len(learn):
            priv = None
            with torch.no_grad():  # the action from the observation only
                a, logp = agent.act(x[learn], mask[learn].to(dev))
            if privileged:  # what the critic will read (values: after the rollout, batched)
                priv = privileged_features(env_hands(env)[learn], seat[learn]).bool()
            idx = store.add(packed[learn], mask[learn], a.cpu(), logp.cpu(), 0.0, priv)
            actions[learn] = a.cpu().numpy()
            if teacher is not None:
                store.teacher[idx] = torch.as_tensor(
                    [teacher.act(env.get_game(int(i)).view(int(seat_np[i]))) for i in learn])
            for t, i in zip(idx, learn):
                s = seat_np[i]
                if last[i, s] >= 0:
                    store.next_idx[last[i, s]] = t
                last[i, s] = t
        for sid in np.unique(who[who > 0]):
            rows = np.flatnonzero(who == sid)
            with torch.no_grad():
                a, _, _, _ = opp.agents[int(sid)].get_action_and_value(x[rows],
                                                                     mask[rows].to(dev))
            actions[rows] = a.cpu().numpy()
        for i in np.flatnonzero(who < 0):
            bot = opp.bots[-who[i] - 1]
            actions[i] = bot.act(env.get_game(int(i)).view(int(seat_np[i])))
        obs, mask, seat, rewards, dones, info = env.step(torch.as_tensor(actions))
        obs, mask, seat = obs.cpu(), mask.cpu(), seat.cpu()  # storage and bots work on the CPU
        r_np, d_np = rewards.cpu().numpy(), dones.cpu().numpy()
        _book_hands(info, r_np, d_np, last, store, opp, stats, args, rng)
    _store_values(agent, store, dev, privileged)
    _bootstrap_cut(env, agent, store, last, dev, privileged)
    return obs, mask, seat


def _book_hands(info: dict, r_np: np.ndarray, d_np: np.ndarray, last: np.ndarray,
                store: Storage, opp: Opponents, stats: dict, args: Args,
                rng: np.random.Generator) -> None:
    """After one step: each finished hand's reward (with the ``bag_cost`` correction) added to
    each seat's last decision, the hand kept in ``stats``; each finished game's trajectories
    closed (``last`` reset) and new opponents drawn for it."""
    for i, hr, _bags in info.get("hands", ()):
        stats["hands"].append((hr, opp.ctrl[i].copy()))
        bag_fix = 0.0  # team 0's reward change when bags cost ``bag_cost`` points each
        if args.bag_cost > 0:
            bag_fix = args.reward_scale * (
                (team_points(hr.teams[0], args.bag_cost) - hr.teams[0].hand_points)
                - (team_points(hr.teams[1], args.bag_cost) - hr.teams[1].hand_points))
        for s in range(4):
            if last[i, s] >= 0:
                store.reward[last[i, s]] += r_np[i, s] + (bag_fix if TEAM[s] == 0 else -bag_fix)
    for i in np.flatnonzero(d_np):
        for s in range(4):
            if last[i, s] >= 0:
                store.done[last[i, s]] = True
                last[i, s] = -1
        opp.assign(int(i), rng)


def _store_values(agent: Agent, store: Storage, dev: torch.device, privileged: bool) -> None:
    """The critic's value of every stored decision, in batched passes."""
    # Values of every stored decision in one batched pass (the network is fixed during the
    # rollout, so this equals evaluating them one step at a time).
    with torch.no_grad():
        for s0 in range(0, store.n, 8192):
            s1 = min(store.n, s0 + 8192)
            pv = store.priv[s0:s1].to(dev).float() if privileged else None
            store.value[s0:s1] = agent.critic_value(store.floats(store.obs[s0:s1], dev),
                                                    pv).cpu().numpy()


def _bootstrap_cut(env, agent: Agent, store: Storage, last: np.ndarray, dev: torch.device,
                   privileged: bool) -> None:
    """Bootstrap trajectories cut by the end of the rollout (``last`` >= 0) with the value of
    the seat's current view."""
    open_ = np.argwhere(last >= 0)
    if len(open_):
        if hasattr(env, "observe"):
            o = torch.stack([torch.as_tensor(env.observe(int(i), int(s))).cpu()
                             for i, s in open_])
            with torch.no_grad():
                pv = None
                if privileged:
                    h = env_hands(env)
                    pv = privileged_features(h[torch.as_tensor(open_[:, 0])],
                                             torch.as_tensor(open_[:, 1])).to(dev)
                vals = agent.critic_value(o.to(dev), pv).cpu().numpy()
        else:  # (an approximation: the value of the seat's last decision)
            vals = store.value[last[open_[:, 0], open_[:, 1]]]
        store.boot[last[open_[:, 0], open_[:, 1]]] = vals


# ============================================================================= GAE
def compute_gae(store: Storage, gamma: float, lam: float) -> tuple[np.ndarray, np.ndarray]:
    """Generalized advantage estimation along each seat's own trajectory (``next_idx`` links).

    Returns ``(advantages [n], returns [n])`` as float32.
    """
    n = store.n
    adv = np.zeros(n, np.float32)
    val, rew, done, nxt, boot = (store.value, store.reward, store.done, store.next_idx,
                                 store.boot)
    for t in range(n - 1, -1, -1):
        if done[t]:
            delta = rew[t] - val[t]
            adv[t] = delta
        elif nxt[t] >= 0:
            j = nxt[t]
            delta = rew[t] + gamma * val[j] - val[t]
            adv[t] = delta + gamma * lam * adv[j]
        else:
            adv[t] = rew[t] + gamma * boot[t] - val[t]
    return adv, adv + val[:n]


# ============================================================================= update
def ppo_update(agent: Agent, opt, store: Storage, adv: np.ndarray, ret: np.ndarray, args: Args,
               gen: torch.Generator, teacher_coef: float = 0.0) -> dict:
    """PPO epochs over the rollout (clipped policy loss, clipped value loss, entropy bonus), plus
    ``teacher_coef`` times the cross-entropy to the teacher's labels where ``store.teacher`` has
    them (an imitation anchor that keeps the fine-tuned policy near the warm start).

    Returns the last epoch's mean figures: ``pg_loss``, ``v_loss``, ``entropy``, ``approx_kl``,
    ``old_approx_kl``, ``clipfrac``, and ``explained_variance`` of the value before the update.
    """
    dev = torch.device(args.device)
    n = store.n
    b_obs, b_mask = store.obs[:n].to(dev), store.mask[:n].to(dev)  # compact: 120 bytes a row
    table = store.table.to(dev)
    b_act, b_logp = store.action[:n].to(dev), store.logprob[:n].to(dev)
    b_adv = torch.as_tensor(adv, device=dev)
    b_ret = torch.as_tensor(ret, device=dev)
    b_val = torch.as_tensor(store.value[:n], device=dev)
    b_teacher = store.teacher[:n].to(dev)
    b_priv = store.priv[:n].to(dev).float() if agent.critic is not None else None
    mb = max(1, n // args.num_minibatches)
    figs = {}
    for _epoch in range(args.update_epochs):
        perm = torch.randperm(n, generator=gen).to(dev)
        acc = {k: [] for k in ("pg_loss", "v_loss", "entropy", "approx_kl", "old_approx_kl",
                               "clipfrac", "teacher_loss")}
        for s in range(0, n, mb):
            idx = perm[s:s + mb]
            x = expand(b_obs[idx], table)  # this minibatch's float32 observations
            _, newlogp, entropy, newv = agent.get_action_and_value(x, b_mask[idx], b_act[idx])
            if b_priv is not None:
                newv = agent.critic_value(x, b_priv[idx])
            logratio = newlogp - b_logp[idx]
            ratio = logratio.exp()
            with torch.no_grad():
                old_kl = (-logratio).mean()
                kl = ((ratio - 1) - logratio).mean()
                clipfrac = ((ratio - 1.0).abs() > args.clip_coef).float().mean()
            a = b_adv[idx]
            if args.norm_adv and len(idx) > 1:
                a = (a - a.mean()) / (a.std() + 1e-8)
            pg_each = torch.max(-a * ratio,
                                -a * ratio.clamp(1 - args.clip_coef, 1 + args.clip_coef))
            if args.bid_loss_weight != 1.0:  # bids weigh more; card play keeps its weight
                pg_each = pg_each * torch.where(b_act[idx] >= NUM_CARDS, args.bid_loss_weight, 1.0)
            pg_loss = pg_each.mean()
            if args.clip_vloss:
                v_unclipped = (newv - b_ret[idx]) ** 2
                v_clip = b_val[idx] + (newv - b_val[idx]).clamp(-args.clip_coef, args.clip_coef)
                v_loss = 0.5 * torch.max(v_unclipped, (v_clip - b_ret[idx]) ** 2).mean()
            else:
                v_loss = 0.5 * ((newv - b_ret[idx]) ** 2).mean()
            ent = entropy.mean()
            loss = pg_loss - args.ent_coef * ent + args.vf_coef * v_loss
            if teacher_coef > 0:
                lab = b_teacher[idx]
                has = lab >= 0
                if bool(has.any()):
                    logits, _ = agent(x[has])
                    logits = agent.masked(logits, b_mask[idx][has])
                    t_loss = nn.functional.cross_entropy(logits, lab[has])
                    loss = loss + teacher_coef * t_loss
                    acc["teacher_loss"].append(t_loss.item())
            opt.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(agent.parameters(), args.max_grad_norm)
            opt.step()
            for k, v in (("pg_loss", pg_loss), ("v_loss", v_loss), ("entropy", ent),
                         ("approx_kl", kl), ("old_approx_kl", old_kl), ("clipfrac", clipfrac)):
                acc[k].append(v.item())
        figs = {k: float(np.mean(v)) for k, v in acc.items() if v}
        if args.target_kl > 0 and figs["approx_kl"] > args.target_kl:
            break
    y_pred, y_true = store.value[:n], ret
    var_y = np.var(y_true)
    figs["explained_variance"] = float("nan") if var_y == 0 else float(
        1 - np.var(y_true - y_pred) / var_y)
    return figs


def teacher_coef(args: Args, decisions: int) -> float:
    """Weight of the imitation anchor: ``ppo_teacher_coef`` decayed linearly to 0 at
    ``ppo_teacher_decay`` of ``total_decisions`` (0 without a teacher)."""
    if not args.bc_teacher or args.ppo_teacher_coef <= 0:
        return 0.0
    end = args.ppo_teacher_decay * args.total_decisions
    if end <= 0:
        return args.ppo_teacher_coef
    return args.ppo_teacher_coef * max(0.0, 1.0 - decisions / end)


# ============================================================================= checkpoint
def rng_states() -> dict:
    """The global random states of python, numpy and torch (a checkpoint's ``rng``)."""
    return {"python": list(random.getstate()[1]), "python_version": random.getstate()[0],
            "python_gauss": random.getstate()[2], "numpy": np.random.get_state()[1].tolist(),
            "numpy_pos": int(np.random.get_state()[2]), "torch": torch.get_rng_state()}


def make_payload(args, agent, opt, progress, env, opp, eval_results, full=True) -> dict:
    """The checkpoint dict (see ``spades_env/training/checkpoint.py``); ``full=False`` keeps weights only."""
    d = {"config": to_dict(args), "model": agent.state_dict(),
         "model_shape": {"hidden": list(agent.hidden), "head_hidden": agent.head_hidden,
                         "obs_size": agent.obs_size, "critic_hidden": list(agent.critic_hidden)},
         "progress": dict(progress), "eval": list(eval_results)}
    if full:
        d["optimizer"] = opt.state_dict()
        d["rng"] = rng_states()
        d["env"] = env.state_dict() if hasattr(env, "state_dict") else None
        d["pool"] = opp.state_dict()
    return d


# ============================================================================= train
class _Run:
    """What the stages of one ``train`` call share: the config, network, optimizer, envs,
    opponents, the ``progress`` counters and evaluations, the clock, the TensorBoard writer and
    the checkpoint folder (``save``: the run as it is now)."""

    def __init__(self, args: Args, ckpt_dir: str, writer, log, data: dict | None):
        self.args, self.ckpt_dir, self.writer, self.log = args, ckpt_dir, writer, log
        self.env = make_env(args, seed=int(np.random.default_rng([args.seed, 1]).integers(2**62)))
        self.agent = make_agent(args)
        self.opt = torch.optim.Adam(self.agent.parameters(), lr=args.lr, eps=1e-5)
        self.opp = Opponents(args, self.env.num_envs)
        self.progress = dict(data["progress"]) if data is not None else {
            "iteration": 0, "decisions": 0, "stage": "start", "seconds": 0.0}
        self.evals: list[dict] = list(data["eval"]) if data is not None else []
        self.clock = Clock(self.progress)
        self.saved_iteration = self.progress["iteration"]  # what latest.pt holds (at a resume)
        self.ppo_mark = (0.0, self.progress["decisions"])  # (PPO seconds, decisions) at its start
        self.last_status = time.time()
        self.run_left = math.inf  # PPO's seconds left by run_minutes, as last estimated
        self.books = {"clock": self.clock, "evals": self.evals, "writer": writer,
                      "ckpt_dir": ckpt_dir, "log": log}

    def status(self, text: str, bar=None) -> None:
        """One PPO progress line (``run_log.ppo_status``: minutes used and left, iteration,
        decisions and their rate), then ``text``."""
        sec0, dec0 = self.ppo_mark
        sec = self.clock.ppo_seconds()
        rate = (self.progress["decisions"] - dec0) / max(sec - sec0, 1e-9)
        line = ppo_status(self.args, self.progress, sec, rate, self.run_left) + \
            (f": {text}" if text else "")
        (bar.write if bar is not None else self.log)(line)
        self.last_status = time.time()

    def save(self, name: str, full: bool = True) -> None:
        """The run as it is now, as ``<ckpt_dir>/<name>`` (``full``: with what resuming needs)."""
        save_checkpoint(os.path.join(self.ckpt_dir, name),
                        make_payload(self.args, self.agent, self.opt, self.progress, self.env,
                                     self.opp, self.evals, full=full))

    def save_latest(self) -> None:
        """``latest.pt``, the clock's time banked first."""
        self.clock.bank()
        self.save("latest.pt")
        self.saved_iteration = self.progress["iteration"]


def _resume(run: _Run, data: dict, resume: str):
    """Continue from a checkpoint's state; returns the current decisions ``(obs, mask, seat)``."""
    run.agent.load_state_dict(data["model"])
    run.opt.load_state_dict(data["optimizer"])
    if data["env"] is not None:
        run.env.load_state_dict(data["env"])
    run.opp.load_state_dict(data["pool"], run.args)
    run.log(f"resumed {resume}: iteration {run.progress['iteration']}, "
            f"{run.progress['decisions']} decisions")
    return tuple(x.cpu() for x in run.env.current())


def _start(run: _Run):
    """A new run's first stage: the network from ``init_from`` or the warm start (evaluated),
    the pool's anchor, the envs reset and the opponents drawn; returns the first decisions."""
    args, agent, progress = run.args, run.agent, run.progress
    started = None  # what the network comes from: "init_from", "warm start" or nothing
    if args.init_from:  # a given network instead of the warm-start stage
        # its shape was checked against the config by check_ready (open_run), before any work
        init = load_checkpoint(args.init_from, map_location=args.device)
        kw = check_model(init, args.init_from)
        state, _ = widen_input(init["model"], kw, agent.obs_size)  # an earlier observation
        agent.load_state_dict(state)
        run.log(f"network initialised from {args.init_from}"
                + (f" (widened from {kw['obs_size']} observation floats)"
                   if kw["obs_size"] != agent.obs_size else ""))
        started = "init_from"
    elif args.bc_teacher and args.bc_hands > 0:  # ---- warm start by behaviour cloning
        t0 = time.time()
        progress["warmstart"] = warm_start(agent, args, run.writer, run.log)
        progress["warmstart_seconds"] = time.time() - t0
        run.save("warmstart.pt", full=False)  # to measure what PPO adds to it
        started = "warm start"
    if started and args.eval_every > 0 and args.eval_opponents:
        rows, _ = record_eval(agent, args, args.eval_deals, args.seed, **run.books,
                              notes={"after": started})
        run.log(f"eval after {started}: points/hand {eval_summary(rows)}")
        run.save("best.pt", full=False)  # the first evaluation is the best so far
    progress["stage"] = "ppo"
    if args.pool_anchor:
        run.opp.add_anchor(agent)
    cur = tuple(x.cpu() for x in run.env.reset())
    rng0 = np.random.default_rng([args.seed, 0, 5])
    for i in range(run.env.num_envs):
        run.opp.assign(i, rng0)
    run.save("latest.pt")
    return cur


def _iteration(run: _Run, cur, store: Storage, bar):
    """One PPO iteration (rollout, GAE, update, logs, evaluation, checkpoint) from the decisions
    ``cur``; returns the next ones."""
    args, agent, opt, opp, progress = run.args, run.agent, run.opt, run.opp, run.progress
    it = progress["iteration"]
    s = iteration_seed(args.seed, it)
    torch.manual_seed(s)
    rng = np.random.default_rng(s)
    gen = torch.Generator().manual_seed(s)
    opp.reseed_bots(args.seed, it)
    opt.param_groups[0]["lr"] = learning_rate(args, progress["decisions"])

    # ---- rollout
    t0 = time.time()
    stats = {"hands": []}
    agent.eval()
    coef = teacher_coef(args, progress["decisions"])
    teacher = make_bot(args.bc_teacher, seed=s) if coef > 0 else None
    cur = rollout(run.env, cur, agent, opp, store, args, rng, stats, teacher)
    agent.train()
    t_roll = time.time() - t0
    n = store.n
    # ---- GAE + update
    figs = {}
    if n > 0:
        adv, ret = compute_gae(store, args.gamma, args.gae_lambda)
        figs = ppo_update(agent, opt, store, adv, ret, args, gen, coef)
    t_it = time.time() - t0
    progress["iteration"] = it + 1
    progress["decisions"] += n
    step = progress["decisions"]

    # ---- logging
    games = game_metrics(stats["hands"], opp)
    per_second = run.env.num_envs * args.num_steps / t_it
    log_iteration(run.writer, step, figs, {
        "learning_rate": opt.param_groups[0]["lr"], "teacher_coef": coef,
        "decisions_per_s": per_second, "learner_decisions_per_s": n / t_it,
        "rollout_share_of_time": t_roll / t_it}, games)
    if (it + 1) % args.pool_every == 0:
        opp.add_snapshot(agent)
    if bar is not None:
        bar.update(min(n, max(0, args.total_decisions - bar.n)))
        bar.set_postfix(bar_figures(it + 1, per_second, figs, games, run.evals), refresh=False)

    # ---- evaluation
    if args.eval_every > 0 and args.eval_opponents and (it + 1) % args.eval_every == 0:
        # the same deals at every evaluation (args.seed): two points compare deal by deal
        rows, best = record_eval(agent, args, args.eval_deals, args.seed, **run.books)
        if best:
            run.save("best.pt", full=False)
        run.status(f"points/hand {eval_summary(rows)}", bar)
    elif time.time() - run.last_status >= STATUS_SECONDS:
        run.status("", bar)

    # ---- checkpoint
    if (it + 1) % args.save_every == 0:
        run.save_latest()
    return cur


STATUS_SECONDS = 120.0
"""the longest a PPO stage goes without a progress line (one comes with every evaluation)."""


def learning_rate(args: Args, decisions: int) -> float:
    """PPO's learning rate after ``decisions`` learner decisions: ``args.lr``, falling linearly to
    0 at ``total_decisions`` with ``anneal_lr`` (CleanRL's schedule)."""
    if not args.anneal_lr:
        return args.lr
    return min(1.0, max(0.0, 1.0 - decisions / args.total_decisions)) * args.lr


def _fit_probe(run: _Run) -> float | None:
    """With ``run_minutes`` and a distillation stage: the seconds per row of the stage's fit on
    this host (``distill_stage.fit_probe``; timed before the labels beside PPO start); else
    None."""
    args = run.args
    if args.run_minutes <= 0 or not has_distill_stage(args):
        return None
    return fit_probe(args, run.agent, run.log)


def _stage_due(run: _Run, row_s: float) -> bool:
    """Whether PPO stops now for ``run_minutes``: the run's minutes so far plus the stage's
    (``distill_stage.stage_minutes`` of the hands labelled beside PPO so far, at the label rate
    measured beside PPO once 500 hands are in) reach it; logs the figures when they do, and keeps
    PPO's time left by it for the progress lines (``run.run_left``)."""
    args = run.args
    hands = beside_hands(args, run.progress, run.ckpt_dir)
    rate = {}
    if hands >= 500 and args.distill_beside_ppo > 0:  # hands a second of one label process
        rate["label_rate"] = hands / max(1.0, run.clock.ppo_seconds()) / args.distill_beside_ppo
    stage = stage_minutes(args, hands, row_s, **rate)
    used = run.clock.total() / 60
    run.run_left = 60 * (args.run_minutes - used - stage)
    if used + stage < args.run_minutes:
        return False
    run.log(f"run_minutes: {used:.1f} min used and the distillation stage's estimate "
            f"{stage:.1f} min ({hands} hands labelled beside PPO) reach {args.run_minutes:g}")
    return True


def _ppo(run: _Run, cur) -> str:
    """PPO iterations until ``total_decisions``, ``max_minutes`` of PPO, ``run_minutes`` (the
    distillation stage's estimate then fills the run's minutes left: ``_stage_due``) or
    ``stop_after_iterations``; returns which of them stopped it."""
    args, progress = run.args, run.progress
    row_s = _fit_probe(run)
    store = Storage(run.env.num_envs * args.num_steps, args.device)
    bar = None
    if args.progress:
        from tqdm import tqdm
        bar = tqdm(total=args.total_decisions, unit="dec", dynamic_ncols=True, smoothing=0.1,
                   initial=min(progress["decisions"], args.total_decisions))
    run.clock.start_ppo()
    run.ppo_mark = (run.clock.ppo_seconds(), progress["decisions"])
    run.last_status = time.time()
    stop_reason = "total_decisions"
    it_first = progress["iteration"]
    beside = None
    try:
        while progress["decisions"] < args.total_decisions:
            # the PPO seconds are stored at every iteration (the saves and the summary read them)
            seconds = run.clock.ppo_seconds()
            if args.max_minutes > 0 and seconds > 60 * args.max_minutes:
                stop_reason = "max_minutes"
                break
            if row_s is not None and _stage_due(run, row_s):
                stop_reason = "run_minutes"
                break
            if beside is None and args.distill_beside_ppo > 0 \
                    and progress["iteration"] >= args.distill_beside_from:
                beside = _start_beside(run) or False
            elif beside and beside_due(args, progress):  # the labels go on with this network
                beside = _start_beside(run, beside) or False  # (stop() again does nothing)
            cur = _iteration(run, cur, store, bar)
            if args.stop_after_iterations and progress["iteration"] - it_first \
                    >= args.stop_after_iterations:
                stop_reason = "stop_after_iterations"
                break
    finally:
        if beside:
            n = len(beside.stop())
            run.log(f"labels beside PPO stopped: {n} chunks of {args.distill_chunk_hands} hands "
                    f"in {beside.folder}" + (f"; {len(beside.failed)} label process(es) had "
                                             f"failed (exit codes {beside.failed}, see above)"
                                             if beside.failed else ""))
    run.status(f"PPO stopped ({stop_reason})", bar)  # also stores the last iteration's seconds
    if bar is not None:
        bar.close()
    return stop_reason


def _start_beside(run: _Run, old=None):
    """``distill_stage.start_labels_beside`` for this run (``next_labels_beside`` after the
    labels ``old`` of the network before): the network of this iteration saved as the snapshot
    when none is recorded yet (and ``latest.pt`` then, so a resumed run finds it)."""
    def snapshot(name: str) -> None:
        run.save(name, full=False)

    before = run.progress.get("beside")
    if old is None:
        beside = start_labels_beside(run.args, run.progress, run.ckpt_dir, snapshot, run.log)
    else:
        beside = next_labels_beside(run.args, run.progress, run.ckpt_dir, old, snapshot,
                                    run.log)
    if run.progress.get("beside") is not before and beside is not None:
        try:
            run.save_latest()
        except BaseException:  # the caller never holds these processes: stop them here
            beside.stop()
            raise
    return beside


def _finish(run: _Run, stop_reason: str) -> tuple[str, list]:
    """The final checkpoint first (nothing after it can lose the run's work), the
    search-distillation stage when configured, then the final evaluation; returns the final
    checkpoint's path and the evaluation's rows."""
    args, progress, ckpt_dir = run.args, run.progress, run.ckpt_dir
    progress["stop_reason"] = stop_reason
    run.save_latest()
    final_path, final_agent, what = os.path.join(ckpt_dir, "latest.pt"), run.agent, "PPO"
    if has_distill_stage(args):
        # the labels' source: the PPO network, written once, so that the label chunks of a
        # stopped stage still match it (their files record its SHA-256) after latest.pt is
        # rewritten (rewritten when PPO has gone on since: a resume with more total_decisions)
        source = os.path.join(ckpt_dir, "ppo_final.pt")
        if not (os.path.exists(source) and load_checkpoint(source)["progress"].get(
                "iteration") == progress["iteration"]):
            run.save("ppo_final.pt", full=False)
        final_path = os.path.join(ckpt_dir, "distilled.pt")
        # latest.pt after each round: a stopped stage keeps its finished rounds
        # run_minutes: the fits' passes end by then (the run's seconds count across resumes)
        deadline = time.time() + 60 * args.run_minutes - run.clock.total() \
            if args.run_minutes > 0 else None
        if deadline is not None and deadline <= time.time():
            run.log(f"run_minutes ({args.run_minutes:g}) are spent before the distillation "
                    f"stage ({run.clock.total() / 60:.1f} min so far): each round's fit makes "
                    f"one pass (--set run_minutes=0 makes its distill_epochs)")
        final_agent = distill_stage(args, source, final_path, progress, run.log,
                                    run.save_latest, run.writer, deadline)
        run.save_latest()
        what = "distilled"
    final_rows = []
    if args.final_eval_deals > 0 and args.eval_opponents:
        t0 = time.time()
        final_rows, _ = record_eval(final_agent, args, args.final_eval_deals,
                                    args.seed + 10_000, **run.books, notes={"network": what},
                                    final=True)
        run.log(format_table(final_rows, f"final evaluation of the {what} network after "
                                         f"{progress['iteration']} iterations, "
                                         f"{progress['decisions']} learner decisions "
                                         f"({args.final_eval_deals} duplicate deals per "
                                         f"opponent):"))
        progress["final_eval_seconds"] = time.time() - t0
    run.save_latest()
    return final_path, final_rows


def train(args: Args, resume: str | None = None, log=print, overwrite: bool = False,
          inputs=()) -> dict:
    """Run warm start (optional), PPO and search distillation (optional) per ``args``; returns
    the final evaluation and paths.

    Args:
        args: the config.
        resume: path of a ``latest.pt`` to continue exactly (its config is used; where ``args``
            differs, ``training.config.resume_args`` applies the safe changes and refuses others).
        overwrite: replace an earlier run of the same name (``training.checkpoint.open_run``;
            default: take a free name ``NAME-2``...).
        inputs: ``(how, path)`` of other files the run was made from (the ``--config`` file):
            the run's folders may not be or hold them (``open_run``).
    Returns:
        ``{"eval": [rows], "checkpoint": path, "decisions": int, "iterations": int, "seconds",
        "stop_reason": str, "saved_iteration": int, "stages": [(stage, minutes, what)]}``
        (``stages``: ``run_log.stage_rows``); ``saved_iteration`` is the iteration the
        checkpoint holds (``stop_after_iterations`` makes no final save: the last periodic one).
    """
    from torch.utils.tensorboard import SummaryWriter
    from .checkpoint import open_run
    from .config import resume_args
    data = None
    if resume:
        data = load_checkpoint(resume, map_location=args.device)
        if "optimizer" not in data or "env" not in data:
            raise ValueError(f"{resume}: a stripped (shipped) checkpoint cannot be resumed")
        args = resume_args(data["config"], args, resume, log)
    # every value, bot, device and resume section checked; the run's folders locked (may rename)
    folders = open_run(args, resume, data, overwrite=overwrite, log=log, inputs=inputs)
    try:
        args = folders.args
        seed_everything(args.seed, args.torch_threads)
        writer = SummaryWriter(folders.run_dir)
        writer.add_text("config", "\n".join(f"    {k}: {v}" for k, v in to_dict(args).items()))
        run = _Run(args, folders.ckpt_dir, writer, log, data)
        cur = _resume(run, data, resume) if data is not None else _start(run)
        stop_reason = _ppo(run, cur)
        final_path, final_rows = os.path.join(folders.ckpt_dir, "latest.pt"), []
        if stop_reason != "stop_after_iterations":  # behaves like a killed run: no final save
            final_path, final_rows = _finish(run, stop_reason)
        writer.close()
    except Exception:
        # an error ends the run: its folders are unlocked, so this process may resume it; an
        # interrupt (KeyboardInterrupt) keeps them held for `spades train`'s message, which
        # then releases them (train.interrupted_message)
        if "writer" in locals():
            writer.close()
        folders.close()
        raise
    folders.close()
    progress = run.progress
    return {"eval": final_rows, "checkpoint": final_path, "decisions": progress["decisions"],
            "iterations": progress["iteration"], "seconds": progress.get("seconds", 0.0),
            "stop_reason": stop_reason, "stages": stage_rows(progress, run.evals),
            # the iteration final_path holds: without a final save, the last periodic one
            "saved_iteration": progress["iteration"] if stop_reason != "stop_after_iterations"
            else run.saved_iteration}


__all__ = ["train", "seed_everything", "iteration_seed", "make_agent", "learning_rate", "Storage",
           "rollout", "compute_gae", "ppo_update", "teacher_coef", "rng_states", "make_payload"]
