"""What the batched env and ``ScalarBatchEnv`` (training's scalar engine behind the same interface)
accept: a step before reset is the same error in both, actions must be integer action ids (odd
types are refused, and ids out of phase even with ``validate=False``), and ``observe`` and a given
deal check the types of their arguments."""

import numpy as np
import pytest
import torch

from spades_env.vector import SpadesVectorEnv


def test_scalar_batch_env_step_before_reset_is_the_vector_envs_error():
    from spades_env.vector import SpadesVectorEnv
    from spades_env.training.envs import ScalarBatchEnv
    for env in (ScalarBatchEnv(2, seed=0), SpadesVectorEnv(2, seed=0)):
        with pytest.raises(RuntimeError, match=r"call reset\(\) before step\(\)"):
            env.step(np.array([55, 55]))


@pytest.mark.parametrize("actions", [np.array([55.9, 55.2]), [55.0, 55.0], ["55", "55"],
                                     np.array([True, True]), torch.tensor([55.5, 55.5])])
def test_scalar_batch_env_refuses_non_integer_actions(actions):
    from spades_env.training.envs import ScalarBatchEnv
    env = ScalarBatchEnv(2, seed=0)
    env.reset()
    with pytest.raises(ValueError, match="actions must be integer action ids"):
        env.step(actions)
    assert [g.moves for g in env.games] == [[], []]
    env.step(np.array([55, 55]))
    assert [g.moves for g in env.games] == [[55], [55]]


def test_vector_actions_of_odd_types_are_refused_clearly():
    env = SpadesVectorEnv(2, seed=0)
    env.reset()
    for bad in ([2 ** 64, 2 ** 64], torch.tensor([52 + 1j, 53]),
                np.array([2 ** 64 - 1, 52], dtype=np.uint64)):
        with pytest.raises(ValueError, match="actions must be integer action ids"):
            env.step(bad)


def test_vector_out_of_phase_ids_refused_even_without_validation():
    """validate=False once let a native env write outside its buffers (id 2**40: segfault; a
    bid id during play removed a card from another game). The kernel checks every id against the
    phase now: a ValueError naming the game, and nothing changed. (The torch path is memory-safe
    by torch's own index checks; with validate=False its state after an illegal id is undefined,
    as documented.)"""
    env = SpadesVectorEnv(4, seed=3, backend="native", validate=False)
    env.reset()
    gen = torch.Generator().manual_seed(0)
    for _ in range(5):
        env.step(env.sample_actions(gen))
    before = env.state_dict()
    for bad in (2 ** 40, -1, 68, 100000, 64):  # 64: a bid id while cards are played
        a = env.sample_actions(gen)
        a[1] = bad
        with pytest.raises(ValueError, match="illegal action"):
            env.step(a)
        after = env.state_dict()
        for k, v in before.items():
            if isinstance(v, torch.Tensor):
                assert torch.equal(v, after[k]), (bad, k)
    a = env.sample_actions(gen)
    a[3] = 64
    with pytest.raises(ValueError, match="illegal action 64 in env 3"):
        env.step(a)


def test_vector_observe_and_given_deal_argument_types():
    """observe() accepted seat=True / 1.7 / "0"; reset() truncated float holder values."""
    env = SpadesVectorEnv(2, seed=0)
    env.reset()
    for bad in (True, 1.7, "0", 4):
        with pytest.raises(ValueError, match="seat must be an int"):
            env.observe(0, bad)
    with pytest.raises(ValueError, match="env index"):
        env.observe(1.0, 0)
    holder = torch.arange(52).repeat(2, 1) % 4
    with pytest.raises(ValueError, match="integer seats"):
        env.reset(holder=holder.double() + 0.4, dealer=torch.zeros(2))
    obs, mask, seat = env.reset(holder=holder, dealer=torch.zeros(2, dtype=torch.long))
    assert seat.tolist() == [1, 1] and env.observe(0, 1).shape == (711,)
