"""Checkpoint files: atomic writes, safe loads, clear errors.

A checkpoint is a ``torch.save``d dict with only tensors and plain Python values (so it loads with
``torch.load(..., weights_only=True)``):

| key          | content                                                                   |
|--------------|---------------------------------------------------------------------------|
| format       | ``"spades_env.ppo_checkpoint"`` (rejects foreign files)                    |
| version      | ``FORMAT_VERSION``                                                         |
| config       | ``training.config.Args`` as a dict                                         |
| model        | the ``Agent`` state dict                                                   |
| model_shape  | ``{"hidden": [...], "head_hidden": int}``                                  |
| optimizer    | Adam state dict (absent in a shipped, stripped checkpoint)                 |
| progress     | ``{"iteration", "decisions", "stage", ...}`` step counts                   |
| rng          | python/numpy/torch RNG states (training only)                              |
| env          | environment state for an exact resume (training only)                      |
| pool         | opponent-pool snapshots (training only)                                    |
| eval         | evaluation results (list of dicts)                                         |
"""

from __future__ import annotations

import os
import pickle
import tempfile
import zipfile

import torch

FORMAT_TAG = "spades_env.ppo_checkpoint"
FORMAT_VERSION = 1


def save_checkpoint(path: str, payload: dict) -> None:
    """Write ``payload`` (tag and version added) to ``path`` atomically (temp file + os.replace)."""
    d = os.path.dirname(os.path.abspath(path))
    os.makedirs(d, exist_ok=True)
    data = {"format": FORMAT_TAG, "version": FORMAT_VERSION, **payload}
    fd, tmp = tempfile.mkstemp(prefix=".tmp_", suffix=".pt", dir=d)
    try:
        with os.fdopen(fd, "wb") as f:
            torch.save(data, f)
            f.flush()
            os.fsync(f.fileno())
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600; give the usual file mode
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def load_checkpoint(path: str, map_location="cpu") -> dict:
    """Load and check a checkpoint with ``torch.load(weights_only=True)``.

    Raises:
        FileNotFoundError: no such file.
        ValueError: not a torch file, corrupt/truncated, a foreign torch file (no spades_env
            checkpoint tag) or an unsupported version; the message names the path.
    """
    if not os.path.isfile(path):
        raise FileNotFoundError(f"no checkpoint at {path!r}")
    try:
        data = torch.load(path, map_location=map_location, weights_only=True)
    except (RuntimeError, pickle.UnpicklingError, zipfile.BadZipFile, EOFError, OSError,
            ValueError, KeyError, AttributeError, TypeError) as e:
        raise ValueError(f"{path}: not a readable spades_env checkpoint "
                         f"({type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''})"
                         ) from None
    if not isinstance(data, dict) or data.get("format") != FORMAT_TAG:
        raise ValueError(f"{path}: not a spades_env PPO checkpoint (missing format tag "
                         f"{FORMAT_TAG!r})")
    if data.get("version") != FORMAT_VERSION:
        raise ValueError(f"{path}: checkpoint version {data.get('version')!r} is not supported "
                         f"(this code reads version {FORMAT_VERSION})")
    for key in ("model", "model_shape", "config"):
        if key not in data:
            raise ValueError(f"{path}: corrupt checkpoint, missing {key!r}")
    return data


def build_agent(data: dict, device="cpu"):
    """Make an ``Agent`` from loaded checkpoint data and load its weights.

    Raises:
        ValueError: the weights do not fit the recorded network shape.
    """
    from .model import Agent
    shape = data["model_shape"]
    agent = Agent(hidden=shape["hidden"], head_hidden=shape["head_hidden"]).to(device)
    try:
        agent.load_state_dict(data["model"])
    except (RuntimeError, KeyError, TypeError) as e:
        raise ValueError(f"corrupt checkpoint: weights do not match the network ({e})") from None
    agent.eval()
    return agent


__all__ = ["save_checkpoint", "load_checkpoint", "build_agent", "FORMAT_TAG", "FORMAT_VERSION"]
