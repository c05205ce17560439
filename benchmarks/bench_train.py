"""Training throughput on CPU: decisions per second of self-play PPO (environment + network).

    python benchmarks/bench_train.py [--envs 64] [--iters 3] [--repeats 3] [--device cpu]

For each environment backend (the scalar adapter ``training.envs.ScalarBatchEnv`` and, when present,
``spades_env.vector.SpadesVectorEnv``) it runs a few PPO iterations of the default network with
all four seats played by the learner (no scripted opponents) and prints, as medians over repeats:

- rollout decisions/s: environment steps + policy forward passes (sampling), the acting loop;
- training decisions/s: the same plus GAE and the PPO update (4 epochs, 4 minibatches), i.e. the
  rate at which a run consumes decisions.

Runs are interleaved (backend A, backend B, A, B, ...) so machine noise hits both alike; ratios are
printed against the scalar backend.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import torch

from training import config as cfg
from training.envs import ScalarBatchEnv
from training.ppo_selfplay import Opponents, Storage, compute_gae, ppo_update, rollout
from training.model import Agent


def make(backend: str, n: int, device: str):
    if backend == "scalar":
        return ScalarBatchEnv(n, seed=0)
    from spades_env.vector import SpadesVectorEnv
    return SpadesVectorEnv(n, device=device, seed=0, hands_per_episode=1)


def run(backend: str, args, iters: int) -> tuple[float, float]:
    env = make(backend, args.num_envs, args.device)
    torch.manual_seed(0)
    agent = Agent(args.hidden, args.head_hidden).to(args.device)
    opt = torch.optim.Adam(agent.parameters(), lr=args.lr, eps=1e-5)
    opp = Opponents(args, env.num_envs)
    store = Storage(env.num_envs * args.num_steps, args.device)
    cur = tuple(x.cpu() for x in env.reset())
    gen = torch.Generator().manual_seed(0)
    t_roll = t_all = 0.0
    n = 0
    for i in range(iters):
        t0 = time.perf_counter()
        agent.eval()
        cur = rollout(env, cur, agent, opp, store, args, np.random.default_rng(i), {"hands": []})
        t1 = time.perf_counter()
        agent.train()
        adv, ret = compute_gae(store, args.gamma, args.gae_lambda)
        ppo_update(agent, opt, store, adv, ret, args, gen)
        t2 = time.perf_counter()
        t_roll += t1 - t0
        t_all += t2 - t0
        n += store.n
    return n / t_roll, n / t_all


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--envs", type=int, default=64)
    p.add_argument("--iters", type=int, default=3, help="PPO iterations (56 steps each) per run")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--device", default="cpu")
    p.add_argument("--threads", type=int, default=1)
    ns = p.parse_args(argv)
    torch.set_num_threads(ns.threads)
    args = cfg.from_dict({"num_envs": ns.envs, "num_steps": 56, "opponent_share": 0.0,
                          "device": ns.device})
    backends = ["scalar"]
    try:
        import spades_env.vector  # noqa: F401
        backends.append("vector")
    except ImportError:
        pass
    res = {b: ([], []) for b in backends}
    for _ in range(ns.repeats):
        for b in backends:
            r, a = run(b, args, ns.iters)
            res[b][0].append(r)
            res[b][1].append(a)
    print(f"self-play PPO, {ns.envs} games, network {args.hidden}+{args.head_hidden}, "
          f"device {ns.device}, {ns.threads} torch thread(s); medians of {ns.repeats} repeats")
    print(f"{'backend':8s} {'rollout dec/s':>14s} {'training dec/s':>15s} {'ratio vs scalar':>16s}")
    base = statistics.median(res["scalar"][1])
    for b in backends:
        r, a = statistics.median(res[b][0]), statistics.median(res[b][1])
        print(f"{b:8s} {r:14.0f} {a:15.0f} {a / base:16.2f}")


if __name__ == "__main__":
    main()
