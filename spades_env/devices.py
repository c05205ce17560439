"""The one check of a torch device argument, for every place that accepts one
(``SpadesVectorEnv(device=...)``, ``CheckpointBot(device=...)``, ``make_bot(..., device=...)``, the
trainer's ``device`` field).

Only ``cpu`` and ``cuda`` (``cuda:N``) are supported: the batched engine and the network are
tested on those. ``mps``, ``xpu``, ``meta`` and every other torch device type are refused by name,
and a CUDA device must be present (CUDA available, index below the device count) before anything
is built, so that a bad device is never reported as a bad file or as torch's ``AssertionError``
later.
torch is imported only when a device is checked.
"""

from __future__ import annotations

__all__ = ["check_device", "SUPPORTED_DEVICES"]

SUPPORTED_DEVICES = ("cpu", "cuda")
"""the torch device types accepted (``cuda`` with an optional index, ``cuda:1``)."""


def check_device(device, what: str = "device", present: bool = True):
    """``device`` (a name such as ``"cpu"``, ``"cuda:1"``, or a ``torch.device``) as a checked
    ``torch.device``.

    Args:
        what: how to name the argument in messages (``"device"``, ``"--device"``).
        present: also require the device to exist on this machine (CUDA available, index below
            ``torch.cuda.device_count()``); False checks the name only (a config written for
            another machine).
    Returns:
        the ``torch.device``.
    Raises:
        ValueError: not a device name, a device type other than cpu/cuda, or a CUDA device this
            machine does not have; the message names ``what`` and the value.
    """
    import torch
    if isinstance(device, torch.device):
        d = device
    elif isinstance(device, str):
        try:
            d = torch.device(device)
        except (RuntimeError, ValueError, TypeError):
            raise ValueError(f"{what} must be a torch device: cpu, cuda or cuda:N, got "
                             f"{device[:80]!r}") from None
    else:
        raise ValueError(f"{what} must be a torch device name such as 'cpu' or 'cuda', got "
                         f"{type(device).__name__} {str(device)[:40]!r}")
    if d.type not in SUPPORTED_DEVICES:
        raise ValueError(f"{what} must be cpu, cuda or cuda:N, got {str(device)!r} (device type "
                         f"{d.type!r} is not supported)")
    if d.type == "cpu" and d.index not in (None, 0):
        raise ValueError(f"{what} {str(device)!r}: the CPU device has no index {d.index}; use cpu")
    if present and d.type == "cuda":
        if not torch.cuda.is_available():
            raise ValueError(f"{what} {str(device)!r}: CUDA is not available on this machine "
                             f"(use cpu)")
        count = torch.cuda.device_count()
        if d.index is not None and d.index >= count:
            raise ValueError(f"{what} {str(device)!r}: this machine has {count} CUDA device(s) "
                             f"(cuda:0..cuda:{count - 1})")
    return d
