"""Fixtures of tests in several folders. Nothing here imports torch at collection: the tests that
need no torch run without it (a test that needs torch imports it inside, with
``pytest.importorskip("torch")``; ``.venv/bin/nox -s notorch`` runs the engine, env, bot and docs
tests where torch is not installed)."""

import pytest


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """A small stripped checkpoint (plays, cannot be resumed)."""
    torch = pytest.importorskip("torch")
    from spades_env.agents.model import Agent
    from spades_env.training.checkpoint import save_checkpoint

    torch.manual_seed(0)
    agent = Agent(hidden=[32], head_hidden=16)
    path = tmp_path_factory.mktemp("tiny") / "tiny.pt"
    save_checkpoint(str(path), {"config": {"name": "t"}, "model": agent.state_dict(),
                                "model_shape": {"hidden": [32], "head_hidden": 16},
                                "progress": {"iteration": 0}, "eval": []})
    return str(path)
