"""Self-play PPO for partnership Spades, in one file (CleanRL style).

Sections, in order: Args, seeding, envs, agent, warm start, storage, rollout, GAE, update, logging,
checkpoint, and ``train`` which runs them.

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

Opponents: in a share ``opponent_share`` of the episodes one team (chosen at random) is played by a
pool member: a scripted bot (``pool_bots``) or a frozen past snapshot of the learner (the last
``pool_size``, one added every ``pool_every`` iterations). Only learner seats make transitions.

Warm start: optionally the network first imitates a scripted teacher (``bc_teacher``, default
``medium``) on its own games (cross-entropy on its bids and cards, plus value regression on the
hand results), so PPO starts from a sensible player instead of random play.

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

from spades_env import Phase, Rules, SpadesGame
from spades_env.agents.model import PRIV_SIZE, Agent, privileged_features
from spades_env.bots import make_bot
from spades_env.cards import NUM_ACTIONS, NUM_CARDS
from spades_env.observation import OBS_SIZE, encode

from .checkpoint import load_checkpoint, save_checkpoint
from .config import Args, to_dict
from .envs import env_hands, make_env, masks_to_bool, randomize_start
from .teacher_records import team_points
from .evaluate import NetPlayer, duplicate_match, format_table, hand_stats

# ============================================================================= Args
# ``Args`` lives in ``spades_env/training/config.py`` (mirrored by configs/*.yaml).


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


# ============================================================================= envs
# ``training.envs.make_env``: SpadesVectorEnv when available, else ScalarBatchEnv (same interface).


# ============================================================================= agent
def make_agent(args: Args) -> Agent:
    """The shared-trunk policy/value network of ``args`` on ``args.device``."""
    return Agent(hidden=args.hidden, head_hidden=args.head_hidden,
                 critic_hidden=args.critic_hidden).to(args.device)


def seat_priv(hands_mask, seat: int) -> np.ndarray:
    """The other three hands from ``seat``'s side (left, partner, right): bool ``[156]`` from the
    four 52-bit hand masks of ``SpadesGame.hands`` (the privileged critic's extra input)."""
    h = masks_to_bool(hands_mask)
    return h[[(seat + 1) & 3, (seat + 2) & 3, (seat + 3) & 3]].reshape(PRIV_SIZE)


# ============================================================================= warm start
def collect_teacher_data(teacher: str, hands: int, seed: int, rules: Rules,
                         random_start: float, reward_scale: float, student: Agent | None = None,
                         device="cpu", batch: int = 256, bag_cost: float = 0.0) -> dict:
    """Play ``hands`` hands and label every decision with the action of bot ``teacher``.

    Without ``student`` the teacher plays all four seats (plain behaviour cloning). With a
    ``student`` network, the student plays (sampling from its masked policy) and the teacher only
    labels the positions the student reaches: DAgger (Ross, Gordon and Bagnell 2011, "A Reduction
    of Imitation Learning and Structured Prediction to No-Regret Online Learning"), which corrects
    the compounding errors of plain cloning. The teacher sees only the acting seat's view.
    Episodes start like the training env's (``random_start``, see ``envs.randomize_start``).

    Returns numpy arrays: ``obs`` [D, 575] float16 (0/1 pieces exact, the scaled counts and
    scores rounded to float16, to halve the memory), ``mask`` [D, 68] bool, ``action`` [D] int64
    (the teacher's choice), ``ret`` [D] float32 (the deciding seat's team point difference in that
    hand * reward_scale, bags at ``bag_cost``: ``teacher_records.team_points``), ``priv`` [D, 156]
    bool (the other three hands from the deciding seat's side, for the privileged critic).
    """
    rng = np.random.default_rng([seed, 4242, 0 if student is None else 1])
    bot = make_bot(teacher, seed=int(rng.integers(2**31)))
    gen = torch.Generator().manual_seed(int(rng.integers(2**62)))
    obs_l, mask_l, act_l, ret_l, priv_l = [], [], [], [], []
    for start in range(0, hands, batch):
        games = []
        for _ in range(min(batch, hands - start)):
            g = SpadesGame(rules, seed=int(rng.integers(2**63)))
            if random_start > 0 and rng.random() < random_start:
                randomize_start(g, rng)
            games.append(g)
        rec = [[] for _ in games]  # per game: (row index, seat)
        live = list(range(len(games)))
        while live:
            rows = []
            for i in live:
                g = games[i]
                p = g.current_player
                v = g.view(p)
                o = encode(v)
                m = np.zeros(NUM_ACTIONS, dtype=bool)
                m[list(v.legal_actions)] = True
                rec[i].append((len(act_l), p))
                rows.append(len(act_l))
                priv_l.append(seat_priv(g.hands, p))
                obs_l.append(o)
                mask_l.append(m)
                act_l.append(int(bot.act(v)))
            if student is None:
                moves = [act_l[r] for r in rows]
            else:
                with torch.no_grad():
                    o = torch.as_tensor(np.stack([obs_l[r] for r in rows]), device=device)
                    m = torch.as_tensor(np.stack([mask_l[r] for r in rows]), device=device)
                    logits, _ = student(o)
                    probs = torch.softmax(student.masked(logits, m).float().cpu(), -1)
                    moves = torch.multinomial(probs, 1, generator=gen).squeeze(-1).tolist()
            for i, a in zip(live, moves):
                games[i].apply(int(a))
            live = [i for i in live if not games[i].hand_results]
        ret_l.extend([0.0] * (len(act_l) - len(ret_l)))
        for i, g in enumerate(games):
            hr = g.hand_results[0]
            d = (team_points(hr.teams[0], bag_cost) - team_points(hr.teams[1], bag_cost)) \
                * reward_scale
            for r, p in rec[i]:
                ret_l[r] = d if (p & 1) == 0 else -d
        for r in range(len(obs_l) - sum(len(x) for x in rec), len(obs_l)):
            obs_l[r] = obs_l[r].astype(np.float16)
    return {"obs": np.stack(obs_l).astype(np.float16), "mask": np.stack(mask_l),
            "action": np.array(act_l, np.int64), "ret": np.array(ret_l, np.float32),
            "priv": np.stack(priv_l)}


def collect_teacher_bids(teacher: str, deals: int, seed: int, rules: Rules,
                         random_start: float) -> dict:
    """Bidding-only imitation data: ``deals`` fresh deals, the teacher makes the 4 bids.

    Bids are 4 of the 56 decisions of a hand but decide the contract, so they get extra data
    cheaply. Same arrays as ``collect_teacher_data``; ``ret`` is NaN (no hand is played, so the
    value loss skips these rows).
    """
    rng = np.random.default_rng([seed, 4243])
    bot = make_bot(teacher, seed=int(rng.integers(2**31)))
    obs, mask, act, priv = [], [], [], []
    for _ in range(deals):
        g = SpadesGame(rules, seed=int(rng.integers(2**63)))
        if random_start > 0 and rng.random() < random_start:
            randomize_start(g, rng)
        while g.phase == Phase.BIDDING:
            v = g.view(g.current_player)
            a = int(bot.act(v))
            priv.append(seat_priv(g.hands, g.current_player))
            obs.append(encode(v).astype(np.float16))
            m = np.zeros(NUM_ACTIONS, dtype=bool)
            m[list(v.legal_actions)] = True
            mask.append(m)
            act.append(a)
            g.apply(a)
    return {"obs": np.stack(obs), "mask": np.stack(mask), "action": np.array(act, np.int64),
            "ret": np.full(len(act), np.nan, np.float32), "priv": np.stack(priv)}


def collect_teacher_vec(teacher: str, hands: int, seed: int, reward_scale: float,
                        bag_cost: float = 0.0, bids_only: bool = False,
                        num_envs: int = 256) -> dict:
    """``collect_teacher_data`` (four ``teacher`` bots, games from 0-0, standard rules) on the
    batched engine: the observations, masks and hidden hands come from
    ``spades_env.vector.SpadesVectorEnv`` (native kernel), so only the bot's own decision is
    Python work (about 3x faster than scalar games). With ``bids_only`` only the 4 bids of each
    deal are recorded (``ret`` NaN, like ``collect_teacher_bids``) and the rest of the hand is
    played at random without recording.

    Returns the arrays of ``collect_teacher_data`` (``obs`` float16 [D, OBS_SIZE], ``mask``,
    ``action``, ``ret``, ``priv``) with D = ``hands`` * (4 if ``bids_only`` else 56).
    Raises:
        ImportError: the vector engine is not available.
    """
    from spades_env.vector import SpadesVectorEnv
    rng = np.random.default_rng([seed, 4244, int(bids_only)])
    bot = make_bot(teacher, seed=int(rng.integers(2**31)))
    n_env = max(1, min(num_envs, hands))
    env = SpadesVectorEnv(n_env, seed=int(rng.integers(2**62)), hands_per_episode=1)
    obs, mask, seat = env.reset()
    rounds = -(-hands // n_env)
    per = 4 if bids_only else 56
    D = rounds * n_env * per
    out = {"obs": np.zeros((D, OBS_SIZE), np.float16), "mask": np.zeros((D, NUM_ACTIONS), bool),
           "action": np.zeros(D, np.int64), "ret": np.full(D, np.nan, np.float32),
           "priv": np.zeros((D, PRIV_SIZE), bool)}
    row = 0
    for _ in range(rounds):
        first = row
        seats = np.zeros((n_env, per), np.int64)
        for step in range(56):
            if step < per:
                acts = np.array([bot.act(env.get_game(i).view(int(seat[i])))
                                 for i in range(n_env)], np.int64)
                sl = slice(row, row + n_env)
                out["obs"][sl] = obs.numpy()
                out["mask"][sl] = mask.numpy()
                out["action"][sl] = acts
                out["priv"][sl] = privileged_features(env_hands(env), seat).bool().numpy()
                seats[:, step] = seat.numpy()
                row += n_env
                actions = torch.from_numpy(acts)
            else:
                actions = env.sample_actions()
            obs, mask, seat, _rew, _done, info = env.step(actions)
            if bids_only:
                continue
            for i, hr, _bags in info.get("hands", ()):
                d = (team_points(hr.teams[0], bag_cost) - team_points(hr.teams[1], bag_cost)) \
                    * reward_scale
                out["ret"][first + i:row:n_env] = np.where(seats[i] % 2 == 0, d, -d)
    keep = hands * per
    return {k: v[:keep] for k, v in out.items()}


def concat_data(*parts) -> dict:
    """Concatenate imitation data sets (dicts of equal keys)."""
    parts = [p for p in parts if p is not None]
    return {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}


def behaviour_clone(agent: Agent, data: dict, args: Args, epochs: int, writer=None, log=print,
                    tag_step: int = 0) -> dict:
    """Fit ``agent`` to the teacher's actions (masked cross-entropy) and the hand results (MSE,
    rows with a NaN return skipped) for ``epochs`` passes over ``data``.

    Returns the final epoch's ``{"loss", "accuracy", "value_loss"}`` (accuracy on the training
    data: greedy action == teacher action). TensorBoard steps start at ``tag_step``.
    """
    dev = torch.device(args.device)
    obs = torch.as_tensor(data["obs"])  # float16, converted per minibatch
    mask = torch.as_tensor(data["mask"])
    act = torch.as_tensor(data["action"])
    ret = torch.as_tensor(data["ret"])
    priv = torch.as_tensor(data["priv"]) if agent.critic is not None else None
    n = len(act)
    opt = torch.optim.Adam(agent.parameters(), lr=args.bc_lr)
    gen = torch.Generator().manual_seed(args.seed)
    out = {}
    for epoch in range(epochs):
        perm = torch.randperm(n, generator=gen)
        tot, correct, vtot = 0.0, 0, 0.0
        for s in range(0, n, args.bc_batch):
            idx = perm[s:s + args.bc_batch]
            o, m, a, r = (obs[idx].to(dev).float(), mask[idx].to(dev), act[idx].to(dev),
                          ret[idx].to(dev))
            logits, value = agent(o)
            logits = agent.masked(logits, m)
            ce = nn.functional.cross_entropy(logits, a)
            has = ~torch.isnan(r)
            vl = ((value[has] - r[has]) ** 2).mean() if bool(has.any()) else value.sum() * 0
            if priv is not None and bool(has.any()):  # the privileged critic learns the same
                cv = agent.critic_value(o[has], priv[idx][has.cpu()].to(dev).float())
                vl = vl + ((cv - r[has]) ** 2).mean()
            loss = ce + args.bc_value_coef * vl
            opt.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(agent.parameters(), args.max_grad_norm)
            opt.step()
            tot += ce.item() * len(idx)
            vtot += vl.item() * len(idx)
            correct += (logits.argmax(-1) == a).sum().item()
        out = {"loss": tot / n, "accuracy": correct / n, "value_loss": vtot / n}
        if writer is not None:
            writer.add_scalar("warmstart/loss", out["loss"], tag_step + epoch)
            writer.add_scalar("warmstart/accuracy", out["accuracy"], tag_step + epoch)
            writer.add_scalar("warmstart/value_loss", out["value_loss"], tag_step + epoch)
        log(f"warm start epoch {epoch + 1}/{epochs} on {n} decisions: cross-entropy "
            f"{out['loss']:.3f} accuracy {out['accuracy']:.3f} value MSE {out['value_loss']:.3f}")
    return out


def warm_start(agent: Agent, args: Args, writer=None, log=print) -> dict:
    """The warm-start stage: behaviour cloning of ``args.bc_teacher``, then DAgger rounds.

    1. ``bc_hands`` hands played by four teachers plus ``bc_bid_deals`` bidding-only deals;
       ``bc_epochs`` passes.
    2. ``bc_dagger_rounds`` times: ``bc_dagger_hands`` hands played by the current network and
       labelled by the teacher, added to the data; ``bc_dagger_epochs`` passes over all of it.

    Returns a summary dict (data size, final accuracy and losses, seconds per part).
    """
    rules = Rules.preset(args.rules)
    t0 = time.time()
    records = None
    if args.bc_records:
        from .teacher_records import load_records, replay
        rec = load_records(args.bc_records)
        records = replay(rec, args.reward_scale, args.bag_cost)
        log(f"warm start: replayed {len(records['action'])} decisions of 4x {rec['teacher']} "
            f"from {args.bc_records} in {time.time() - t0:.0f}s")
    vec = False
    if args.random_start == 0 and args.rules == "standard" and args.vector_env != "scalar":
        try:
            import spades_env.vector  # noqa: F401 - the batched engine (native or torch)
            vec = True
        except ImportError:
            vec = False
    if vec:  # the same data from the batched engine, about 3x faster
        data = concat_data(
            collect_teacher_vec(args.bc_teacher, args.bc_hands, args.seed, args.reward_scale,
                                args.bag_cost) if args.bc_hands > 0 else None,
            collect_teacher_vec(args.bc_teacher, args.bc_bid_deals, args.seed,
                                args.reward_scale, bids_only=True)
            if args.bc_bid_deals > 0 else None,
            records)
    else:
        data = concat_data(
            collect_teacher_data(args.bc_teacher, args.bc_hands, args.seed, rules,
                                 args.random_start, args.reward_scale, bag_cost=args.bag_cost)
            if args.bc_hands > 0 else None,
            collect_teacher_bids(args.bc_teacher, args.bc_bid_deals, args.seed, rules,
                                 args.random_start) if args.bc_bid_deals > 0 else None,
            records)
    log(f"warm start: {len(data['action'])} decisions of 4x {args.bc_teacher} "
        f"({args.bc_hands} hands, {args.bc_bid_deals} bidding-only deals) in "
        f"{time.time() - t0:.0f}s")
    summary = {"collect_seconds": time.time() - t0}
    t1 = time.time()
    out = behaviour_clone(agent, data, args, args.bc_epochs, writer, log)
    step = args.bc_epochs
    for r in range(args.bc_dagger_rounds):
        t2 = time.time()
        agent.eval()
        new = collect_teacher_data(args.bc_teacher, args.bc_dagger_hands,
                                   args.seed * 1000 + r + 1, rules, args.random_start,
                                   args.reward_scale, student=agent, device=args.device,
                                   bag_cost=args.bag_cost)
        agent.train()
        data = concat_data(data, new)
        log(f"DAgger round {r + 1}/{args.bc_dagger_rounds}: {len(new['action'])} decisions "
            f"played by the network, labelled by {args.bc_teacher} ({time.time() - t2:.0f}s)")
        out = behaviour_clone(agent, data, args, args.bc_dagger_epochs, writer, log, step)
        step += args.bc_dagger_epochs
    summary.update(out)
    summary["decisions"] = int(len(data["action"]))
    summary["train_seconds"] = time.time() - t1
    return summary


# ============================================================================= storage
class Storage:
    """Learner transitions of one rollout (at most ``capacity``), flat in time order.

    ``next_idx[t]`` is the index of the same seat's next decision in the same game (-1 none);
    ``done[t]`` marks the last decision of an episode; ``boot[t]`` the bootstrap value of a
    trajectory cut by the end of the rollout.
    """

    def __init__(self, capacity: int, device):
        self.obs = torch.zeros((capacity, OBS_SIZE), dtype=torch.float32)
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
        self.n = 0
        self.teacher[:] = -1
        self.reward[:] = 0
        self.done[:] = False
        self.next_idx[:] = -1
        self.boot[:] = 0

    def add(self, obs, mask, action, logprob, value, priv=None) -> np.ndarray:
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
def pool_bot_options(args: Args, name: str) -> dict:
    """``make_bot`` options of pool bot ``name``: the ``pool_search_samples`` of a search bot
    (``hard``, ``insane``), else none."""
    if name in ("hard", "insane") and args.pool_search_samples:
        card, bid = args.pool_search_samples
        return {"samples": int(card), "bid_samples": int(bid)}
    return {}


class Opponents:
    """Who plays each seat: ``ctrl[i, s]`` = 0 learner, -(k+1) bot ``pool_bots[k]``, >0 snapshot id.

    Snapshots are frozen copies of the learner (``Agent`` in eval mode) kept in ``agents``.
    """

    def __init__(self, args: Args, num_envs: int):
        self.args = args
        self.ctrl = np.zeros((num_envs, 4), np.int64)
        self.bots = []
        self.pool: list[int] = []  # snapshot ids, oldest first
        self.agents: dict[int, Agent] = {}
        self.next_id = 1
        self.anchor = 0  # id of the permanent warm-start snapshot (``pool_anchor``), 0 = none

    def members(self) -> list[int]:
        """Snapshot ids an episode may draw: the anchor (if any) and the recent ring."""
        return ([self.anchor] if self.anchor else []) + self.pool

    def add_anchor(self, agent: Agent):
        """Freeze ``agent`` as it is now as a permanent pool member (``pool_anchor``)."""
        snap = Agent(agent.hidden, agent.head_hidden, agent.obs_size,
                     agent.critic_hidden).to(self.args.device)
        snap.load_state_dict(agent.state_dict())
        snap.eval()
        self.anchor = self.next_id
        self.agents[self.anchor] = snap
        self.next_id += 1

    def reseed_bots(self, seed: int, iteration: int):
        self.bots = [make_bot(name, seed=int(np.random.default_rng([seed, iteration, k])
                                             .integers(2**31)), **pool_bot_options(self.args, name))
                     for k, name in enumerate(self.args.pool_bots)]

    def add_snapshot(self, agent: Agent):
        if self.args.pool_size <= 0:
            return
        snap = Agent(agent.hidden, agent.head_hidden, agent.obs_size,
                     agent.critic_hidden).to(self.args.device)
        snap.load_state_dict(agent.state_dict())
        snap.eval()
        self.agents[self.next_id] = snap
        self.pool.append(self.next_id)
        self.next_id += 1
        while len(self.pool) > self.args.pool_size:
            self.pool.pop(0)
        in_use = set(self.ctrl[self.ctrl > 0].tolist()) | set(self.members())
        for k in list(self.agents):
            if k not in in_use:
                del self.agents[k]

    def assign(self, i: int, rng: np.random.Generator):
        """Choose the players of a new episode in env ``i``."""
        self.ctrl[i] = 0
        a = self.args
        members = self.members()
        have_bots, have_snaps = len(a.pool_bots) > 0, len(members) > 0
        if not (have_bots or have_snaps) or rng.random() >= a.opponent_share:
            return
        use_bot = have_bots and (not have_snaps or rng.random() < a.pool_bot_share)
        who = (-(int(rng.integers(len(a.pool_bots))) + 1) if use_bot
               else members[int(rng.integers(len(members)))])
        team = int(rng.integers(2))
        self.ctrl[i, team] = who
        self.ctrl[i, team + 2] = who

    def name(self, who: int) -> str:
        if who == self.anchor and who > 0:
            return "warmstart"
        return "self" if who == 0 else (self.args.pool_bots[-who - 1] if who < 0 else "snapshot")

    def state_dict(self) -> dict:
        return {"ctrl": torch.as_tensor(self.ctrl), "pool": list(self.pool),
                "next_id": self.next_id, "anchor": self.anchor,
                "agents": {str(k): v.state_dict() for k, v in self.agents.items()}}

    def load_state_dict(self, d: dict, args: Args):
        self.ctrl = d["ctrl"].numpy().copy()
        self.pool = list(d["pool"])
        self.next_id = int(d["next_id"])
        self.anchor = int(d.get("anchor", 0))
        self.agents = {}
        for k, sd in d["agents"].items():
            a = Agent(args.hidden, args.head_hidden, critic_hidden=args.critic_hidden).to(args.device)
            a.load_state_dict(sd)
            a.eval()
            self.agents[int(k)] = a


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
    ar = np.arange(n_env)
    privileged = agent.critic is not None
    for _ in range(args.num_steps):
        seat_np = seat.numpy()
        who = opp.ctrl[ar, seat_np]
        actions = np.zeros(n_env, np.int64)
        learn = np.flatnonzero(who == 0)
        if len(learn):
            priv = None
            with torch.no_grad():  # the action from the observation only
                a, logp = agent.act(obs[learn].to(dev), mask[learn].to(dev))
            if privileged:  # what the critic will read (values: after the rollout, batched)
                priv = privileged_features(env_hands(env)[learn], seat[learn]).bool()
            idx = store.add(obs[learn], mask[learn], a.cpu(), logp.cpu(), 0.0, priv)
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
                a, _, _, _ = opp.agents[int(sid)].get_action_and_value(obs[rows].to(dev),
                                                                     mask[rows].to(dev))
            actions[rows] = a.cpu().numpy()
        for i in np.flatnonzero(who < 0):
            bot = opp.bots[-who[i] - 1]
            actions[i] = bot.act(env.get_game(int(i)).view(int(seat_np[i])))
        obs, mask, seat, rewards, dones, info = env.step(torch.as_tensor(actions))
        obs, mask, seat = obs.cpu(), mask.cpu(), seat.cpu()  # storage and bots work on the CPU
        r_np, d_np = rewards.cpu().numpy(), dones.cpu().numpy()
        for i, hr, _bags in info.get("hands", ()):
            stats["hands"].append((hr, opp.ctrl[i].copy()))
            bag_fix = 0.0  # team 0's reward change when bags cost ``bag_cost`` points each
            if args.bag_cost > 0:
                bag_fix = args.reward_scale * (
                    (team_points(hr.teams[0], args.bag_cost) - hr.teams[0].hand_points)
                    - (team_points(hr.teams[1], args.bag_cost) - hr.teams[1].hand_points))
            for s in range(4):
                if last[i, s] >= 0:
                    store.reward[last[i, s]] += r_np[i, s] + (bag_fix if s % 2 == 0 else -bag_fix)
        for i in np.flatnonzero(d_np):
            for s in range(4):
                if last[i, s] >= 0:
                    store.done[last[i, s]] = True
                    last[i, s] = -1
            opp.assign(int(i), rng)
    # Values of every stored decision in one batched pass (the network is fixed during the
    # rollout, so this equals evaluating them one step at a time).
    with torch.no_grad():
        for s0 in range(0, store.n, 8192):
            s1 = min(store.n, s0 + 8192)
            pv = store.priv[s0:s1].to(dev).float() if privileged else None
            store.value[s0:s1] = agent.critic_value(store.obs[s0:s1].to(dev), pv).cpu().numpy()
    # Bootstrap trajectories cut by the end of the rollout with the value of the seat's view.
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
    return obs, mask, seat


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
    b_obs, b_mask = store.obs[:n].to(dev), store.mask[:n].to(dev)
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
            _, newlogp, entropy, newv = agent.get_action_and_value(b_obs[idx], b_mask[idx],
                                                                   b_act[idx])
            if b_priv is not None:
                newv = agent.critic_value(b_obs[idx], b_priv[idx])
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
                    logits, _ = agent(b_obs[idx][has])
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


# ============================================================================= logging
SLOW_BOTS = ("hard", "insane")  # PIMC search bots: tens of ms a decision

def game_metrics(hands, opp: Opponents) -> dict:
    """Training-game figures of the learner from ``(HandResult, ctrl row)`` pairs.

    Point difference and win rate per opponent kind (bots by name, ``snapshot``) for games against
    the pool; bidding figures (``evaluate.hand_stats``) over every learner team.
    """
    out, by_opp, learner_hands = {}, {}, {0: [], 1: []}
    for hr, ctrl in hands:
        for team in (0, 1):
            if ctrl[team] == 0:
                learner_hands[team].append(hr)
                other = ctrl[1 - team]
                if other != 0:
                    d = hr.teams[team].hand_points - hr.teams[1 - team].hand_points
                    by_opp.setdefault(opp.name(int(other)), []).append(d)
    for name, ds in by_opp.items():
        out[f"train/diff_vs_{name}"] = float(np.mean(ds))
        out[f"train/win_rate_vs_{name}"] = float(np.mean([(d > 0) + 0.5 * (d == 0) for d in ds]))
    stats = [hand_stats(learner_hands[t], t) for t in (0, 1) if learner_hands[t]]
    if stats:
        for k in stats[0]:
            vals = [s[k] for s in stats if not math.isnan(s[k])]
            if vals:
                out[f"game/{k}"] = float(np.mean(vals))
    return out


def run_eval(agent: Agent, args: Args, deals: int, seed: int) -> list[dict]:
    """Duplicate-deal evaluation (greedy policy) against each of ``args.eval_opponents``:
    ``deals`` duplicate deals each, ``args.slow_eval_deals`` against the search bots; on the Ray
    cluster ``args.ray_address`` when set (``duplicate_match``)."""
    agent.eval()
    net = NetPlayer(agent, args.device, greedy=True)
    rows = [duplicate_match(net, o, args.slow_eval_deals if o in SLOW_BOTS else deals, seed=seed,
                            rules=Rules.preset(args.rules), ray_address=args.ray_address or None)
            for o in args.eval_opponents]
    agent.train()
    return rows


def write_curve(eval_results: list[dict], ckpt_dir: str, log=print) -> None:
    """Redraw ``<ckpt_dir>/curve.png`` (``training.plot``); a plotting failure is logged, never
    fatal (the run's work is in the checkpoints)."""
    try:
        from .plot import plot_curve
        plot_curve(eval_results, os.path.join(ckpt_dir, "curve.png"))
    except Exception as e:  # noqa: BLE001 - matplotlib missing or a drawing error
        log(f"learning curve not drawn: {type(e).__name__}: {e}")


# ============================================================================= checkpoint
def rng_states() -> dict:
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


# ============================================================================= distillation stage
def distill_round_paths(out: str, rounds: int) -> list[str]:
    """The checkpoint each round of a ``rounds``-round distillation stage writes: ``out`` itself
    for one round; ``<out without .pt>_round1.pt`` ... ``_roundK.pt`` for more (``out`` then
    receives a copy of the last), so that a stage resumed with more rounds keeps the earlier ones.
    """
    if rounds == 1:
        return [out]
    stem = os.path.splitext(out)[0]
    return [f"{stem}_round{k}.pt" for k in range(1, rounds + 1)]


def label_folder_suffix(args: Args) -> str:
    """What a round's label folder name adds for its teacher: ``""`` for ``hard`` without bid
    labels (the name of earlier versions), else ``_expert``, ``_bids48``..., so that chunks of
    another teacher are never resumed into a round."""
    return ("" if args.distill_teacher == "hard" else f"_{args.distill_teacher}") + \
        (f"_bids{args.distill_bid_samples}" if args.distill_bid_samples else "")


def distill_stage(args: Args, source: str, out: str, progress: dict, log=print,
                  save=None, writer=None) -> Agent:
    """The search-distillation stage after PPO (``args.distill_minutes`` > 0): ``args.
    distill_rounds`` rounds of ``training.distill.distill_checkpoint`` (expert iteration). Round 1
    starts from the PPO network ``source`` (``train`` writes it as ``ppo_final.pt``), widened per
    ``distill_hidden``; round k from round k-1's network, on its own fresh hands (seed
    ``args.seed + k - 1``), ``distill_minutes`` of labels each, by ``args.distill_teacher``
    (``expert``: the search on round k's own starting network, a teacher that grows), locally or
    on the Ray cluster ``args.ray_address``. Each round writes the checkpoint
    ``distill_round_paths`` names, its label chunks kept in ``<that path without .pt>_labels_itN``
    (N: the PPO iteration; plus ``label_folder_suffix``; a stopped round resumes with them);
    ``out`` ends as the last round's network. ``writer`` (a TensorBoard ``SummaryWriter``, if
    given) receives per chunk ``distill/hands``, ``distill/labels_per_second`` and
    ``distill/chunk_regret``, and per round ``distill/round_regret`` and
    ``distill/round_labels_per_second`` (step: the round). A round that already finished from the same PPO iteration (its record in
    ``progress["distill_rounds"]``, its file present) is not redone, unless a round before it was.

    Records each round's figures in ``progress["distill_rounds"]`` (a list, round 1 first) and the
    last round's in ``progress["distill"]``; calls ``save()`` (if given) after each round, so that
    a stopped run's ``latest.pt`` knows the finished rounds. Returns the final network (eval mode,
    on ``args.device``).

    Raises:
        ValueError, OSError: as ``distill_checkpoint``.
    """
    import shutil

    from spades_env.fileio import write_atomic

    from .checkpoint import build_agent
    from .distill import distill_checkpoint
    it = progress["iteration"]
    rounds = args.distill_rounds
    paths = distill_round_paths(out, rounds)
    done = progress.get("distill_rounds")
    if not isinstance(done, list):  # runs from before distill_rounds recorded one round here
        done = [progress["distill"]] if isinstance(progress.get("distill"), dict) else []
    done = [dict(d) for d in done if isinstance(d, dict)]
    stem = os.path.splitext(out)[0]

    def finished(rec, path):  # a round done from this PPO network, its file present
        return (isinstance(rec, dict) and rec.get("ppo_iteration") == it and os.path.exists(path)
                and os.path.basename(str(rec.get("checkpoint", ""))) == os.path.basename(path))

    # a stage resumed from one round to several or back: round 1 is under the other layout's name
    other = os.path.join(os.path.dirname(out), os.path.basename(
        str(done[0].get("checkpoint", "")))) if done else ""
    if other in (out, f"{stem}_round1.pt") and other != paths[0] and finished(done[0], other):
        with open(other, "rb") as f:
            write_atomic(paths[0], f.read())
        done = [dict(done[0], checkpoint=paths[0])]
        log(f"round 1 of the stage is the earlier stage's {other} (copied to {paths[0]})")
    records, redo, src = [], False, source
    for k, path in enumerate(paths, start=1):
        rec = done[k - 1] if k - 1 < len(done) else None
        if not redo and finished(rec, path):
            log(f"search distillation already done: round {k}/{rounds} ({path}, from the PPO "
                f"network of iteration {it}); the distill_* settings apply to a new round only")
        else:
            # one label folder per round and PPO network: chunks of another network never mix in
            suffix = label_folder_suffix(args)
            labels = os.path.splitext(path)[0] + f"_labels_it{it}{suffix}"
            # the label folders of the rounds after this one (and this one's, when the round before
            # was just redone) were played by networks that this round replaces: check_chunk would
            # refuse their chunks, so they go
            stale = [f"{stem}_round{j}_labels_it{it}{suffix}" for j in range(k + 1, 101)]
            stale += [labels] if redo else []
            for folder in stale:
                if os.path.isdir(folder):
                    shutil.rmtree(folder)
                    log(f"removed {folder}: label chunks of an earlier network")
            redo = True  # every later round starts from this round's new network
            where = (f"on the Ray cluster {args.ray_address}" if args.ray_address else
                     f"{args.distill_workers} workers")
            log(f"search distillation: round {k}/{rounds} from {src}: {args.distill_minutes:g} "
                f"min of labels by {args.distill_teacher} ({args.distill_samples} deals per card"
                + (f", {args.distill_bid_samples} per bid" if args.distill_bid_samples else "")
                + f", {where}), then {args.distill_epochs} passes")
            first = k == 1
            on_chunk = None
            if writer is not None:
                def on_chunk(st, _n=[0]):  # noqa: B006 (the chunk counter of this round)
                    _n[0] += 1
                    step = 1000 * k + _n[0]
                    writer.add_scalar("distill/hands", st["round_hands"], step)
                    writer.add_scalar("distill/labels_per_second", st["labels_per_second"], step)
                    if not math.isnan(st["regret"]):
                        writer.add_scalar("distill/chunk_regret", st["regret"], step)
            r = distill_checkpoint(src, path, labels=labels, minutes=args.distill_minutes,
                                   seed=args.seed + k - 1, chunks=args.distill_chunks,
                                   chunk_hands=args.distill_chunk_hands,
                                   samples=args.distill_samples, workers=args.distill_workers,
                                   epochs=args.distill_epochs, bid_deals=args.distill_bid_deals,
                                   hidden=(args.distill_hidden or None) if first else None,
                                   head_hidden=(args.distill_head_hidden or None) if first
                                   else None, log=log, teacher=args.distill_teacher,
                                   bid_samples=args.distill_bid_samples,
                                   ray_address=args.ray_address or None, on_chunk=on_chunk)
            rec = dict(r, ppo_iteration=it, round=k)
            log(f"distilled {path}: {r['hands']} hands labelled in {r['label_minutes']:.1f} min "
                f"({r['labels_per_second']:.1f} labels/s; the starting policy's regret "
                f"{r['regret']:.2f} points per card), {r['minutes']:.1f} min in all")
            if writer is not None:
                for tag, v in (("distill/round_regret", r["regret"]),
                               ("distill/round_labels_per_second", r["labels_per_second"]),
                               ("distill/round_hands", r["hands"])):
                    if not math.isnan(v):
                        writer.add_scalar(tag, v, k)
        records.append(rec)
        progress["distill_rounds"] = list(records)  # fewer rounds than before drop the others
        progress["distill"] = rec
        if save is not None and redo:  # a kept round changes nothing worth a rewrite
            save()
        src = path
    if paths[-1] != out:
        with open(paths[-1], "rb") as f:  # the final network under the stage's one name
            write_atomic(out, f.read())
    net = build_agent(load_checkpoint(out), args.device)
    return net.eval()


# ============================================================================= train
def train(args: Args, resume: str | None = None, log=print, overwrite: bool = False) -> dict:
    """Run warm start (optional) and PPO per ``args``; returns the final evaluation and paths.

    Args:
        args: the config.
        resume: path of a ``latest.pt`` to continue exactly (its config is used; where ``args``
            differs, ``training.config.resume_args`` applies the safe changes and refuses others).
        overwrite: replace an earlier run of the same name (``training.checkpoint.open_run``;
            default: take a free name ``NAME-2``...).
    Returns:
        ``{"eval": [rows], "checkpoint": path, "decisions": int, "iterations": int, "seconds"}``.
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
    run = open_run(args, resume, data, overwrite=overwrite, log=log)
    args = run.args
    seed_everything(args.seed, args.torch_threads)
    run_dir, ckpt_dir = run.run_dir, run.ckpt_dir
    writer = SummaryWriter(run_dir)
    writer.add_text("config", "\n".join(f"    {k}: {v}" for k, v in to_dict(args).items()))

    env = make_env(args, seed=int(np.random.default_rng([args.seed, 1]).integers(2**62)))
    agent = make_agent(args)
    opt = torch.optim.Adam(agent.parameters(), lr=args.lr, eps=1e-5)
    opp = Opponents(args, env.num_envs)
    progress = {"iteration": 0, "decisions": 0, "stage": "start", "seconds": 0.0}
    eval_results: list[dict] = []
    t_start = time.time()

    if data is not None:
        agent.load_state_dict(data["model"])
        opt.load_state_dict(data["optimizer"])
        progress = dict(data["progress"])
        eval_results = list(data["eval"])
        if data["env"] is not None:
            env.load_state_dict(data["env"])
        opp.load_state_dict(data["pool"], args)
        cur = tuple(x.cpu() for x in env.current())
        log(f"resumed {resume}: iteration {progress['iteration']}, "
            f"{progress['decisions']} decisions")
    else:
        started = None  # what the network comes from: "init_from", "warm start" or nothing
        if args.init_from:  # a given network instead of the warm-start stage
            # its shape was checked against the config by check_ready (open_run), before any work
            init = load_checkpoint(args.init_from, map_location=args.device)
            agent.load_state_dict(init["model"])
            log(f"network initialised from {args.init_from}")
            started = "init_from"
        # ---- warm start by behaviour cloning
        elif args.bc_teacher and args.bc_hands > 0:
            t0 = time.time()
            progress["warmstart"] = warm_start(agent, args, writer, log)
            progress["warmstart_seconds"] = time.time() - t0
            # the warm-start network on its own (stripped), to measure what PPO adds to it
            save_checkpoint(os.path.join(ckpt_dir, "warmstart.pt"),
                            make_payload(args, agent, opt, progress, env, opp, eval_results,
                                         full=False))
            started = "warm start"
        if started and args.eval_every > 0 and args.eval_opponents:
            rows = run_eval(agent, args, args.eval_deals, seed=args.seed)
            eval_results.append({"iteration": 0, "decisions": 0, "deals": args.eval_deals,
                                 "rows": rows, "after": started,
                                 "seconds": time.time() - t_start})
            write_curve(eval_results, ckpt_dir, log)
            for r in rows:
                writer.add_scalar(f"eval/diff_vs_{r['opponent']}", r["diff"], 0)
                writer.add_scalar(f"eval/win_rate_vs_{r['opponent']}", r["win_rate"], 0)
            log(f"eval after {started}: points/hand " +
                " ".join(f"{r['opponent']} {r['diff']:+.1f}" for r in rows))
            progress["best_score"] = float(np.mean([r["diff"] for r in rows]))
            progress["best_iteration"] = 0
            save_checkpoint(os.path.join(ckpt_dir, "best.pt"),
                            make_payload(args, agent, opt, progress, env, opp, eval_results,
                                         full=False))
        progress["stage"] = "ppo"
        if args.pool_anchor:
            opp.add_anchor(agent)
        cur = tuple(x.cpu() for x in env.reset())
        rng0 = np.random.default_rng([args.seed, 0, 5])
        for i in range(env.num_envs):
            opp.assign(i, rng0)
        save_checkpoint(os.path.join(ckpt_dir, "latest.pt"),
                        make_payload(args, agent, opt, progress, env, opp, eval_results))

    batch_cap = env.num_envs * args.num_steps
    store = Storage(batch_cap, args.device)
    bar = None
    if args.progress:
        from tqdm import tqdm
        bar = tqdm(total=args.total_decisions, initial=min(progress["decisions"],
                                                           args.total_decisions),
                   unit="dec", dynamic_ncols=True, smoothing=0.1)
    t_ppo = time.time()
    ppo_before = float(progress.get("ppo_seconds", 0.0))  # PPO time of the run before a resume
    stop_reason = "total_decisions"
    it_first = progress["iteration"]
    while progress["decisions"] < args.total_decisions:
        progress["ppo_seconds"] = ppo_before + time.time() - t_ppo
        if args.max_minutes > 0 and progress["ppo_seconds"] > 60 * args.max_minutes:
            stop_reason = "max_minutes"
            break
        it = progress["iteration"]
        s = iteration_seed(args.seed, it)
        torch.manual_seed(s)
        rng = np.random.default_rng(s)
        gen = torch.Generator().manual_seed(s)
        opp.reseed_bots(args.seed, it)
        if args.anneal_lr:
            frac = max(0.0, 1.0 - progress["decisions"] / args.total_decisions)
            opt.param_groups[0]["lr"] = frac * args.lr

        # ---- rollout
        t0 = time.time()
        stats = {"hands": []}
        agent.eval()
        coef = teacher_coef(args, progress["decisions"])
        teacher = make_bot(args.bc_teacher, seed=s) if coef > 0 else None
        cur = rollout(env, cur, agent, opp, store, args, rng, stats,
                      teacher if coef > 0 else None)
        agent.train()
        t_roll = time.time() - t0
        n = store.n
        # ---- GAE + update
        if n > 0:
            adv, ret = compute_gae(store, args.gamma, args.gae_lambda)
            figs = ppo_update(agent, opt, store, adv, ret, args, gen, coef)
        else:
            figs = {}
        t_it = time.time() - t0
        progress["iteration"] = it + 1
        progress["decisions"] += n
        step = progress["decisions"]

        # ---- logging
        for k, v in figs.items():
            tag = "losses/" + k if k != "explained_variance" else "losses/explained_variance"
            writer.add_scalar(tag, v, step)
        writer.add_scalar("charts/learning_rate", opt.param_groups[0]["lr"], step)
        writer.add_scalar("charts/teacher_coef", coef, step)
        writer.add_scalar("charts/decisions_per_s", env.num_envs * args.num_steps / t_it, step)
        writer.add_scalar("charts/learner_decisions_per_s", n / t_it, step)
        writer.add_scalar("charts/rollout_share_of_time", t_roll / t_it, step)
        gm = game_metrics(stats["hands"], opp)
        for k, v in gm.items():
            if not math.isnan(v):
                writer.add_scalar(k, v, step)
        if (it + 1) % args.pool_every == 0:
            opp.add_snapshot(agent)
        if bar is not None:
            bar.update(min(n, max(0, args.total_decisions - bar.n)))
            post = {"it": it + 1, "dec/s": f"{env.num_envs * args.num_steps / t_it:.0f}",
                    "ent": f"{figs.get('entropy', float('nan')):.2f}",
                    "kl": f"{figs.get('approx_kl', float('nan')):.3f}"}
            if "train/diff_vs_medium" in gm:
                post["vs_med"] = f"{gm['train/diff_vs_medium']:+.0f}"
            if eval_results:
                for r in eval_results[-1]["rows"]:
                    post[f"ev_{r['opponent'][:4]}"] = f"{r['diff']:+.0f}"
            bar.set_postfix(post, refresh=False)

        # ---- evaluation
        if args.eval_every > 0 and (it + 1) % args.eval_every == 0:
            rows = run_eval(agent, args, args.eval_deals, seed=args.seed + it + 1)
            eval_results.append({"iteration": it + 1, "decisions": step, "deals": args.eval_deals,
                                 "rows": rows, "seconds": progress.get("seconds", 0.0)
                                 + time.time() - t_start})
            write_curve(eval_results, ckpt_dir, log)
            for r in rows:
                writer.add_scalar(f"eval/diff_vs_{r['opponent']}", r["diff"], step)
                writer.add_scalar(f"eval/win_rate_vs_{r['opponent']}", r["win_rate"], step)
            score = float(np.mean([r["diff"] for r in rows]))
            best = progress.get("best_score")
            if best is None or score > best:
                progress["best_score"] = score
                progress["best_iteration"] = it + 1
                save_checkpoint(os.path.join(ckpt_dir, "best.pt"),
                                make_payload(args, agent, opt, progress, env, opp, eval_results,
                                             full=False))
            msg = " ".join(f"{r['opponent']} {r['diff']:+.1f}" for r in rows)
            (bar.write if bar is not None else log)(
                f"eval @ it {it + 1} ({step} decisions): points/hand {msg}")

        # ---- checkpoint
        if (it + 1) % args.save_every == 0:
            progress["seconds"] = progress.get("seconds", 0.0) + (time.time() - t_start)
            t_start = time.time()
            save_checkpoint(os.path.join(ckpt_dir, "latest.pt"),
                            make_payload(args, agent, opt, progress, env, opp, eval_results))
        if args.stop_after_iterations and progress["iteration"] - it_first \
                >= args.stop_after_iterations:
            stop_reason = "stop_after_iterations"
            break
    if bar is not None:
        bar.close()
    if stop_reason == "stop_after_iterations":  # behave like a killed run: no final save
        writer.close()
        run.close()
        return {"eval": [], "checkpoint": os.path.join(ckpt_dir, "latest.pt"),
                "decisions": progress["decisions"], "iterations": progress["iteration"],
                "seconds": progress.get("seconds", 0.0)}

    # ---- final checkpoint first (nothing after it can lose the run's work), then evaluation
    progress["seconds"] = progress.get("seconds", 0.0) + (time.time() - t_start)
    t_start = time.time()
    progress["stop_reason"] = stop_reason
    path = os.path.join(ckpt_dir, "latest.pt")
    save_checkpoint(path, make_payload(args, agent, opt, progress, env, opp, eval_results))
    final_agent, final_path, what = agent, path, "PPO"
    if args.distill_minutes > 0:
        # the labels' source: the PPO network, written once, so that the label chunks of a
        # stopped stage still match it (their files record its SHA-256) after latest.pt is rewritten
        # (rewritten when PPO has gone on since: a resume with more total_decisions)
        source = os.path.join(ckpt_dir, "ppo_final.pt")
        if not (os.path.exists(source) and load_checkpoint(source)["progress"].get("iteration")
                == progress["iteration"]):
            save_checkpoint(source, make_payload(args, agent, opt, progress, env, opp,
                                                 eval_results, full=False))
        final_path = os.path.join(ckpt_dir, "distilled.pt")
        def save_progress():  # after each round: a stopped stage keeps its finished rounds
            nonlocal t_start
            progress["seconds"] = progress.get("seconds", 0.0) + (time.time() - t_start)
            t_start = time.time()
            save_checkpoint(path, make_payload(args, agent, opt, progress, env, opp,
                                               eval_results))
        final_agent = distill_stage(args, source, final_path, progress, log, save_progress,
                                    writer)
        progress["seconds"] = progress.get("seconds", 0.0) + (time.time() - t_start)
        t_start = time.time()
        save_checkpoint(path, make_payload(args, agent, opt, progress, env, opp, eval_results))
        what = "distilled"
    final_rows = []
    if args.final_eval_deals > 0 and args.eval_opponents:
        final_rows = run_eval(final_agent, args, args.final_eval_deals, seed=args.seed + 10_000)
        eval_results.append({"iteration": progress["iteration"], "decisions": progress["decisions"],
                             "deals": args.final_eval_deals, "rows": final_rows, "final": True,
                             "network": what,
                             "seconds": progress.get("seconds", 0.0) + time.time() - t_start})
        write_curve(eval_results, ckpt_dir, log)
        for r in final_rows:
            writer.add_scalar(f"eval/final_diff_vs_{r['opponent']}", r["diff"],
                              progress["decisions"])
        log(format_table(final_rows, f"final evaluation of the {what} network after "
                                     f"{progress['iteration']} iterations, "
                                     f"{progress['decisions']} learner decisions "
                                     f"({args.final_eval_deals} duplicate deals per opponent):"))
    progress["seconds"] = progress.get("seconds", 0.0) + (time.time() - t_start)
    progress["stop_reason"] = stop_reason
    save_checkpoint(path, make_payload(args, agent, opt, progress, env, opp, eval_results))
    writer.close()
    run.close()
    return {"eval": final_rows, "checkpoint": final_path, "decisions": progress["decisions"],
            "iterations": progress["iteration"], "seconds": progress["seconds"]}


__all__ = ["train", "seed_everything", "collect_teacher_data", "collect_teacher_bids",
           "warm_start", "behaviour_clone", "Storage",
           "Opponents", "rollout", "compute_gae", "ppo_update", "game_metrics", "run_eval"]
