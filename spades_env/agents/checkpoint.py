"""Checkpoint files for play: checked loading of a trained policy, with clear errors.

A checkpoint is a ``torch.save``d dict with only tensors and plain Python values (so it loads with
``torch.load(..., weights_only=True)``). Training (``training.checkpoint``) writes it atomically;
this module reads it, for ``make_bot("checkpoint:PATH")``, the arena, the play app and training's
resume alike:

| key          | content                                                                   |
|--------------|---------------------------------------------------------------------------|
| format       | ``"spades_env.ppo_checkpoint"`` (``FORMAT_TAG``; rejects foreign files)    |
| version      | ``FORMAT_VERSION``                                                         |
| config       | the training configuration (``spades_env.training.config.Args``) as a dict |
| model        | the ``Agent`` state dict                                                   |
| model_shape  | ``{"hidden": [...], "head_hidden": int, "obs_size": int, "critic_hidden": [...]}`` (``Agent`` keyword arguments; no ``obs_size``: 575, observation version 1) |
| optimizer    | Adam state dict (absent in a shipped, stripped checkpoint)                 |
| progress     | ``{"iteration", "decisions", "stage", ...}`` step counts                   |
| rng, env, pool | training state for an exact resume (absent in a shipped checkpoint)      |
| eval         | evaluation results (list of dicts)                                         |

What a load checks, in order, before anything is built from the file (every failure is a
``ValueError`` naming the file):

1. the file is a zip archive (torch's format) of stored records whose CRC-32 all match
   (``zipfile``; torch itself never checks them, so a flipped bit would load silently);
2. ``torch.load(weights_only=True)``: no code runs; any error of the unpickler is mapped;
3. no tensor claims more elements than its storage holds (a zero-stride tensor in a small file
   could otherwise ask for gigabytes when copied);
4. the format tag and version; ``config`` a mapping whose ``rules`` is a rules mapping (``Rules.parse``);
5. ``model_shape``: the keyword arguments of ``Agent``, widths in range (``check_widths``) and the
   whole network under ``MAX_PARAMS``;
6. ``model``: exactly the names, shapes and dtypes of that network (computed on the ``meta``
   device, nothing allocated) and finite values.
"""

from __future__ import annotations

import inspect
import os
import zipfile

try:
    import torch
except ImportError:  # the base install has no torch: say what to install
    raise ImportError("spades_env.agents (trained policies, checkpoint bots) needs PyTorch, which is "
                      "not installed: pip install 'spades_env[torch]' (or torch>=2.2)",
                      name="torch") from None

from spades_env.devices import check_device
from spades_env.observation import OBS_SIZE, OBS_SIZE_V1, OBS_SIZE_V2, OBS_SIZES

from .model import MAX_PARAMS, MAX_WIDTH, Agent, network_params

FORMAT_TAG = "spades_env.ppo_checkpoint"
FORMAT_VERSION = 1


def check_widths(name: str, value):
    """One network width field of ``model_shape``: ``head_hidden`` an int in 1..``MAX_WIDTH``;
    ``hidden`` / ``critic_hidden`` a list of at most 16 such ints (``hidden`` not empty). Returns
    the value as an int or a list of ints.

    Raises:
        ValueError: ``NAME must be ..., got VALUE``.
    """
    def ok(x):
        return type(x) is int and 1 <= x <= MAX_WIDTH
    if name == "head_hidden":
        if not ok(value):
            raise ValueError(f"head_hidden must be an int in 1..{MAX_WIDTH}, got {str(value)[:40]}")
        return int(value)
    if not isinstance(value, (list, tuple)) or len(value) > 16 or not all(ok(x) for x in value) \
            or (name == "hidden" and not value):
        raise ValueError(f"{name} must be a list of at most 16 ints in 1..{MAX_WIDTH}, got "
                         f"{str(value)[:60]}")
    return [int(x) for x in value]


def checkpoint_error(path, why: str) -> ValueError:
    return ValueError(f"{path}: {why}")


