"""RLlib adapter (new API stack; ``pip install -e '.[rllib]'``) and Ray cluster helpers.

| name                      | what                                                              |
|---------------------------|-------------------------------------------------------------------|
| ``SpadesRLlibEnv``        | ``MultiAgentEnv`` over ``spades_v1.env(**config)``: observations ``{"observations": float32 (OBS_SIZE,), "action_mask": float32 (68,)}``; ``config["bots"]`` seats bots inside the env (train against ``medium``: ``{"bots": {"player_1": "medium", "player_3": "medium"}}``) |
| ``ActionMaskingPPOModule``| PPO torch RLModule that sets the logits of illegal actions to the float minimum |
| ``ppo_config``            | a ``PPOConfig`` with the env, one shared module for every learning agent and the masking module |
| ``policy_fn``             | ``fn(obs, mask) -> action`` from a trained algorithm, for ``PolicyPlayer`` / the arena |
| ``runtime_env``, ``check_cluster`` | from ``spades_env.ray_cluster``: ship the package to every node through Ray's ``runtime_env``; check every node imports it (a ``RuntimeError`` naming the node otherwise) |

Rewards: after each move every learning agent receives its ``spades_v1`` reward of that move
(the hand rewards reach all four at the hand's last card); RLlib adds a reward to the agent's
last action when the agent has no observation in that step. In self-play the two teams' rewards
sum to zero, so RLlib's ``episode_return_mean`` (the sum over all agents) is always 0: read
``agent_episode_returns_mean`` per agent, train against bots (``bots=``), or measure in the
arena (the example does).
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
try:
    from ray.rllib.env.multi_agent_env import MultiAgentEnv
except ImportError as _e:  # RLlib is an extra: say which
    raise ImportError(f"spades_env.integrations.rllib needs RLlib ({_e.name} is not installed): "
                      f"pip install 'spades_env[rllib]'") from None

from .. import spades_v1
from ..cards import NUM_ACTIONS
from ..ray_cluster import check_cluster, runtime_env  # noqa: F401  (re-exported)

__all__ = ["SpadesRLlibEnv", "ActionMaskingPPOModule", "ppo_config", "policy_fn", "runtime_env",
           "check_cluster", "MODULE_ID"]

MODULE_ID = "shared"


class SpadesRLlibEnv(MultiAgentEnv):
    """RLlib ``MultiAgentEnv`` over ``spades_v1.env(**config)`` (turn-based: only the agent to
    act receives an observation; at the end every agent receives its final one).

    Args:
        config: ``spades_v1.env`` options as a dict (RLlib passes ``env_config``), ``bots``
            included.
    Raises:
        ValueError: a bad option (from ``spades_v1.env``).
    """

    def __init__(self, config=None):
        super().__init__()
        self._env = spades_v1.env(**dict(config or {}))
        self.possible_agents = list(self._env.possible_agents)
        self.agents = list(self.possible_agents)
        a0 = self.possible_agents[0]
        space = gym.spaces.Dict({
            "observations": self._env.observation_space(a0)["observation"],
            "action_mask": gym.spaces.Box(0.0, 1.0, (NUM_ACTIONS,), np.float32),
        })
        self.observation_spaces = {a: space for a in self.possible_agents}
        self.action_spaces = {a: gym.spaces.Discrete(NUM_ACTIONS) for a in self.possible_agents}

    def _obs(self, agent) -> dict:
        d = self._env.observe(agent)
        return {"observations": d["observation"],
                "action_mask": d["action_mask"].astype(np.float32)}

    def reset(self, *, seed=None, options=None):
        self._env.reset(seed=seed, options=options)
        a = self._env.agent_selection
        return {a: self._obs(a)}, {}

    def step(self, action_dict):
        env = self._env
        agent = env.agent_selection
        env.step(int(action_dict[agent]))
        rewards = {a: float(env.rewards.get(a, 0.0)) for a in self.possible_agents}
        term = any(env.terminations.values())
        trunc = any(env.truncations.values()) and not term
        if term or trunc:
            obs = {a: self._obs(a) for a in self.possible_agents}
            infos = {a: dict(env.infos.get(a, {})) for a in self.possible_agents}
        else:
            nxt = env.agent_selection
            obs = {nxt: self._obs(nxt)}
            infos = {}
        return obs, rewards, {"__all__": term}, {"__all__": trunc}, infos


_MODULE_CLASS = None


def _masking_module_class():
    """The ``ActionMaskingPPOModule`` class, built once (it imports torch and RLlib's PPO)."""
    global _MODULE_CLASS
    if _MODULE_CLASS is None:
        _MODULE_CLASS = _build_masking_module_class()
    return _MODULE_CLASS


def _build_masking_module_class():
    import torch
    from ray.rllib.algorithms.ppo.torch.default_ppo_torch_rl_module import (
        DefaultPPOTorchRLModule,
    )
    from ray.rllib.core.columns import Columns
    from ray.rllib.utils.torch_utils import FLOAT_MIN

    class ActionMaskingPPOModule(DefaultPPOTorchRLModule):
        """PPO torch module for ``Dict(observations, action_mask)`` observations: the network
        sees ``observations``; logits of actions with mask 0 become ``FLOAT_MIN``."""

        def __init__(self, *args, observation_space=None, **kwargs):
            self._space_with_mask = observation_space
            inner = observation_space["observations"] if isinstance(
                observation_space, gym.spaces.Dict) else observation_space
            super().__init__(*args, observation_space=inner, **kwargs)

        def setup(self):
            super().setup()
            self.observation_space = self._space_with_mask

        @staticmethod
        def _split(batch):
            obs = batch[Columns.OBS]
            if isinstance(obs, dict):
                batch = dict(batch)
                batch[Columns.OBS] = obs["observations"]
                return obs["action_mask"], batch
            return batch["action_mask"], batch

        @staticmethod
        def _masked(out, mask):
            out[Columns.ACTION_DIST_INPUTS] = out[Columns.ACTION_DIST_INPUTS] + torch.clamp(
                torch.log(mask), min=FLOAT_MIN)
            return out

        def _forward(self, batch, **kwargs):
            mask, batch = self._split(batch)
            return self._masked(super()._forward(batch, **kwargs), mask)

        def _forward_train(self, batch, **kwargs):
            mask, batch = self._split(batch)
            return self._masked(super()._forward_train(batch, **kwargs), mask)

        def compute_values(self, batch, embeddings=None):
            if embeddings is None:
                _, batch = self._split(batch)
            return super().compute_values(batch, embeddings)

    return ActionMaskingPPOModule


def __getattr__(name):
    if name == "ActionMaskingPPOModule":  # built on first use (imports torch and RLlib's PPO)
        cls = _masking_module_class()
        globals()[name] = cls
        return cls
    raise AttributeError(name)


def ppo_config(env_config: dict | None = None, *, num_env_runners: int = 0,
               hidden: tuple = (128, 128), train_batch_size: int = 2000,
               minibatch_size: int = 256, num_epochs: int = 4, lr: float = 3e-4,
               seed: int = 0, num_cpus_per_env_runner: float = 1):
    """A ``PPOConfig``: ``SpadesRLlibEnv(env_config)``, every learning agent mapped to one
    module ``MODULE_ID`` (self-play when there are no bots), ``ActionMaskingPPOModule``.

    Args:
        env_config: ``spades_v1.env`` options (``bots``, ``hands_per_episode``...).
        num_env_runners: remote env runners (0: sample in the driver process).
    """
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.core.rl_module.multi_rl_module import MultiRLModuleSpec
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec
    env_config = dict(env_config or {})
    # the module's spaces given explicitly (from the env as the driver builds it), not inferred
    # from a remote env runner
    probe = SpadesRLlibEnv(env_config)
    agent = probe.possible_agents[0]
    return (
        PPOConfig()
        # RLlib's env pre-check steps with an unmasked random action, which the env answers as
        # an illegal move (PettingZoo's warning); the env is checked in the tests instead
        .environment(SpadesRLlibEnv, env_config=env_config, disable_env_checking=True)
        .multi_agent(policies={MODULE_ID},
                     policy_mapping_fn=lambda agent_id, episode, **kw: MODULE_ID)
        .rl_module(rl_module_spec=MultiRLModuleSpec(rl_module_specs={
            MODULE_ID: RLModuleSpec(module_class=_masking_module_class(),
                                    observation_space=probe.observation_spaces[agent],
                                    action_space=probe.action_spaces[agent],
                                    model_config={"fcnet_hiddens": list(hidden),
                                                  "vf_share_layers": False})}))
        .env_runners(num_env_runners=num_env_runners, num_envs_per_env_runner=1,
                     num_cpus_per_env_runner=num_cpus_per_env_runner)
        .learners(num_learners=0)
        .training(train_batch_size_per_learner=train_batch_size, minibatch_size=minibatch_size,
                  num_epochs=num_epochs, lr=lr, gamma=1.0, lambda_=0.95, entropy_coeff=0.01)
        .debugging(seed=seed)
    )


def policy_fn(algo, module_id: str = MODULE_ID, greedy: bool = True):
    """``fn(obs, mask) -> action id`` from a trained RLlib algorithm's module (or from an
    ``ActionMaskingPPOModule`` itself), for ``PolicyPlayer``: the masked logits' argmax
    (``greedy``) or a sample."""
    import torch
    from ray.rllib.core.columns import Columns
    module = algo.get_module(module_id) if hasattr(algo, "get_module") else algo

    def fn(obs, mask):
        batch = {Columns.OBS: {"observations": torch.as_tensor(obs, dtype=torch.float32)[None],
                               "action_mask": torch.as_tensor(mask, dtype=torch.float32)[None]}}
        with torch.no_grad():
            logits = module.forward_inference(batch)[Columns.ACTION_DIST_INPUTS][0]
        if greedy:
            return int(torch.argmax(logits))
        return int(torch.distributions.Categorical(logits=logits).sample())
    return fn
