"""Train sb3-contrib's MaskablePPO on the single-agent Spades env, then measure it in the arena.

Run (after ``pip install -e '.[sb3]'``)::

    python examples/sb3_maskable_ppo.py                 # 300k steps vs random bots, ~15 min on 2 cores
    python examples/sb3_maskable_ppo.py --smoke         # ~1-2 min: a short run, the test suite's
    python examples/sb3_maskable_ppo.py --opponents medium --timesteps 2000000

What it does: ``make_vec_env("SpadesHand-v1")`` (one hand per episode; seat 0 learns, bots in
the other seats), ``MaskablePPO`` with the env's ``action_masks()`` (reached through
``gym.make``'s wrappers by SB3's ``env_method``), then the trained policy plays duplicate hands
against ``random`` in ``spades_env.arena`` through ``PolicyPlayer`` (it uses the mask, as in
training), then against its own untrained start. Expected: after ``--smoke`` the learner beats
``random`` (the 95% interval of the point difference per hand is above 0; about +150 points per
hand) and it also beats its own untrained start head to head (``--init-hands`` duplicate pairs:
an untrained policy that happens never to bid Nil can beat ``random`` too, so this is the
check that training did it).

Evaluating without masks (``model.predict(obs)``, SB3's plain ``evaluate_policy``) can pick an
illegal action: build the env with ``illegal_action="random_legal"`` so that those are replaced
by a random legal action (counted in ``env.unwrapped.illegal_total``; ``illegal_count`` is per
episode, and ``evaluate_policy`` resets after the last one) instead of ending the hand (which
the env warns about once); the last lines of this script show it. Both evaluations play the same
``--seed``-ed deals, so the masked and the plain mean rewards compare like for like.
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
import time

import torch
from sb3_contrib import MaskablePPO
from sb3_contrib.common.maskable.evaluation import evaluate_policy as masked_evaluate_policy
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.evaluation import evaluate_policy

import spades_env  # noqa: F401  (registers the Gymnasium ids)
from spades_env.arena import jsonable
from spades_env.integrations import PolicyPlayer, add_measure_args, measure_learner


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--smoke", action="store_true", help="short run (test suite): 40k steps")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--timesteps", type=int, default=300_000, help="learner decisions to train")
    p.add_argument("--opponents", default="random", help="make_bot spec of the bots in training")
    p.add_argument("--n-envs", type=int, default=4)
    add_measure_args(p)  # --eval-hands, --vs, --init-hands, --untrained, --json
    p.add_argument("--save", default=None, help="save the model here (.zip)")
    args = p.parse_args(argv)
    if args.smoke:
        args.timesteps = 40_000
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    torch.set_num_threads(1)
    env_kwargs = {"partner": args.opponents, "opponents": args.opponents}
    # ---------------------------------------------------------------- envs and agent
    venv = make_vec_env("SpadesHand-v1", n_envs=args.n_envs, seed=args.seed, env_kwargs=env_kwargs)
    model = MaskablePPO("MlpPolicy", venv, n_steps=512, batch_size=256, n_epochs=4,
                        learning_rate=3e-4, ent_coef=0.01, gamma=1.0,
                        policy_kwargs={"net_arch": [128, 128]}, seed=args.seed, verbose=0)
    init_policy = copy.deepcopy(model.policy)  # the untrained start, for the head-to-head
    # ---------------------------------------------------------------- train
    t0 = time.perf_counter()
    if not args.untrained:
        model.learn(total_timesteps=args.timesteps)
    train_s = time.perf_counter() - t0
    print(f"trained {0 if args.untrained else args.timesteps} steps in {train_s:.1f} s")
    if args.save:
        model.save(args.save)

    # ---------------------------------------------------------------- measure in the arena
    def greedy(policy):
        def fn(obs, mask):
            action, _ = policy.predict(obs, action_masks=mask.astype(bool), deterministic=True)
            return int(action)
        return fn

    learner = PolicyPlayer(greedy(model), name="maskable_ppo")
    start = None if args.untrained else PolicyPlayer(greedy(init_policy), name="untrained")
    result, beats, vs_init = measure_learner(learner, args.vs, args.eval_hands, args.seed, start,
                                             args.init_hands)

    # ---------------------------------------------------------------- evaluation with SB3
    # the same seeded deals for both (a one-env VecEnv seeded like the training envs)
    eval_env = make_vec_env("SpadesHand-v1", n_envs=1, seed=args.seed + 500, env_kwargs=env_kwargs)
    m_mean, _ = masked_evaluate_policy(model, eval_env, n_eval_episodes=20)
    plain_env = make_vec_env("SpadesHand-v1", n_envs=1, seed=args.seed + 500,
                             env_kwargs={**env_kwargs, "illegal_action": "random_legal"})
    moves = [0]

    def count(locals_, globals_):  # called once per learner move
        moves[0] += 1

    p_mean, _ = evaluate_policy(model, plain_env, n_eval_episodes=20, callback=count)
    replaced = plain_env.get_attr("illegal_total")[0]  # illegal_count: the last episode only
    print(f"SB3 evaluate (masked) mean reward per hand {m_mean:+.3f}; plain evaluate_policy with "
          f"illegal_action='random_legal' {p_mean:+.3f} (illegal picks replaced: {replaced} of "
          f"{moves[0]} moves)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(jsonable({"arena": result.to_dict(), "beats": beats, "train_s": train_s,
                                "masked_eval_mean": m_mean, "plain_eval_mean": p_mean,
                                "plain_replaced": replaced, "plain_moves": moves[0],
                                "vs_init": vs_init.to_dict() if vs_init else None}), f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