def _check_zip(f, path) -> None:
    """The zip layer: stored records only, every CRC-32 right."""
    try:
        with zipfile.ZipFile(f) as z:
            infos = z.infolist()
            if not infos:
                raise checkpoint_error(path, "not a readable spades_env checkpoint (empty archive)")
            for info in infos:
                if info.compress_type != zipfile.ZIP_STORED:
                    raise checkpoint_error(path, f"not a spades_env checkpoint (record {info.filename!r} is "
                                     f"compressed; torch writes stored records)")
            bad = z.testzip()
    except zipfile.BadZipFile:
        raise checkpoint_error(path, "not a readable spades_env checkpoint (not a torch zip archive)") \
            from None
    except ValueError:
        raise
    except Exception as e:  # truncated records, odd headers: zlib/struct/EOF/OS errors
        raise checkpoint_error(path, f"corrupt checkpoint ({type(e).__name__}: {e})") from None
    if bad is not None:
        raise checkpoint_error(path, f"corrupt checkpoint: record {bad!r} fails its CRC-32 check (the file was "
                         f"damaged after it was written)")


MAX_NODES = 200_000  # dicts, lists, tuples and leaves check_tensors walks, repeats included


def check_tensors(obj, path, where: str = "", depth: int = 0, _budget=None) -> None:
    """Every tensor in ``obj`` (nested dicts/lists) is a plain strided tensor whose elements fit
    in its storage: a zero-stride (expanded) tensor of shape (200M, 4) in a 1 MB file is refused
    before anything copies it. At most ``MAX_NODES`` values are walked, a value reached twice
    counting twice: a small pickle that shares one list two ways at each of 40 levels (2**40
    paths) is refused at once instead of walked for ever.

    Raises:
        ValueError: naming ``path`` and the place of the tensor; or naming ``path`` when the
            nesting is deeper than 64 or holds more than ``MAX_NODES`` values.
    """
    if _budget is None:
        _budget = [MAX_NODES]
    _budget[0] -= 1
    if _budget[0] < 0:
        raise checkpoint_error(path, f"corrupt checkpoint: more than {MAX_NODES} values (counting shared "
                         f"ones each time they are reached), at {where or 'top'}")
    if depth > 64:
        raise checkpoint_error(path, f"corrupt checkpoint: nested too deeply at {where or 'top'}")
    if isinstance(obj, torch.Tensor):
        if obj.layout != torch.strided or obj.is_quantized:
            raise checkpoint_error(path, f"corrupt checkpoint: {where} is not a dense tensor")
        need = obj.numel() * obj.element_size()
        have = obj.untyped_storage().nbytes() - obj.storage_offset() * obj.element_size()
        if need > have:
            raise checkpoint_error(path, f"corrupt checkpoint: {where} has shape {tuple(obj.shape)} "
                             f"({need} bytes) over a storage of {have} bytes")
    elif isinstance(obj, dict):
        for k, v in obj.items():
            check_tensors(v, path, f"{where}.{k}" if where else str(k), depth + 1, _budget)
    elif isinstance(obj, (list, tuple)):
        for i, v in enumerate(obj):
            check_tensors(v, path, f"{where}[{i}]", depth + 1, _budget)


