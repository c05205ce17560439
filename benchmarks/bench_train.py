"""Training throughput on CPU: decisions per second of PPO, environment + network + update.

    python benchmarks/bench_train.py [--config configs/default.yaml] [--iters 4] [--repeats 3]

Compares, side by side in one run, two training setups on the same machine:

- ``old``: the training setup of spades_env 0.1.0 (trunk ``[512, 256]`` with 128-wide heads and no privileged
  critic, 4 update epochs, 1 torch thread, the scalar adapter ``training.envs.ScalarBatchEnv``,
  64 games);
- ``new``: the config given (default ``configs/default.yaml``) as it trains: its network and
  privileged critic, update epochs, torch threads, environment backend and game count.

Both run the config's opponent mix (pool bots and snapshots, ``opponent_share``) exactly as
``training.ppo_selfplay.train`` does. Each repeat runs ``--iters`` PPO iterations (rollout + GAE +
update) per setup, interleaved (old, new, old, new, ...) so machine noise hits both alike; printed
are medians over repeats of

- rollout decisions/s: learner decisions per second of the acting loop only;
- training decisions/s: learner decisions per second including GAE and the PPO update, the rate at
  which a run consumes its ``total_decisions`` budget;

and the ratio new / old of the training rate (the target is at least 5 on 2 cores).
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import torch

from spades_env.training import config as cfg
from spades_env.training.envs import make_env
from spades_env.training.opponents import Opponents
from spades_env.training.ppo_selfplay import Storage, compute_gae, make_agent, ppo_update, rollout

OLD = {"hidden": [512, 256], "head_hidden": 128, "critic_hidden": [], "update_epochs": 4,
       "torch_threads": 1, "vector_env": "scalar", "num_envs": 64, "random_start": 0.5}


def run(args, iters: int) -> tuple[float, float]:
    """``iters`` PPO iterations of ``args``; returns (rollout dec/s, training dec/s)."""
    torch.set_num_threads(args.torch_threads)
    env = make_env(args, seed=0)
    torch.manual_seed(0)
    agent = make_agent(args)
    opt = torch.optim.Adam(agent.parameters(), lr=args.lr, eps=1e-5)
    opp = Opponents(args, env.num_envs)
    if args.pool_anchor:
        opp.add_anchor(agent)
    rng = np.random.default_rng(0)
    for i in range(env.num_envs):
        opp.assign(i, rng)
    store = Storage(env.num_envs * args.num_steps, args.device)
    cur = tuple(x.cpu() for x in env.reset())
    gen = torch.Generator().manual_seed(0)
    t_roll = t_all = 0.0
    n = 0
    for i in range(iters):
        opp.reseed_bots(0, i)
        t0 = time.perf_counter()
        agent.eval()
        cur = rollout(env, cur, agent, opp, store, args, rng, {"hands": []})
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
    p.add_argument("--config", default="configs/default.yaml")
    p.add_argument("--iters", type=int, default=4, help="PPO iterations per setup and repeat")
    p.add_argument("--repeats", type=int, default=3)
    ns = p.parse_args(argv)
    new = cfg.load_yaml(ns.config)
    old = cfg.from_dict({**cfg.to_dict(new), **OLD})
    setups = {"old": old, "new": new}
    res = {k: ([], []) for k in setups}
    for _ in range(ns.repeats):
        for k, a in setups.items():
            r, t = run(a, ns.iters)
            res[k][0].append(r)
            res[k][1].append(t)
    print(f"PPO training throughput, {ns.config}; medians of {ns.repeats} repeats of "
          f"{ns.iters} iterations")
    print(f"{'setup':5s} {'network':22s} {'critic':12s} {'epochs':>6s} {'threads':>7s} "
          f"{'env':>6s} {'games':>5s} {'rollout dec/s':>14s} {'training dec/s':>15s}")
    for k, a in setups.items():
        env = "vector" if a.vector_env == "vector" else "scalar"
        print(f"{k:5s} {str(a.hidden) + '+' + str(a.head_hidden):22s} "
              f"{str(a.critic_hidden or '-'):12s} {a.update_epochs:6d} {a.torch_threads:7d} "
              f"{env:>6s} {a.num_envs:5d} {statistics.median(res[k][0]):14.0f} "
              f"{statistics.median(res[k][1]):15.0f}")
    ratio = statistics.median(res["new"][1]) / statistics.median(res["old"][1])
    print(f"training throughput ratio new / old: {ratio:.1f}x")


if __name__ == "__main__":
    main()
