"""A masked actor-critic on Gymnasium vector envs (``gym.make_vec``), then an arena measurement.

Run (``pip install -e '.[torch]'``: gymnasium and torch)::

    python examples/gymnasium_vector.py             # 400 updates, ~5 min on 2 cores
    python examples/gymnasium_vector.py --smoke     # ~1 min, the test suite's

What it shows: ``gym.make_vec("SpadesHand-v1", num_envs=8, vector_kwargs={"autoreset_mode":
AutoresetMode.SAME_STEP})``: in the same-step autoreset mode every observation returned is a
decision of a live episode, so ``infos["action_mask"]`` always has a legal action (the finished
episode's last observation is in ``infos["final_obs"]``). In the default next-step mode, a row
whose episode just ended has an all-zero mask for one step (its action is ignored); use
``spades_env.integrations.vector_masks(masks, terminated | truncated)`` there (``--autoreset
next``). The learner (seat 0; bots in the other seats) is a small actor-critic trained with
advantage actor-critic updates; masked logits are set to the dtype's minimum. Then it plays
duplicate hands against ``random`` in the arena through ``PolicyPlayer``. Expected after
``--smoke``: the learner beats ``random`` (95% interval of the point difference per hand above
0) and it also beats its own untrained start head to head (``--init-hands`` duplicate pairs:
an untrained policy that happens never to bid Nil can beat ``random`` too, so this is the
check that training did it).
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
import time

import gymnasium as gym
import numpy as np
import torch
from gymnasium.vector import AutoresetMode
from torch import nn

import spades_env  # noqa: F401  (registers the Gymnasium ids)
from spades_env.arena import jsonable
from spades_env.integrations import PolicyPlayer, add_measure_args, measure_learner, vector_masks


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--smoke", action="store_true", help="short run (test suite): 100 updates")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--updates", type=int, default=400)
    p.add_argument("--num-envs", type=int, default=8)
    p.add_argument("--steps", type=int, default=64, help="steps per env per update")
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--opponents", default="random")
    p.add_argument("--autoreset", choices=("same", "next"), default="same")
    add_measure_args(p)  # --eval-hands, --vs, --init-hands, --untrained, --json
    args = p.parse_args(argv)
    if args.smoke:
        args.updates = 100
    return args


class ActorCritic(nn.Module):
    """obs (B, OBS_SIZE) float32 -> masked logits (B, 68), value (B,)."""

    def __init__(self, obs_dim: int, n_actions: int, hidden: int = 128):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(obs_dim, hidden), nn.ReLU(),
                                  nn.Linear(hidden, hidden), nn.ReLU())
        self.pi = nn.Linear(hidden, n_actions)
        self.v = nn.Linear(hidden, 1)

    def forward(self, obs, mask):
        assert bool(mask.any(dim=1).all()), "every row needs a legal action"
        h = self.body(obs)
        logits = self.pi(h).masked_fill(~mask, torch.finfo(torch.float32).min)
        return logits, self.v(h).squeeze(-1)


def main(argv=None) -> int:
    args = parse_args(argv)
    torch.manual_seed(args.seed)
    np.random.seed(args.seed)
    torch.set_num_threads(1)
    mode = AutoresetMode.SAME_STEP if args.autoreset == "same" else AutoresetMode.NEXT_STEP
    # ---------------------------------------------------------------- envs
    envs = gym.make_vec("SpadesHand-v1", num_envs=args.num_envs, vectorization_mode="sync",
                        vector_kwargs={"autoreset_mode": mode},
                        partner=args.opponents, opponents=args.opponents)
    n_act = envs.single_action_space.n
    net = ActorCritic(envs.single_observation_space.shape[0], n_act)
    init_net = copy.deepcopy(net)  # the untrained start, for the head-to-head after training
    opt = torch.optim.Adam(net.parameters(), lr=args.lr)
    obs, infos = envs.reset(seed=args.seed)
    masks = infos["action_mask"].astype(bool)
    done = np.zeros(args.num_envs, dtype=bool)
    t0 = time.perf_counter()
    returns = []
    for update in range(0 if args.untrained else args.updates):
        # ------------------------------------------------------------ rollout
        buf = {k: [] for k in ("obs", "mask", "act", "rew", "done", "valid")}
        for _ in range(args.steps):
            # next-step mode: a row that just ended has no legal action; its action is ignored
            valid = ~done if mode == AutoresetMode.NEXT_STEP else np.ones_like(done)
            m = vector_masks(masks, done) if mode == AutoresetMode.NEXT_STEP else masks
            with torch.no_grad():
                logits, _ = net(torch.as_tensor(obs), torch.as_tensor(m))
                act = torch.distributions.Categorical(logits=logits).sample().numpy()
            obs2, rew, term, trunc, infos = envs.step(act)
            for k, v in (("obs", obs), ("mask", m), ("act", act), ("rew", rew),
                         ("done", term | trunc), ("valid", valid)):
                buf[k].append(v)
            returns.extend(rew[term | trunc].tolist())
            obs, done = obs2, term | trunc
            masks = infos["action_mask"].astype(bool)
        # ------------------------------------------------------------ returns (gamma = 1)
        o = torch.as_tensor(np.stack(buf["obs"]))
        mk = torch.as_tensor(np.stack(buf["mask"]))
        a = torch.as_tensor(np.stack(buf["act"]))
        r = np.stack(buf["rew"]).astype(np.float32)
        d = np.stack(buf["done"])
        valid = torch.as_tensor(np.stack(buf["valid"]))
        with torch.no_grad():
            _, last_v = net(torch.as_tensor(obs), torch.as_tensor(vector_masks(masks, done)))
        ret = np.zeros_like(r)
        nxt = last_v.numpy() * ~done
        for t in range(args.steps - 1, -1, -1):
            nxt = r[t] + nxt * ~d[t]
            ret[t] = nxt
        # ------------------------------------------------------------ update
        T, N = a.shape
        logits, v = net(o.reshape(T * N, -1), mk.reshape(T * N, -1))
        dist = torch.distributions.Categorical(logits=logits)
        ret_t = torch.as_tensor(ret).reshape(-1)
        w = valid.reshape(-1).float()
        adv = (ret_t - v).detach()
        loss = (-(dist.log_prob(a.reshape(-1)) * adv * w).sum()
                + 0.5 * (((ret_t - v) ** 2) * w).sum()
                - 0.01 * (dist.entropy() * w).sum()) / w.sum()
        opt.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(net.parameters(), 0.5)
        opt.step()
        if (update + 1) % 20 == 0:
            print(f"update {update + 1}: mean hand reward (last 200 hands) "
                  f"{np.mean(returns[-200:]):+.3f}", flush=True)
    train_s = time.perf_counter() - t0
    print(f"trained {args.updates} updates in {train_s:.1f} s")

    # ---------------------------------------------------------------- measure in the arena
    def greedy(model):
        def policy(obs, mask):
            with torch.no_grad():
                logits, _ = model(torch.as_tensor(obs)[None],
                                  torch.as_tensor(mask.astype(bool))[None])
            return int(logits.argmax(dim=1))
        return policy

    learner = PolicyPlayer(greedy(net), name="vector_a2c")
    start = None if args.untrained else PolicyPlayer(greedy(init_net), name="untrained")
    result, beats, vs_init = measure_learner(learner, args.vs, args.eval_hands, args.seed, start,
                                             args.init_hands)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(jsonable({"arena": result.to_dict(), "beats": beats, "train_s": train_s,
                                "vs_init": vs_init.to_dict() if vs_init else None}), f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
