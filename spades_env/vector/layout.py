"""The batched engine's state layout and its memory: what both backends index, and the sizing
that refuses a batch before it is allocated.

- Every seat's observation is kept as a uint8 row of ``ROW`` bytes (``OBS_SIZE`` padded to a
  multiple of 8, so rows gather as int64 words): 0/1 flags, and the counts behind
  ``tricks_won`` and ``trick_number`` (divided by 13 on output). The team-relative scores, bags
  and target, the ``SIDE`` columns, come from a float32 side table.
- A hand is ``HAND_STEPS`` decisions; each ended hand leaves one int64 score record of
  ``HIST_WIDTH`` columns (``HIST_FIELDS``) per game.
"""

from __future__ import annotations

import os

import torch

from ..cards import NUM_ACTIONS, NUM_CARDS
from ..compact import COMPACT_SIZE
from ..observation import OBS_SIZE, OFFSETS

HAND_STEPS = 4 + NUM_CARDS  # decisions in one hand without Blind Nil: 4 bids + 52 cards
ROW = -(-OBS_SIZE // 8) * 8  # bytes per seat row of the uint8 buffer, padded to gather as int64
TRICKS_WON = OFFSETS["tricks_won"]  # (start, end) of the trick counts, divided by 13 on output
TRICK_NUMBER = OFFSETS["trick_number"][0]  # the trick number, divided by 13 on output
SIDE = (OFFSETS["scores"][0], OFFSETS["target"][1])  # scores, bags, target: contiguous floats
assert OFFSETS["bags"] == (SIDE[0] + 2, SIDE[0] + 4) and OFFSETS["target"][0] == SIDE[0] + 4

# Columns of a per-hand score record (int64 rows of ``SpadesVectorEnv._hist``): dealer, 4 bids,
# 4 tricks, then 9 fields for team 0 and the same 9 for team 1 (as ``rules.TeamScore``).
HIST_FIELDS = (
    "dealer", "bid0", "bid1", "bid2", "bid3", "tricks0", "tricks1", "tricks2", "tricks3",
    "contract", "contract_points", "made", "bags", "nil_points", "bag_penalty", "hand_points",
    "total", "bags_after",
)
HIST_COLUMN = {name: i for i, name in enumerate(HIST_FIELDS)}
TEAM_FIELDS = 9
TEAM0 = HIST_COLUMN["contract"]  # first per-team column; team t's field f is at TEAM0 + 9 t + f
HIST_WIDTH = TEAM0 + 2 * TEAM_FIELDS

# hands_per_episode / max_hands bound (the C kernel holds them as int64; far beyond any game)
MAX_HANDS_LIMIT = 10 ** 9


def bytes_per_game(copy: bool = True, hands_per_episode: int | None = None,
                   obs_format: str = "float32") -> int:
    """Memory one game of a ``SpadesVectorEnv`` takes when built (bytes, int): the state tensors
    (every seat's uint8 observation row, hands, masks, the action log, the first 8 score records),
    the index constants sized by ``num_envs``, and one step's outputs. The score records grow by
    216 bytes per game for each hand beyond 8 that the longest running game reaches. With
    ``obs_format="compact"`` an observation output is ``COMPACT_SIZE`` bytes instead of
    ``4 * OBS_SIZE``."""
    obs_bytes = COMPACT_SIZE if obs_format == "compact" else 4 * OBS_SIZE
    cap = 8 if hands_per_episode is None else min(8, int(hands_per_episode))
    state = (4 * ROW + 4 * 5 * 4 + NUM_ACTIONS + ROW + 4 * NUM_CARDS + 8 * NUM_CARDS + 16
             + 8 * (4 + 4 + 4 + 16) + 1 + 8 * 4 + 8 * 2 * 2 + 8 + 8 * HAND_STEPS
             + 8 * HIST_WIDTH * cap + 8 + 8 * 4 * 2 + 8)  # ... the kernel's bit masks
    if not copy:
        state += obs_bytes + 4 * 4 + 3  # reused obs, rewards and flags
    consts = 9 + 4 + 4 + 16 + 1 + 8 + 8
    outputs = obs_bytes + NUM_ACTIONS + 8 + 4 * 4 + 3
    return state + consts + outputs


def available_memory(device: torch.device) -> tuple[int | None, str]:
    """Bytes a new env may still use on ``device`` and where that figure comes from: free GPU
    memory for CUDA; on the CPU the least of the memory the OS reports available
    (``MemAvailable``, else the physical memory) and what the process's address-space and data
    limits (``ulimit -v`` / ``-d``) leave. ``(None, "")`` when nothing can be measured."""
    if device.type == "cuda":
        free, _total = torch.cuda.mem_get_info(device)
        return int(free), "free memory on " + str(device)
    found: list[tuple[int, str]] = []
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    found.append((int(line.split()[1]) * 1024, "memory available (MemAvailable)"))
    except (OSError, ValueError, IndexError):
        pass
    if not found:
        try:
            found.append((os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"),
                          "physical memory"))
        except (ValueError, OSError, AttributeError):
            pass
    try:
        import resource
        used = {}
        try:
            with open("/proc/self/status") as f:
                for line in f:
                    if line.startswith(("VmSize:", "VmData:")):
                        used[line.split(":")[0]] = int(line.split()[1]) * 1024
        except (OSError, ValueError, IndexError):
            pass
        for lim, key, what in ((resource.RLIMIT_AS, "VmSize", "address-space limit (ulimit -v)"),
                               (resource.RLIMIT_DATA, "VmData", "data limit (ulimit -d)")):
            soft = resource.getrlimit(lim)[0]
            if soft != resource.RLIM_INFINITY and soft >= 0:
                found.append((max(0, soft - used.get(key, 0)), "what the " + what + " leaves"))
    except (ImportError, OSError, ValueError):
        pass
    if not found:
        return None, ""
    return min(found)


__all__ = ["HAND_STEPS", "ROW", "TRICKS_WON", "TRICK_NUMBER", "SIDE", "HIST_FIELDS",
           "HIST_COLUMN", "TEAM_FIELDS", "TEAM0", "HIST_WIDTH", "MAX_HANDS_LIMIT",
           "bytes_per_game", "available_memory"]
