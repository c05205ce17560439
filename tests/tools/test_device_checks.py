"""Device names are checked once, the same way, wherever a device is taken
(``spades_env.devices.check_device``: the batched env, checkpoint bots, agents, the training
config): other device types, unknown names, a CPU index, CUDA without CUDA and a CUDA index beyond
the machine's devices are each one ``ValueError`` up front."""

import pytest
import torch

from spades_env.vector import SpadesVectorEnv


@pytest.mark.parametrize("device,match", [
    ("mps", "device must be cpu, cuda or cuda:N, got 'mps' .device type 'mps'"),
    ("meta", "device must be cpu, cuda or cuda:N, got 'meta'"),
    ("xpu", "device type 'xpu' is not supported"),
    ("bogus", "device must be a torch device: cpu, cuda or cuda:N, got 'bogus'"),
    (3.5, "device must be a torch device name such as 'cpu' or 'cuda', got float"),
    ("cpu:1", "the CPU device has no index 1"),
])
def test_one_device_check_everywhere(tmp_path, device, match):
    from spades_env.bots.checkpoint_bot import CheckpointBot
    from spades_env.devices import check_device
    from spades_env.vector import SpadesVectorEnv
    from spades_env.training.config import check_ready, from_dict
    with pytest.raises(ValueError, match=match):
        check_device(device)
    with pytest.raises(ValueError, match=match):
        SpadesVectorEnv(2, device=device)
    # the device is checked before the file: a missing file is not what is reported
    with pytest.raises(ValueError, match=match):
        CheckpointBot(str(tmp_path / "missing.pt"), device=device)
    from spades_env.agents.checkpoint import build_agent
    with pytest.raises(ValueError, match=match):
        build_agent({}, device)
    if isinstance(device, str):
        with pytest.raises(ValueError, match="bad config: device"):
            check_ready(from_dict({"device": device, "bc_teacher": ""}))


@pytest.mark.skipif(torch.cuda.is_available(), reason="a machine without CUDA")
def test_cuda_without_cuda_is_refused_up_front(tiny):
    from spades_env.bots.checkpoint_bot import CheckpointBot
    from spades_env.vector import SpadesVectorEnv
    for dev in ("cuda", "cuda:7"):
        with pytest.raises(ValueError, match=f"device '{dev}': CUDA is not available"):
            SpadesVectorEnv(2, device=dev)
        with pytest.raises(ValueError, match=f"device '{dev}': CUDA is not available"):
            CheckpointBot(tiny, device=dev)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_a_cuda_index_beyond_the_devices_is_refused_up_front():
    from spades_env.devices import check_device
    from spades_env.vector import SpadesVectorEnv
    n = torch.cuda.device_count()
    with pytest.raises(ValueError, match=f"device 'cuda:{n}': this machine has {n} CUDA"):
        SpadesVectorEnv(2, device=f"cuda:{n}")
    assert check_device("cuda:0") == torch.device("cuda:0")


def test_vector_env_bad_device_is_a_value_error():
    """Regression: SpadesVectorEnv(device="tpu") leaked torch's RuntimeError."""
    with pytest.raises(ValueError, match="device must be a torch device"):
        SpadesVectorEnv(2, device="tpu")
    with pytest.raises(ValueError, match="device must be"):
        SpadesVectorEnv(2, device=3.5)
