"""The batched engine on CUDA plays exactly the same games as on the CPU (skipped without CUDA).

The deals come from a CPU generator on both devices, so with the same seed and the same actions the
two envs must return identical observations, masks, seats, rewards and done flags at every step;
the CPU env is itself checked against the scalar engine in ``test_vector_parity.py``.
"""

from __future__ import annotations

import pytest
import torch

from spades_env import Rules
from spades_env.vector import HAND_STEPS, SpadesVectorEnv

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA not available")


def test_cuda_matches_cpu_step_by_step():
    rules = Rules(target_score=100, loss_threshold=-250)
    n = 512
    cpu = SpadesVectorEnv(n, device="cpu", seed=21, rules=rules, max_hands=3)
    gpu = SpadesVectorEnv(n, device="cuda", seed=21, rules=rules, max_hands=3)
    gen = torch.Generator().manual_seed(4)
    out_c, out_g = cpu.reset(), gpu.reset()
    ended = 0
    for step in range(4 * HAND_STEPS):
        for x, y in zip(out_c[:3], out_g[:3]):
            assert y.device.type == "cuda"
            assert torch.equal(x, y.cpu()), f"step {step}"
        mask = out_c[1]
        r = torch.rand(mask.shape, generator=gen)
        a = torch.where(mask, r + 1.0, torch.zeros_like(r)).argmax(1)
        out_c = cpu.step(a)
        out_g = gpu.step(a.cuda())
        for x, y in zip(out_c[3:5], out_g[3:5]):
            assert torch.equal(x, y.cpu()), f"step {step}: rewards/dones differ"
        if out_c[5].get("final") is not None:
            rc, rg = out_c[5]["final"].results(), out_g[5]["final"].results()
            assert rc == rg
            ended += len(rc)
    assert ended >= n  # games ended and were reset on the device
    assert cpu.get_game(5).to_dict()["hands"] == gpu.get_game(5).to_dict()["hands"]
    # an illegal action is caught on the device too
    bad = out_g[1].float().argmax(1)
    bad[3] = 67
    with pytest.raises(ValueError, match="env 3"):
        gpu.step(bad)


def test_cuda_compact_observations_expand_on_the_device_to_the_cpu_floats():
    """Compact rows made on the GPU equal the CPU kernel's, and ``compact.expand`` on the GPU
    gives the CPU's float32 observations bit for bit."""
    from spades_env.compact import expand
    from spades_env.rules import PRESETS
    rules = PRESETS["joker_joker_deuce_deuce"]
    n = 256
    cpu = SpadesVectorEnv(n, device="cpu", seed=8, rules=rules)
    gpu = SpadesVectorEnv(n, device="cuda", seed=8, rules=rules, obs_format="compact")
    gen = torch.Generator().manual_seed(2)
    (of, mask, _), (oc, _, _) = cpu.reset(), gpu.reset()
    for step in range(2 * HAND_STEPS):
        assert oc.device.type == "cuda" and oc.dtype == torch.uint8
        x = expand(oc, gpu.rules_table)
        assert x.device.type == "cuda"
        assert torch.equal(x.cpu().view(torch.int32), of.view(torch.int32)), f"step {step}"
        r = torch.rand(mask.shape, generator=gen)
        a = torch.where(mask, r + 1.0, torch.zeros_like(r)).argmax(1)
        of, mask, *_ = cpu.step(a)
        oc, *_ = gpu.step(a.cuda())
