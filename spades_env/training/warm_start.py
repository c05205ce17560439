"""The warm start: the network imitates a scripted teacher before PPO.

Behaviour cloning on the teacher's own games, then DAgger rounds (Ross, Gordon and
Bagnell 2011): the network plays and the teacher labels every position it reaches. The loss is the
masked cross-entropy to the teacher's choice plus a value regression on the hand results, so PPO
starts from a sensible player instead of random play. ``warm_start`` runs the stage from a config;
``collect_teacher_*`` make the data (scalar games, or the batched engine), ``behaviour_clone``
fits it.

Every array of imitation data is a dict: ``obs`` [D, OBS_SIZE] float16, ``mask`` [D, 68] bool,
``action`` [D] int64, ``ret`` [D] float32 (NaN: no value target) and ``priv`` [D, 156] bool.
"""

from __future__ import annotations

import time

import numpy as np
import torch
from torch import nn

from spades_env import Phase, Rules, SpadesGame
from spades_env.agents.model import (PRIV_SIZE, Agent, fit_precision, privileged_features,
                                     torch_threads)
from spades_env.bots import make_bot
from spades_env.cards import NUM_ACTIONS, TEAM
from spades_env.observation import OBS_SIZE, encode

from .config import Args
from .envs import env_hands, masks_to_bool, randomize_start, seat_priv
from .teacher_records import team_points


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
                ret_l[r] = d if TEAM[p] == 0 else -d
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

    Runs on ``args.bc_threads`` torch threads (0: ``args.torch_threads``); with
    ``args.bc_precision`` bf16 (``fit_precision``; ``auto`` looks at the CPU, so a GPU fit given
    it runs in fp32) the forward passes run under ``torch.autocast`` in bfloat16 on the data's
    device (the weights, Adam and the losses stay float32).

    Returns the final epoch's ``{"loss", "accuracy", "value_loss"}`` (accuracy on the training
    data: greedy action == teacher action), and ``"precision"``, the one used. TensorBoard steps
    start at ``tag_step``.
    """
    precision = clone_precision(args)
    with torch_threads(args.bc_threads or args.torch_threads):
        out = _clone(agent, data, args, epochs, writer, log, tag_step, precision == "bf16")
    return dict(out, precision=precision)


def clone_precision(args: Args) -> str:
    """The warm start's arithmetic: ``fit_precision(args.bc_precision)``, but ``auto`` on a GPU
    is fp32 (``fit_precision`` judges the CPU)."""
    if args.bc_precision == "auto" and torch.device(args.device).type != "cpu":
        return "fp32"
    return fit_precision(args.bc_precision)


def _clone(agent: Agent, data: dict, args: Args, epochs: int, writer, log, tag_step: int,
           bf16: bool) -> dict:
    """``behaviour_clone``'s passes, on the threads it set."""
    dev = torch.device(args.device)
    cast = dict(device_type=dev.type, dtype=torch.bfloat16, enabled=bf16)
    obs = torch.as_tensor(data["obs"])  # float16, converted per minibatch
    mask = torch.as_tensor(data["mask"])
    act = torch.as_tensor(data["action"])
    ret = torch.as_tensor(data["ret"])
    priv = torch.as_tensor(data["priv"]) if agent.critic is not None else None
    n = len(act)
    opt = torch.optim.Adam(agent.parameters(), lr=args.bc_lr)
    gen = torch.Generator().manual_seed(args.seed)
    out = {}
    t0 = time.time()
    for epoch in range(epochs):
        perm = torch.randperm(n, generator=gen)
        tot, correct, vtot = 0.0, 0, 0.0
        for s in range(0, n, args.bc_batch):
            idx = perm[s:s + args.bc_batch]
            o, m, a, r = (obs[idx].to(dev).float(), mask[idx].to(dev), act[idx].to(dev),
                          ret[idx].to(dev))
            with torch.autocast(**cast):
                logits, value = agent(o)
            logits, value = agent.masked(logits.float(), m), value.float()
            ce = nn.functional.cross_entropy(logits, a)
            has = ~torch.isnan(r)
            vl = ((value[has] - r[has]) ** 2).mean() if bool(has.any()) else value.sum() * 0
            if priv is not None and bool(has.any()):  # the privileged critic learns the same
                with torch.autocast(**cast):
                    cv = agent.critic_value(o[has], priv[idx][has.cpu()].to(dev).float())
                vl = vl + ((cv.float() - r[has]) ** 2).mean()
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
        left = (time.time() - t0) / (epoch + 1) * (epochs - epoch - 1) / 60
        log(f"warm start epoch {epoch + 1}/{epochs} on {n} decisions{' in bf16' if bf16 else ''} "
            f"({left:.1f} min left): "
            f"cross-entropy {out['loss']:.3f} accuracy {out['accuracy']:.3f} value MSE "
            f"{out['value_loss']:.3f}")
    return out


def warm_start(agent: Agent, args: Args, writer=None, log=print) -> dict:
    """The warm-start stage: behaviour cloning of ``args.bc_teacher``, then DAgger rounds.

    1. ``bc_hands`` hands played by four teachers plus ``bc_bid_deals`` bidding-only deals;
       ``bc_epochs`` passes.
    2. ``bc_dagger_rounds`` times: ``bc_dagger_hands`` hands played by the current network and
       labelled by the teacher, added to the data; ``bc_dagger_epochs`` passes over all of it.

    Returns a summary dict (data size, final accuracy and losses, seconds per part).
    """
    rules = Rules.parse(args.rules)
    t0 = time.time()
    records = None
    if args.bc_records:
        from .teacher_records import load_records, replay
        rec = load_records(args.bc_records)
        records = replay(rec, args.reward_scale, args.bag_cost, where=args.bc_records)
        log(f"warm start: replayed {len(records['action'])} decisions of 4x {rec['teacher']} "
            f"from {args.bc_records} in {time.time() - t0:.0f}s")
    # with rules_mix, each rule set gets its share of the hands and deals (seeds [seed, j])
    mix = [Rules.parse(r) for r in args.rules_mix] or [rules]

    def per_rules(collect, total: int, seed: int, *rest, **kw):
        parts = []
        for j, r in enumerate(mix):
            n = total // len(mix) + (j < total % len(mix))
            s = seed if len(mix) == 1 else int(np.random.default_rng([seed, j]).integers(2**62))
            if n > 0:
                parts.append(collect(args.bc_teacher, n, s, r, *rest, **kw))
        return concat_data(*parts) if parts else None

    vec = False
    if args.random_start == 0 and mix == [Rules()] and args.vector_env != "scalar":
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
            per_rules(collect_teacher_data, args.bc_hands, args.seed, args.random_start,
                      args.reward_scale, bag_cost=args.bag_cost),
            per_rules(collect_teacher_bids, args.bc_bid_deals, args.seed, args.random_start),
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
        new = per_rules(collect_teacher_data, args.bc_dagger_hands, args.seed * 1000 + r + 1,
                        args.random_start, args.reward_scale, student=agent,
                        device=args.device, bag_cost=args.bag_cost)
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


__all__ = ["collect_teacher_data", "collect_teacher_bids", "collect_teacher_vec", "concat_data",
           "behaviour_clone", "clone_precision", "warm_start", "seat_priv"]