def load_checkpoint(path: str, map_location="cpu") -> dict:
    """Load and check a checkpoint (steps 1-6 of the module docstring).

    Raises:
        FileNotFoundError: no such file.
        ValueError: anything else: unreadable, not a torch zip, a damaged record (CRC), a pickle
            that is not weights-only, a foreign torch file (no spades_env tag), an unsupported
            version, bad metadata or weights; the message names the path.
    """
    if not os.path.lexists(path):
        raise FileNotFoundError(f"no checkpoint at {path!r}")
    if not os.path.isfile(path):
        raise checkpoint_error(path, "not a file")
    try:
        f = open(path, "rb")
    except OSError as e:
        raise checkpoint_error(path, f"cannot read the checkpoint: {e.strerror or e}") from None
    with f:
        _check_zip(f, path)
        f.seek(0)
        try:
            data = torch.load(f, map_location=map_location, weights_only=True)
        except Exception as e:  # noqa: BLE001 - any unpickler failure is a bad file
            msg = str(e).splitlines()[0] if str(e) else ""
            raise checkpoint_error(path, f"not a readable spades_env checkpoint ({type(e).__name__}: "
                             f"{msg[:200]})") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT_TAG:
        raise checkpoint_error(path, f"not a spades_env PPO checkpoint (missing format tag {FORMAT_TAG!r})")
    if data.get("version") != FORMAT_VERSION:
        raise checkpoint_error(path, f"checkpoint version {data.get('version')!r} is not supported (this code "
                         f"reads version {FORMAT_VERSION})")
    try:
        check_tensors(data, path)
    except RecursionError:
        raise checkpoint_error(path, "corrupt checkpoint: nested too deeply") from None
    for key in ("model", "model_shape", "config"):
        if key not in data:
            raise checkpoint_error(path, f"corrupt checkpoint, missing {key!r}")
    cfg = data["config"]
    if not isinstance(cfg, dict) or not all(isinstance(k, str) for k in cfg):
        raise checkpoint_error(path, f"corrupt checkpoint: config must be a mapping of field names, got "
                         f"{type(cfg).__name__}")
    if "rules" in cfg:
        from spades_env.rules import PRESETS, Rules
        try:
            ok = isinstance(cfg["rules"], str) and len(cfg["rules"]) <= 400 \
                and Rules.parse(cfg["rules"]) is not None
        except ValueError:
            ok = False
        if not ok:
            raise checkpoint_error(path, f"stored config: rules must be a rules mapping (a preset: "
                                         f"{', '.join(PRESETS)}, and fields), "
                             f"got {str(cfg['rules'])[:60]!r}")
    for key, kind in (("progress", dict), ("eval", list)):
        if key in data and not isinstance(data[key], kind):
            raise checkpoint_error(path, f"corrupt checkpoint: {key} must be a {kind.__name__}")
    check_model(data, path)
    return data


def trained_rules(data: dict):
    """The ``Rules`` a loaded checkpoint was trained under (its config's ``rules``; standard for
    checkpoints written before the field existed). ``data`` comes from ``load_checkpoint``, which
    checked the value."""
    from spades_env.rules import Rules
    return Rules.parse(data["config"].get("rules", "standard"))


# ============================================================================= network
def agent_kwargs(shape, path="checkpoint") -> dict:
    """``model_shape`` checked and coerced into ``Agent`` keyword arguments.

    Every key must be a parameter of ``Agent``; ``hidden`` and ``head_hidden`` are required; the
    widths (``hidden``, ``head_hidden``, ``critic_hidden``) are checked by ``check_widths`` and the
    whole network must stay under ``MAX_PARAMS``.

    Raises:
        ValueError: naming ``path`` and the bad key.
    """
    if not isinstance(shape, dict):
        raise checkpoint_error(path, f"corrupt checkpoint: model_shape must be a mapping, got "
                         f"{type(shape).__name__}")
    # ``init`` is how a network is built (build_agent passes False), not part of its shape
    allowed = [n for n in inspect.signature(Agent.__init__).parameters
               if n not in ("self", "init")]
    out = {}
    for k, v in shape.items():
        if k not in allowed:
            raise checkpoint_error(path, f"corrupt checkpoint: model_shape has {k!r}, which the network does "
                             f"not take (it takes {allowed})")
        try:
            if k in ("hidden", "head_hidden", "critic_hidden"):
                v = check_widths(k, v)
            elif not isinstance(v, (bool, int, float, str)):
                raise ValueError(f"{k} must be a plain value, got {type(v).__name__}")
        except ValueError as e:
            raise checkpoint_error(path, f"corrupt checkpoint: model_shape: {e}") from None
        out[k] = v
    for k in ("hidden", "head_hidden"):
        if k not in out:
            raise checkpoint_error(path, f"corrupt checkpoint: model_shape has no {k!r}")
    # the observation width: checkpoints from before observation version 2 have no obs_size and
    # read the 575 floats of version 1 (the first 575 of version 2: same pieces, same offsets)
    out.setdefault("obs_size", OBS_SIZE_V1)
    if type(out["obs_size"]) is not int or out["obs_size"] not in OBS_SIZES:
        raise checkpoint_error(path, f"corrupt checkpoint: model_shape: obs_size must be "
                                     f"{OBS_SIZE_V1} (observation version 1), {OBS_SIZE_V2} "
                                     f"(version 2) or {OBS_SIZE} (version 3), got "
                                     f"{out['obs_size']!r}")
    n = network_params(out["hidden"], out["head_hidden"], out.get("critic_hidden", ()))
    if n > MAX_PARAMS:
        raise checkpoint_error(path, f"corrupt checkpoint: model_shape asks for a network of {n} parameters "
                         f"(at most {MAX_PARAMS})")
    return out


