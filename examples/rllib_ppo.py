"""RLlib PPO (new API stack) on multi-agent Spades: self-play or against bots, locally or on a
Ray cluster, then the arena.

Run (after ``pip install -e '.[rllib]'``)::

    python examples/rllib_ppo.py --smoke                        # vs random bots, ~2 min, the tests'
    python examples/rllib_ppo.py --bots medium --iterations 200 # seats 1 and 3 played by `medium`
    python examples/rllib_ppo.py --self-play --iterations 500   # one module plays all four seats
    # on a Ray cluster (``ray start --head`` on one machine, ``ray start --address=HEAD:6379`` on
    # the others), from the head:
    python examples/rllib_ppo.py --address auto --iterations 200  # runners: the cluster's CPUs

What it does: ``spades_env.integrations.rllib.ppo_config`` (``SpadesRLlibEnv``: observation keys
``observations``/``action_mask`` with a float mask; ``bots=`` seats bots inside the env; every
learning agent mapped to one shared module ``ActionMaskingPPOModule``), ``algo.train()`` for the
iterations, then the greedy masked policy plays duplicate hands against ``random`` (``--vs``) in
``spades_env.arena`` through ``PolicyPlayer``. With ``--address`` the sampling runs in env runners
on the cluster (by default one per cluster CPU but the driver's; ``--env-runners N`` to choose) and
the package is shipped to every node through Ray's ``runtime_env`` (``py_modules``; ``--ship-deps``
also pip-installs the base dependencies there, in a virtual environment Ray builds: the nodes need
the ``virtualenv`` package) and checked on each node first: a node that cannot import it stops the
run with a message naming the node. In self-play RLlib's ``episode_return_mean`` is always 0 (the
two teams' rewards sum to zero): the script prints player_0's mean return and the arena result.
Expected after ``--smoke``: the learner beats ``random`` (95% interval above 0) and it also beats
its own untrained start head to head (``--init-hands`` duplicate pairs: an untrained policy that
happens never to bid Nil can beat ``random`` too, so this is the check that training did it).
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import sys
import time



def parse_args(argv=None):
    from spades_env.integrations import add_measure_args
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--smoke", action="store_true", help="short run (test suite)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--iterations", type=int, default=100)
    p.add_argument("--bots", default="random",
                   help="make_bot spec for seats 1 and 3 (player_0 and player_2 learn)")
    p.add_argument("--self-play", action="store_true", help="no bots: all four seats learn")
    p.add_argument("--hands-per-episode", type=int, default=1)
    p.add_argument("--train-batch", type=int, default=2000, help="env steps per iteration")
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--env-runners", type=int, default=None,
                   help="remote env runners (0: sample in the driver); default: 0 locally, with "
                        "--address one per cluster CPU but the driver's")
    p.add_argument("--num-cpus", type=int, default=None,
                   help="CPUs of the local Ray instance (default: 1 + env runners)")
    p.add_argument("--address", default=None,
                   help="Ray cluster address ('auto' or HOST:PORT); default: a local instance")
    p.add_argument("--ship-deps", action="store_true",
                   help="with --address: also pip-install the base dependencies on the nodes")
    p.add_argument("--no-ship", action="store_true",
                   help="with --address: do not ship the package (nodes must have it)")
    add_measure_args(p)  # --eval-hands, --vs, --init-hands, --untrained, --json
    args = p.parse_args(argv)
    if args.smoke:
        args.iterations, args.train_batch = 8, 1000
    if args.env_runners is not None and args.env_runners < 0:
        p.error(f"--env-runners must be >= 0, got {args.env_runners}")
    return args


def cluster_env_runners(cpus: float) -> int:
    """Env runners for a cluster of ``cpus`` CPUs: one per CPU but the driver's (at least 1), so
    the sampling runs on the cluster, not in the driver."""
    return max(1, int(cpus) - 1)


def main(argv=None) -> int:
    args = parse_args(argv)
    os.environ.setdefault("RAY_DEDUP_LOGS", "0")
    import ray
    import torch

    from spades_env.integrations.rllib import MODULE_ID, ppo_config
    from spades_env.ray_cluster import check_cluster, connect
    torch.set_num_threads(1)
    if args.untrained:  # the freshly initialised module, no Ray needed
        return evaluate(args, untrained_module(args), 0.0, 0)
    # ---------------------------------------------------------------- Ray
    if args.address:
        try:  # ship the package (runtime_env), then check that every node imports it
            connect(args.address, ship=not args.no_ship, pip=args.ship_deps)
            nodes = check_cluster()
        except (ValueError, RuntimeError) as e:
            print(f"error: {e}", file=sys.stderr)
            ray.shutdown()
            return 2
        cpus = ray.cluster_resources().get("CPU", 0)
        if args.env_runners is None:
            args.env_runners = cluster_env_runners(cpus)
        print(f"Ray cluster: {len(nodes)} node(s) {[n['ip'] for n in nodes]}, {cpus:.0f} CPUs, "
              f"{args.env_runners} env runners")
    else:
        if args.env_runners is None:
            args.env_runners = 0
        # "local": a new instance even when another cluster on this machine is recorded
        ray.init(address="local", num_cpus=args.num_cpus or 1 + args.env_runners,
                 include_dashboard=False, log_to_driver=False)
    # ---------------------------------------------------------------- env and algorithm
    env_config = {"hands_per_episode": args.hands_per_episode}
    if not args.self_play:
        env_config["bots"] = {"player_1": args.bots, "player_3": args.bots}
    config = ppo_config(env_config, num_env_runners=args.env_runners,
                        train_batch_size=args.train_batch, minibatch_size=250, num_epochs=4,
                        lr=args.lr, seed=args.seed)
    algo = config.build_algo()
    init_module = copy.deepcopy(algo.get_module(MODULE_ID))  # the untrained start
    # ---------------------------------------------------------------- train
    t0 = time.perf_counter()
    steps = 0
    for it in range(0 if args.untrained else args.iterations):
        res = algo.train()
        er = res.get("env_runners", {})
        steps = er.get("num_env_steps_sampled_lifetime", steps)
        p0 = er.get("agent_episode_returns_mean", {}).get("player_0", float("nan"))
        print(f"iteration {it + 1}: env steps {steps}, player_0 mean return {p0:+.3f}, "
              f"episode_return_mean {er.get('episode_return_mean', float('nan')):+.3f}",
              flush=True)
    train_s = time.perf_counter() - t0
    print(f"trained {args.iterations} iterations ({steps} env steps) in {train_s:.1f} s "
          f"= {steps / max(train_s, 1e-9):.0f} env steps/s")
    rc = evaluate(args, algo, train_s, steps, init_module)
    algo.stop()
    ray.shutdown()
    return rc


def untrained_module(args):
    """A freshly initialised ``ActionMaskingPPOModule`` (what training starts from)."""
    import torch

    from spades_env.integrations.rllib import ActionMaskingPPOModule, SpadesRLlibEnv
    torch.manual_seed(args.seed)
    env = SpadesRLlibEnv({"hands_per_episode": 1})
    return ActionMaskingPPOModule(observation_space=env.observation_spaces["player_0"],
                                  action_space=env.action_spaces["player_0"],
                                  model_config={"fcnet_hiddens": [128, 128],
                                                "vf_share_layers": False})


def evaluate(args, algo_or_module, train_s: float, steps: int, init_module=None) -> int:
    """The greedy masked policy against ``args.vs`` in the arena (duplicate single hands), then
    (given ``init_module``, the module before training) against its untrained start."""
    from spades_env.arena import jsonable, play_match
    from spades_env.integrations import PolicyPlayer
    from spades_env.integrations.rllib import policy_fn
    # ---------------------------------------------------------------- measure in the arena
    learner = PolicyPlayer(policy_fn(algo_or_module), name="rllib_ppo")
    result = play_match(learner, args.vs, hands=args.eval_hands, seed=args.seed + 1000)
    print(result.summary())
    lo, hi = result.point_diff_ci
    beats = lo > 0
    print(f"learner beats {args.vs}: {beats} (95% CI of points per hand [{lo:+.1f}, {hi:+.1f}])")
    vs_init = None
    if args.init_hands and init_module is not None:  # what training changed: against its start
        vs_init = play_match(learner, PolicyPlayer(policy_fn(init_module), name="untrained"),
                             hands=args.init_hands, seed=args.seed + 2000)
        print(vs_init.summary())
        lo, hi = vs_init.point_diff_ci
        print(f"learner beats its untrained start: {lo > 0} (95% CI [{lo:+.1f}, {hi:+.1f}])")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(jsonable({"arena": result.to_dict(), "beats": beats, "train_s": train_s,
                                "env_steps": steps, "env_runners": args.env_runners,
                                "vs_init": vs_init.to_dict() if vs_init else None}), f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
