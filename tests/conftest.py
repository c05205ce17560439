"""Fixtures of tests in several folders."""

import pytest
import torch

from spades_env.agents.model import Agent
from spades_env.training.checkpoint import save_checkpoint


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """A small stripped checkpoint (plays, cannot be resumed)."""
    torch.manual_seed(0)
    agent = Agent(hidden=[32], head_hidden=16)
    path = tmp_path_factory.mktemp("r3") / "tiny.pt"
    save_checkpoint(str(path), {"config": {"name": "t"}, "model": agent.state_dict(),
                                "model_shape": {"hidden": [32], "head_hidden": 16},
                                "progress": {"iteration": 0}, "eval": []})
    return str(path)
