"""Tianshou multi-agent DQN: two learning seats (a team), bots in the other two, then the arena.

Run (after ``pip install -e '.[tianshou]'``)::

    python examples/tianshou_dqn.py              # 10 epochs, ~8 min on 2 cores
    python examples/tianshou_dqn.py --smoke      # ~1-2 min, the test suite's
    python examples/tianshou_dqn.py --opponents medium --epochs 50

What it does: ``spades_env.integrations.tianshou.tianshou_env(bots={"player_1": OPP, "player_3":
OPP}, hands_per_episode=1)`` (Tianshou's ``PettingZooEnv`` over ``TurnCreditWrapper``, so each
learning agent is credited with its own hand rewards), one DQN shared by ``player_0`` and
``player_2`` through ``MultiAgentOffPolicyAlgorithm`` (masked Q-values: Tianshou reads the
``mask`` key), trained with ``OffPolicyTrainerParams``; then the greedy masked policy plays
duplicate hands against ``random`` in ``spades_env.arena`` through ``PolicyPlayer``. Expected
after ``--smoke``: the learner beats ``random`` (95% interval of the point difference per hand
above 0) and it also beats its own untrained start head to head (``--init-hands`` duplicate pairs:
an untrained policy that happens never to bid Nil can beat ``random`` too, so this is the
check that training did it).
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import sys
import time

import numpy as np
import torch

os.environ.setdefault("TQDM_DISABLE", "1")  # no progress bars (TQDM_DISABLE=0 shows them)

from tianshou.algorithm import DQN  # noqa: E402
from tianshou.algorithm.modelfree.dqn import DiscreteQLearningPolicy
from tianshou.algorithm.multiagent.marl import MultiAgentOffPolicyAlgorithm
from tianshou.algorithm.optim import AdamOptimizerFactory
from tianshou.data import Collector, VectorReplayBuffer
from tianshou.env import DummyVectorEnv
from tianshou.trainer import OffPolicyTrainerParams
from tianshou.utils.net.common import Net

from spades_env.arena import jsonable
from spades_env.integrations import PolicyPlayer, add_measure_args, measure_learner
from spades_env.integrations.tianshou import masked_argmax, quiet_progress, tianshou_env


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--smoke", action="store_true", help="short run (test suite): 2 x 3000 steps")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--epochs", type=int, default=10)
    p.add_argument("--epoch-steps", type=int, default=6000, help="env steps per epoch")
    p.add_argument("--num-envs", type=int, default=4)
    p.add_argument("--opponents", default="random", help="make_bot spec for seats 1 and 3")
    add_measure_args(p)  # --eval-hands, --vs, --init-hands, --untrained, --json
    args = p.parse_args(argv)
    if args.smoke:
        args.epochs, args.epoch_steps = 2, 3000
    return args


def illegal_moves(buffer) -> tuple[int, int]:
    """``(moves, illegal moves)`` stored in a replay buffer of ``{"obs", "mask"}`` observations."""
    idx = buffer.sample_indices(0)  # every stored transition
    mask = np.asarray(buffer.obs.mask)[idx].astype(bool)
    act = np.asarray(buffer.act)[idx].astype(int)
    return len(idx), int((~mask[np.arange(len(idx)), act]).sum())


def main(argv=None) -> int:
    args = parse_args(argv)
    quiet_progress()  # Tianshou's update bar ignores TQDM_DISABLE and show_progress=False
    torch.manual_seed(args.seed)
    np.random.seed(args.seed)
    torch.set_num_threads(1)
    env_kwargs = {"bots": {"player_1": args.opponents, "player_3": args.opponents},
                  "hands_per_episode": 1}
    # ---------------------------------------------------------------- envs
    env = tianshou_env(**env_kwargs)
    train_envs = DummyVectorEnv([lambda: tianshou_env(**env_kwargs)] * args.num_envs)
    train_envs.seed(args.seed)
    obs_space = env.observation_space["observation"]
    n_actions = env.action_space.n
    # ---------------------------------------------------------------- agent (shared by both seats)
    net = Net(state_shape=obs_space.shape, action_shape=n_actions, hidden_sizes=[128, 128])
    init_net = copy.deepcopy(net)  # the untrained start, for the head-to-head after training
    policy = DiscreteQLearningPolicy(model=net, action_space=env.action_space,
                                     observation_space=obs_space, eps_training=0.2)
    dqn = DQN(policy=policy, optim=AdamOptimizerFactory(lr=1e-3), gamma=0.99,
              n_step_return_horizon=1, target_update_freq=200)
    algo = MultiAgentOffPolicyAlgorithm(algorithms=[dqn, dqn], env=env)
    # ---------------------------------------------------------------- train
    t0 = time.perf_counter()
    if not args.untrained:
        buffer = VectorReplayBuffer(50_000, len(train_envs))
        collector = Collector(algo, train_envs, buffer, exploration_noise=True)
        collector.reset()
        # warm-up: uniformly random *legal* moves (eps = 1: DQN's exploration draws from the
        # mask; collect(random=True) samples the whole action space and plays illegal moves)
        policy.set_eps_training(1.0)
        collector.collect(n_step=1000)
        policy.set_eps_training(0.2)
        warmup_steps, warmup_illegal = illegal_moves(buffer)
        print(f"warm-up: {warmup_steps} moves, {warmup_illegal} illegal")

        def on_epoch(epoch, env_step):
            policy.set_eps_training(max(0.02, 0.2 * (1 - epoch / max(1, args.epochs))))

        algo.run_training(OffPolicyTrainerParams(
            training_collector=collector, max_epochs=args.epochs,
            epoch_num_steps=args.epoch_steps, collection_step_num_env_steps=100,
            update_step_num_gradient_steps_per_sample=0.25, batch_size=128,
            training_fn=on_epoch, test_collector=None, verbose=False, show_progress=False))
    else:
        warmup_steps = warmup_illegal = 0
    train_s = time.perf_counter() - t0
    print(f"trained {0 if args.untrained else args.epochs} epochs in {train_s:.1f} s")

    # ---------------------------------------------------------------- measure in the arena
    net.eval()
    init_net.eval()

    def greedy(model):
        def fn(obs, mask):
            with torch.no_grad():
                q, _ = model(torch.as_tensor(obs)[None])
            return masked_argmax(q[0].numpy(), mask)
        return fn

    learner = PolicyPlayer(greedy(net), name="tianshou_dqn")
    start = None if args.untrained else PolicyPlayer(greedy(init_net), name="untrained")
    result, beats, vs_init = measure_learner(learner, args.vs, args.eval_hands, args.seed, start,
                                             args.init_hands)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(jsonable({"arena": result.to_dict(), "beats": beats, "train_s": train_s,
                                "warmup_steps": warmup_steps, "warmup_illegal": warmup_illegal,
                                "vs_init": vs_init.to_dict() if vs_init else None}), f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