def expected_state(kwargs: dict) -> dict:
    """Names, shapes and dtypes of the state dict of ``Agent(**kwargs)``, computed on the
    ``meta`` device (no memory, no initialisation work): ``{name: (shape tuple, dtype)}``."""
    with torch.device("meta"):  # initialised on meta: no memory, no random numbers, ~2 ms
        ref = Agent(**kwargs)
    return {k: (tuple(v.shape), v.dtype) for k, v in ref.state_dict().items()}


def check_state_dict(sd, expected: dict, path, where: str) -> None:
    """``sd`` has exactly the names, shapes and dtypes of ``expected`` and finite values.

    Raises:
        ValueError: ``PATH: WHERE: ...`` naming the first bad tensor (shape errors say "do not
            match").
    """
    if not isinstance(sd, dict):
        raise checkpoint_error(path, f"corrupt checkpoint: {where} must be a mapping of tensors")
    missing = [k for k in expected if k not in sd]
    extra = [k for k in sd if k not in expected]
    if missing or extra:
        raise checkpoint_error(path, f"corrupt checkpoint: {where}: weights do not match the network of "
                         f"model_shape (missing {missing[:4]}, unexpected {extra[:4]})")
    for k, (shape, dtype) in expected.items():
        t = sd[k]
        if not isinstance(t, torch.Tensor):
            raise checkpoint_error(path, f"corrupt checkpoint: {where}.{k} is not a tensor")
        if tuple(t.shape) != shape or t.dtype != dtype:
            raise checkpoint_error(path, f"corrupt checkpoint: {where}: weights do not match the network of "
                             f"model_shape: {k} is {tuple(t.shape)} {t.dtype}, the network needs "
                             f"{shape} {dtype}")
        if t.is_floating_point() and not bool(torch.isfinite(t).all()):
            raise checkpoint_error(path, f"corrupt checkpoint: {where}.{k} holds NaN or infinite values")


def check_model(data: dict, path="checkpoint") -> dict:
    """Check ``model_shape`` and ``model`` of loaded checkpoint data without building anything;
    return the ``Agent`` keyword arguments.

    A ``model_shape`` without ``obs_size`` (written before observation version 2) takes the
    input width of the weights' first layer when it is a known observation size (575, 679 or 711).

    Raises:
        ValueError: naming ``path`` and the bad key or tensor.
    """
    shape, model = data.get("model_shape"), data.get("model")
    if isinstance(shape, dict) and "obs_size" not in shape and isinstance(model, dict):
        first = model.get("trunk.0.weight" if shape.get("hidden") else "play_head.0.weight")
        if isinstance(first, torch.Tensor) and first.dim() == 2 \
                and int(first.shape[1]) in OBS_SIZES:
            shape = {**shape, "obs_size": int(first.shape[1])}
    kwargs = agent_kwargs(shape, path)
    check_state_dict(model, expected_state(kwargs), path, "model")
    return kwargs


def build_agent(data: dict, device="cpu", path="checkpoint"):
    """Make an ``Agent`` from loaded checkpoint data and load its weights (checked first by
    ``check_model``, so a bad file allocates nothing).

    Raises:
        ValueError: a bad or absent ``device`` (``spades_env.devices.check_device``, checked
            first), bad ``model_shape`` or weights that do not fit it, or non-finite weights.
    """
    device = check_device(device, "device")
    kwargs = check_model(data, path)
    agent = Agent(**kwargs, init=False).to(device)  # every weight is loaded next
    agent.load_state_dict(data["model"])
    agent.eval()
    return agent


__all__ = ["FORMAT_TAG", "FORMAT_VERSION", "load_checkpoint", "check_tensors", "agent_kwargs",
           "expected_state", "check_state_dict", "check_model", "build_agent", "check_widths",
           "trained_rules"]
