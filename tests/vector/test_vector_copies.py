"""Copies of a batched env: deep copies and pickles are independent and continue exactly on either
backend, a pickled ``backend="auto"`` env continues on the torch path where the kernel cannot be
built, and with ``copy=False`` only the documented buffers are reused (the seat tensor is fresh);
``threads`` is bounded and read-only."""

import numpy as np
import pytest
import torch

from spades_env.vector import SpadesVectorEnv


@pytest.mark.parametrize("backend", ["native", "torch"])
def test_vector_env_pickles_and_deep_copies(backend):
    """A native env could not be deep-copied or pickled (ctypes pointers), and a copy's views of
    its buffers came loose from them; copies are independent and continue exactly (observe()
    too, which reads through those views)."""
    import copy
    import pickle
    env = SpadesVectorEnv(8, seed=1, copy=False, backend=backend)
    env.reset()
    for _ in range(20):
        env.step(env.sample_actions(torch.Generator().manual_seed(3)))
    twins = [copy.deepcopy(env), pickle.loads(pickle.dumps(env))]
    assert all(t.backend == backend and t._obs4.data_ptr() != env._obs4.data_ptr() for t in twins)
    for _ in range(80):
        acts = env.sample_actions(torch.Generator().manual_seed(5))
        outs = [e.step(acts) for e in (env, *twins)]
        for o in outs[1:]:
            assert torch.equal(o[0], outs[0][0]) and torch.equal(o[2], outs[0][2])
        for t in twins:
            assert np.array_equal(t.observe(2, 1), env.observe(2, 1))
    twins[0].step(twins[0].sample_actions())  # moving a copy leaves the original alone
    assert twins[0].hand_step != env.hand_step


def test_unpickling_an_auto_env_without_a_compiler_falls_back_to_torch(monkeypatch):
    """A pickled backend="auto" env raised NativeUnavailable where the kernel cannot be built;
    it now continues on the torch path (same state, same results). threads is read-only."""
    import pickle
    from spades_env import native
    env = SpadesVectorEnv(16, seed=4)
    assert env.backend == "native"
    env.reset()
    for _ in range(30):
        env.step(env.sample_actions(torch.Generator().manual_seed(1)))
    blob = pickle.dumps(env)
    monkeypatch.setattr(native, "_kernel", None)
    monkeypatch.setattr(native, "_error", "no C compiler (test)")
    twin = pickle.loads(blob)
    assert twin.backend == "torch" and twin.threads == 1
    for _ in range(60):
        acts = env.sample_actions(torch.Generator().manual_seed(2))
        a, b = env.step(acts), twin.step(acts)
        assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1]) and torch.equal(a[3], b[3])
    with pytest.raises(AttributeError):
        env.threads = 5


def test_vector_copy_false_seat_is_fresh_and_threads_bounded():
    """copy=False reused the seat tensor on the native backend only; seat is fresh on both now.
    threads is bounded (threads=2000 made libgomp exit the process)."""
    for backend in ("native", "torch"):
        env = SpadesVectorEnv(4, seed=0, copy=False, backend=backend)
        obs, mask, seat = env.reset()
        prev = seat
        keep = seat.clone()
        obs2, mask2, seat2, *_ = env.step(env.sample_actions())
        assert torch.equal(prev, keep) and seat2 is not prev
        assert obs2 is obs and mask2 is mask  # the documented reused buffers
    for bad in (0, 257, 2000, True):
        with pytest.raises(ValueError, match="threads"):
            SpadesVectorEnv(2, threads=bad)
