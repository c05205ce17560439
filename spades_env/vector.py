"""Batched Spades engine: ``num_envs`` games stepped together with torch ops (CPU or CUDA).

``SpadesVectorEnv`` plays the ``standard`` rules of ``docs/rules.md`` (with the switches
``target_score``, ``loss_threshold``, ``forced_spade_lead_breaks``, ``bag_limit``, ``bag_penalty``,
``nil_bonus``) in every game of a batch, and returns, for every game, the observation and legal
action mask of the seat to act. The observation is exactly ``spades_env.observation.encode`` of
that seat's ``PlayerView`` (same ``PIECES``/``OFFSETS`` table, float32, bit for bit): a policy
trained on one engine plays on the other. Action ids are ``spades_env.cards``' (0..51 cards,
52 + b bid b, 52 = Nil).

**Blind Nil is not supported here** (``Rules(blind_nil=True)`` raises ``ValueError``): use the
scalar engine (``spades_env.SpadesGame`` / the AEC env) for it.

API (N = ``num_envs``)
----------------------
| call | returns |
|---|---|
| ``reset(seed=None, holder=None, dealer=None)`` | ``obs (N,679) f32, mask (N,68) bool, seat (N,)``
| ``step(actions (N,))`` | ``obs, mask, seat, rewards (N, 4) float32, dones (N,) bool, info`` |
| ``get_game(i)`` | a ``SpadesGame`` equal to game i's state (for scalar bots: ``.view(seat)``) |
| ``observe(i, seat)`` | any seat's observation of game i, ``(679,)`` float32 numpy |
| ``state_dict()`` / ``load_state_dict(d)`` | exact save / restore (generator included) |

``info`` always holds ``terminated`` and ``truncated`` ``(N,)`` bool; on a hand's last step also
``hand_points`` ``(N, 2)``, ``winner`` ``(N,)`` (-1: none), ``final_scores``/``final_bags``
``(N, 2)`` (the totals after the hand, before any reset), ``hands`` (lazy list of
``(env, HandResult, start bags)`` for every game) and ``final`` (``FinalResults`` of the games
that ended, or None). Rewards are by absolute seat (team of seat s is ``s % 2``).

Lockstep schedule
-----------------
Without Blind Nil every hand is exactly 56 decisions (4 bids then 52 cards), so all games of the
batch are always at the same point of their hand: step ``t`` of a hand is a bid for ``t < 4`` and
the ``(t - 4) % 4``-th card of trick ``(t - 4) // 4`` otherwise. Only *who* acts, *what* is held
and the scores differ between games. The phase, trick position and trick number are therefore
plain Python ints, and scoring, game-end checks and auto-resets run only on a hand's last step.

Observations are kept incrementally: a uint8 buffer of shape ``(num_envs, 4, ROW)`` holds the
observation of every seat (0/1 flags, and the counts behind ``tricks_won`` and ``trick_number``);
each step writes only the entries that changed (a card play: 9 entries per game; a finished
trick: the 16 trick entries and the led suit), and the acting seat's rows are gathered (as int64
words) and converted to float32 (counts divided by 13 in float32, bit-equal to the reference
encoder's ``k / 13.0``), with the team-relative scores, bags and target taken from a small float32
side table. Seat-relative index tables (``(seat - observer) % 4``) are precomputed from
``OFFSETS``.

Backends: ``backend="torch"`` does all of the above with tensor ops (CPU or CUDA). On the CPU the
default is ``"native"``: the same buffers updated by a C kernel (``spades_env/_native/
vector_kernel.c``, built at first use by ``spades_env.native``), one loop over the games per step
(bids, card play, trick completion, masks, rendering the observations), per hand start (deal,
observation rebuild) and per hand end (scoring, game end, rewards). The torch path stays the
reference: both are checked step by step against the scalar engine, and against each other (same
deals: card ``perm[k]`` of a stable argsort of uniform floats from the one generator goes to seat
``(first + k) % 4``). Without a C compiler ``"auto"`` falls back to ``"torch"``.

Speed notes (CPU): use one torch thread on a shared machine (``torch.set_num_threads(1)``; two
threads contending with other processes ran ~20x slower here). ``copy=False`` (reused output
buffers) and ``validate=False`` are the fast settings: a fresh multi-MB observation tensor per
step costs page faults unless glibc keeps freed memory (``benchmarks/bench_vector.py --mallopt``).
The native backend's ``threads=2`` uses both cores of a 2-core machine when they are free, and
adapts to the load (``adapt_threads=True``, the default): every 0.02 to 2 s of steps it times 2
threads against 1 side by side and runs the faster, because OpenMP threads that wait for a core a
busy process holds made a fixed ``threads=2`` 0.04-0.3x as fast as 1 thread on a loaded 2-core
machine (``benchmarks/bench_kernel_load.py``, ``benchmarks/results/kernel_load.md``). Which
setting where: ``threads=1`` inside training (its workers and torch already use the cores) and
for many envs stepped in parallel processes; ``threads=2`` (adapting) for one env process on a
machine that other programs may share; ``adapt_threads=False`` only on cores kept free for this
process (a dedicated machine, ``taskset``), where it saves the probes' few per cent.
Figures (``benchmarks/results/vector.md``, 2-core x86_64): the native backend with 2 threads at
1024-4096 games makes 10-12.8 M decisions/s with a random legal action drawn per game, 19-24x
OpenSpiel's random loop without observations; the env step alone is 24-31x. With 1 thread it is
about 14x, and the torch backend on the CPU about 2-4x. The rate is bounded by writing each
decision's 679-float (2.7 KB) observation (the figures above are for the 575-float version 1).

Episodes and rewards (the AEC env's definitions, ``spades_v1``)
----------------------------------------------------------------
- An episode is a full game to the target (docs/rules.md, End of the game): *terminated*; or
  ``hands_per_episode`` hands (if set): *terminated*, no winner; or ``max_hands`` hands (default
  100): *truncated* (not a win or a loss).
- ``reward="hand"``: at the end of every hand each seat gets (its team's hand points - the other
  team's hand points) / 100. ``reward="game"``: +1 / -1 to the winning / losing seats when a game
  is won; at a ``hands_per_episode`` end +1 / -1 / 0 to the team ahead / behind / level in game
  total; 0 for a truncation and on every other step.
- A finished game is reset at once inside ``step`` (new random dealer, new deal, scores 0); the
  returned observation is the new game's. Its final results (scores, bags, winner, truncation, and
  every hand's score table) are in ``info["final"]``.

Determinism: every deal and first dealer come from one ``torch.Generator`` on the CPU seeded with
``seed``, so the same seed gives the same games on every device. The deals are not the scalar
engine's RNG stream; ``get_game(i)`` rebuilds a ``SpadesGame`` equal to game ``i``'s state.

Version history: 1 (first version); 1.3 observation version 2 (679 floats: the Blind Nil exchange
piece, all 0 here, and the voids a spade led before spades were broken reveals; states of
earlier versions are refused by ``load_state_dict``, their observation rows are 576 bytes);
1.2 int64 score records (int32 ones are widened on load);
1.1 native CPU backend, stable argsort for the deal
(identical deals except for ties between two of a game's 52 floats).
"""

from __future__ import annotations

import ctypes
import os
import time

import numpy as np

try:
    import torch
except ImportError:  # the base install has no torch: say what to install
    raise ImportError("spades_env.vector (the batched engine) needs PyTorch, which is not "
                      "installed: pip install 'spades_env[torch]' (or torch>=2.2)",
                      name="torch") from None

from .cards import BID_OFFSET, MAX_BID, NUM_ACTIONS, NUM_CARDS, NUM_TRICKS
from .devices import check_device
from .engine import SpadesGame
from .observation import BID_SLOTS, OBS_SIZE, OBS_VERSION, OFFSETS
from .rules import HandResult, Rules, TeamScore

HAND_STEPS = 4 + NUM_CARDS  # decisions in one hand without Blind Nil: 4 bids + 52 cards
_TW = OFFSETS["tricks_won"]
_TN = OFFSETS["trick_number"][0]
_SIDE = (OFFSETS["scores"][0], OFFSETS["target"][1])  # scores, bags, target: contiguous
assert OFFSETS["bags"] == (_SIDE[0] + 2, _SIDE[0] + 4) and OFFSETS["target"][0] == _SIDE[0] + 4
ROW = -(-OBS_SIZE // 8) * 8  # bytes per seat row of the uint8 buffer, padded to gather as int64

# Columns of a per-hand score record (int64 rows of ``SpadesVectorEnv._hist``): dealer, 4 bids,
# 4 tricks, then 9 fields for team 0 and the same 9 for team 1 (as ``rules.TeamScore``).
_HIST_FIELDS = (
    "dealer", "bid0", "bid1", "bid2", "bid3", "tricks0", "tricks1", "tricks2", "tricks3",
    "contract", "contract_points", "made", "bags", "nil_points", "bag_penalty", "hand_points",
    "total", "bags_after",
)
_H = {name: i for i, name in enumerate(_HIST_FIELDS)}
_TEAM0 = _H["contract"]  # first per-team field; team t's field f is at _TEAM0 + 9 * t + f
_TEAM_FIELDS = 9
_HIST_WIDTH = _TEAM0 + 2 * _TEAM_FIELDS


# hands_per_episode / max_hands bound (the C kernel holds them as int64; far beyond any game)
MAX_HANDS_LIMIT = 10 ** 9


def _check_seed(seed, none_ok: bool) -> None:
    """A deal-generator seed: an int in 0..2**64-1 (``torch.Generator.manual_seed``'s range)."""
    if seed is None and none_ok:
        return
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)):
        raise ValueError(f"seed must be an int in 0..2**64-1{' or None' if none_ok else ''}, "
                         f"got {seed!r}")
    if not 0 <= int(seed) < 2 ** 64:
        raise ValueError(f"seed must be an int in 0..2**64-1, got {seed}")


def bytes_per_game(copy: bool = True, hands_per_episode: int | None = None) -> int:
    """Memory one game of a ``SpadesVectorEnv`` takes when built (bytes, int): the state tensors
    (every seat's uint8 observation row, hands, masks, the action log, the first 8 score records),
    the index constants sized by ``num_envs``, and one step's outputs. The score records grow by
    216 bytes per game for each hand beyond 8 that the longest running game reaches."""
    cap = 8 if hands_per_episode is None else min(8, int(hands_per_episode))
    state = (4 * ROW + 4 * 5 * 4 + NUM_ACTIONS + ROW + 4 * NUM_CARDS + 8 * NUM_CARDS + 16
             + 8 * (4 + 4 + 4 + 16) + 1 + 8 * 4 + 8 * 2 * 2 + 8 + 8 * HAND_STEPS
             + 8 * _HIST_WIDTH * cap + 8)
    if not copy:
        state += 4 * OBS_SIZE + 4 * 4 + 3  # reused obs, rewards and flags
    consts = 9 + 4 + 4 + 16 + 1 + 8 + 8
    outputs = 4 * OBS_SIZE + NUM_ACTIONS + 8 + 4 * 4 + 3
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


def _check_size(n: int, device: torch.device, copy: bool, hands_per_episode) -> None:
    """Refuse, before allocating anything, a batch that does not fit in memory."""
    per = bytes_per_game(copy, hands_per_episode)
    need = n * per
    avail, what = available_memory(device)
    if avail is not None and need > avail:
        raise ValueError(f"num_envs={n} needs about {need / 2 ** 30:.2f} GiB ({per} bytes per "
                         f"game) on {device}, more than the {avail / 2 ** 30:.2f} GiB of {what}; "
                         f"use at most about {avail // per} games")


def _seat_index_tables():
    """Flat indices into the ``(4 * ROW,)`` per-game buffer, by acting seat (numpy int64).

    Row ``p`` holds, for the four observers ``o``, the start of the slot that seat ``p`` occupies in
    ``o``'s observation (relative seat ``(p - o) % 4``).
    """
    o = OFFSETS
    play = np.zeros((4, 9), dtype=np.int64)
    void = np.zeros((4, 4), dtype=np.int64)
    bid = np.zeros((4, 4), dtype=np.int64)
    won = np.zeros((4, 4), dtype=np.int64)
    onehot = np.zeros((4, 4, 4), dtype=np.uint8)  # [seat, observer, relative seat]
    for p in range(4):
        play[p, 0] = p * ROW + o["hand"][0]
        for obs in range(4):
            r = (p - obs) & 3
            base = obs * ROW
            play[p, 1 + obs] = base + o["played"][0] + 52 * r
            play[p, 5 + obs] = base + o["trick"][0] + 52 * r
            void[p, obs] = base + o["voids"][0] + 4 * r
            bid[p, obs] = base + o["bids"][0] + BID_SLOTS * r
            won[p, obs] = base + o["tricks_won"][0] + r
            onehot[p, obs, r] = 1
    led = np.array([obs * ROW + o["led_suit"][0] for obs in range(4)], dtype=np.int64)
    return play, void, bid, won, onehot, led


class FinalResults:
    """Final results of the games that ended in one ``step`` (held as tensors, decoded on demand).

    Attributes:
        env_ids: ``(k,)`` int64, the env index of each finished game.
        scores, bags: ``(k, 2)`` int64 team totals / bag counts at the end.
        winner: ``(k,)`` int64, winning team 0/1, or -1 (truncated, or a hands_per_episode end).
        truncated: ``(k,)`` bool.
        num_hands: ``(k,)`` int64, hands played.
        table: ``(k, H, 27)`` int64 per-hand score records (first ``num_hands[j]`` rows valid).

    ``results()`` turns them into dicts with ``HandResult`` score tables (same as the scalar
    engine's ``hand_results``).
    """

    def __init__(self, env_ids, scores, bags, winner, truncated, num_hands, table, rules):
        self.env_ids = env_ids
        self.scores = scores
        self.bags = bags
        self.winner = winner
        self.truncated = truncated
        self.num_hands = num_hands
        self.table = table
        self.rules = rules

    def __len__(self) -> int:
        return int(self.env_ids.shape[0])

    def results(self) -> list[dict]:
        """One dict per finished game: ``env``, ``scores``, ``bags``, ``winner`` (None when the
        game has no winner), ``truncated``, ``num_hands``, ``hand_results`` (``HandResult`` list).
        """
        ids = self.env_ids.tolist()
        sc = self.scores.tolist()
        bg = self.bags.tolist()
        wn = self.winner.tolist()
        tr = self.truncated.tolist()
        nh = self.num_hands.tolist()
        table = self.table.cpu().numpy()
        out = []
        for j, i in enumerate(ids):
            out.append({
                "env": i, "scores": sc[j], "bags": bg[j],
                "winner": None if wn[j] < 0 else wn[j], "truncated": bool(tr[j]),
                "num_hands": nh[j],
                "hand_results": [_hand_result(table[j, h], h) for h in range(nh[j])],
            })
        return out


def _score_records(dealer, bids, tricks, bags_before, scores_before, r: Rules):
    """Score one hand in every game with tensor ops (docs/rules.md, Scoring a hand; the formulas of
    ``rules.score_hand`` without Blind Nil). ``dealer`` (N,), ``bids``/``tricks`` (N, 4) by seat,
    ``bags_before``/``scores_before`` (N, 2) by team, all int64. Returns ``(records (N, 27),
    hand_points (N, 2), scores after (N, 2), bags after (N, 2))``, int64."""
    n = bids.shape[0]
    b = bids.view(n, 2, 2)  # [:, k, team] = seat 2k + team
    k = tricks.view(n, 2, 2)
    nil = b == 0
    zero = torch.zeros_like(b)
    contract = torch.where(nil, zero, b).sum(1)  # (N, 2)
    taken = torch.where(nil, zero, k).sum(1)
    nil_ok = nil & (k == 0)
    nil_points = (nil_ok.long() - (nil & ~nil_ok).long()).sum(1) * r.nil_bonus
    nil_bags = torch.where(nil, k, zero).sum(1)
    has = contract > 0
    made = has & (taken >= contract)
    over = taken - contract
    contract_points = torch.where(made, 10 * contract + over,
                                  torch.where(has, -10 * contract, torch.zeros_like(contract)))
    bags_hand = nil_bags + torch.where(made, over, torch.zeros_like(over))
    total_bags = bags_before + bags_hand
    pens = torch.div(total_bags, r.bag_limit, rounding_mode="floor")
    bag_pen = -r.bag_penalty * pens
    bags_after = total_bags - pens * r.bag_limit
    hand_points = contract_points + nil_points + bag_pen
    scores = scores_before + hand_points
    made_code = torch.where(has, made.long(), torch.full_like(contract, -1))
    team = torch.stack([contract, contract_points, made_code, bags_hand, nil_points, bag_pen,
                        hand_points, scores, bags_after], 2)  # (N, 2, 9)
    rec = torch.cat([dealer[:, None], bids, tricks, team.reshape(n, -1)], 1)
    return rec, hand_points, scores, bags_after


def _outcome(scores, r: Rules):
    """``rules.game_outcome`` for every game: ``scores`` (N, 2) int64 team totals after a hand;
    returns (N,) int64: the winning team 0/1, or -1 to play on."""
    reached = scores >= r.target_score
    if r.loss_threshold is not None:
        lost = (scores <= r.loss_threshold) & ~reached
    else:
        lost = torch.zeros_like(reached)
    count = (reached | lost).sum(1)
    s0, s1 = scores[:, 0], scores[:, 1]
    one = count == 1
    both = count == 2
    win0 = (one & (reached[:, 0] | lost[:, 1])) | (both & (s0 > s1))
    win1 = (one & (reached[:, 1] | lost[:, 0])) | (both & (s1 > s0))
    return torch.where(win0, 0, torch.where(win1, 1, -1))


def _hand_result(rec, hand_number: int) -> HandResult:
    """``HandResult`` from one int64 score record (row of the history tensor)."""
    rec = [int(x) for x in rec]
    bids = tuple(rec[_H["bid0"]:_H["bid0"] + 4])
    tricks = tuple(rec[_H["tricks0"]:_H["tricks0"] + 4])
    teams = []
    for t in (0, 1):
        f = rec[_TEAM0 + _TEAM_FIELDS * t:_TEAM0 + _TEAM_FIELDS * (t + 1)]
        made = None if f[2] < 0 else bool(f[2])
        teams.append(TeamScore(
            team=t, bids=(bids[t], bids[t + 2]), blind=(False, False),
            tricks=(tricks[t], tricks[t + 2]), contract=f[0], contract_points=f[1], made=made,
            bags=f[3], nil_points=f[4], bag_penalty=f[5], hand_points=f[6], total=f[7],
            bags_after=f[8]))
    return HandResult(hand_number, rec[_H["dealer"]], bids, (False,) * 4, tricks, tuple(teams))


class _HandList:
    """Lazy list of ``(env index, HandResult, start bags)`` for the hands that ended in a step
    (``info["hands"]``); decoded from tensors on first access."""

    def __init__(self, env_ids, table_rows, hand_numbers):
        self._ids = env_ids
        self._rows = table_rows
        self._nums = hand_numbers
        self._items = None

    def _load(self):
        if self._items is None:
            rows = self._rows.cpu().numpy()
            nums = self._nums.tolist()
            self._items = [(i, _hand_result(rows[j], nums[j]), (0, 0) if nums[j] == 0 else None)
                           for j, i in enumerate(self._ids.tolist())]
        return self._items

    def __len__(self):
        return int(self._ids.shape[0])

    def __iter__(self):
        return iter(self._load())

    def __getitem__(self, k):
        return self._load()[k]


def _take(table: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
    """Rows ``table[idx]`` for a 1-d index (``embedding`` is the fastest row gather on CPU)."""
    if table.device.type == "cpu":
        return torch.nn.functional.embedding(idx, table)
    return table.index_select(0, idx)


class _Consts:
    """Index and value tables on the env's device (built once from ``OFFSETS``).

    Index tables are flat positions in a game's ``(4 * ROW,)`` buffer (observer-major):
    - ``play[p * 52 + card]`` (9,): seat p's hand entry of the card, then the played and trick
      entries of that card in each observer's view (relative seat ``(p - o) % 4``).
    - ``void[p * 4 + suit]`` (4,), ``bid[p]`` (4,), ``won[p]`` (4,): seat p's slot per observer.
    - ``led[suit]`` (4,): the led-suit entry per observer.
    - ``onehot[s]`` (16,): one-hot of ``(s - o) % 4`` for each observer o (dealer, to_act).
    """

    def __init__(self, n: int, dev: torch.device):
        play, void, bid, won, onehot, led = _seat_index_tables()
        t = lambda a: torch.as_tensor(a, device=dev)  # noqa: E731
        cards = np.arange(NUM_CARDS)
        suit_of = cards // 13
        self.play = t((play[:, None, :] + cards[None, :, None]).reshape(4 * NUM_CARDS, 9))
        self.void = t((void[:, None, :] + np.arange(4)[None, :, None]).reshape(16, 4))
        self.bid = t(bid)
        self.won = t(won)
        self.led = t(led[None, :] + np.arange(4)[:, None])  # (4 suits, 4 observers)
        self.onehot = t(onehot.reshape(4, 16))
        self.suit_of = t(suit_of)
        # card strength in a trick led in suit `led`: spade 32+, led suit 16+, else rank only
        val = np.zeros((4, NUM_CARDS), dtype=np.int64)
        for ls in range(4):
            val[ls] = (suit_of == 3) * 32 + (suit_of == ls) * 16 + cards % 13
        self.card_val = t(val.reshape(-1))
        self.suit_cards = t(suit_of[None, :] == np.arange(4)[:, None])
        self.non_spades = t(suit_of != 3)
        bid_mask = np.zeros(NUM_ACTIONS, dtype=bool)
        bid_mask[BID_OFFSET:BID_OFFSET + MAX_BID + 1] = True
        self.bid_mask = t(bid_mask)
        self.row4 = torch.arange(n, device=dev) * 4
        self.seats = torch.arange(4, device=dev)
        self.deal_seat = t(cards % 4)
        u8 = dict(dtype=torch.uint8, device=dev)
        self.play_val = torch.ones((n, 9), **u8)
        self.play_val[:, 0] = 0
        self.ones4 = torch.ones((n, 4), **u8)
        self.zeros4 = torch.zeros((n, 4), **u8)
        self.zeros16 = torch.zeros((n, 16), **u8)
        self.false1 = torch.zeros((n, 1), dtype=torch.bool, device=dev)
        self.one1 = torch.ones((n, 1), dtype=torch.int64, device=dev)

    def tensors(self):
        return [v for v in vars(self).values() if isinstance(v, torch.Tensor)]


class SpadesVectorEnv:
    """``num_envs`` Spades games in lockstep, as torch tensors on ``device``.

    Args:
        num_envs: games in the batch (>= 1). A batch that does not fit is refused before anything
            is allocated (``ValueError`` stating the memory needed: ``bytes_per_game()`` times
            ``num_envs``, against ``available_memory(device)``).
        device: ``"cpu"``, ``"cuda"``, ``"cuda:1"``... or a ``torch.device``
            (``spades_env.devices.check_device``: cpu or cuda only, a CUDA device must be
            present; else ``ValueError``).
        seed: int in 0..2**64-1; seeds the one CPU ``torch.Generator`` that draws every deal and
            first dealer.
        rules: a ``Rules`` (default ``standard``); ``blind_nil=True`` raises ``ValueError``.
        hands_per_episode: end an episode after this many hands (terminated, no winner), or
            ``None`` (at most ``MAX_HANDS_LIMIT``).
        max_hands: end a game after this many hands (a truncation), or ``None`` for no cap (at
            most ``MAX_HANDS_LIMIT``).
        reward: ``"hand"`` or ``"game"`` (see the module docstring).
        validate: check every action against the mask (one host sync per step); an illegal action
            raises ``ValueError`` naming the game and the reason, before any state changes.
            ``False`` skips that check: the actions must be legal, else the games' state is
            undefined. It is never memory-unsafe: the native kernel still refuses an id that is
            not a bid while bidding or not a card in play (the same ``ValueError``, nothing
            changed); the torch path relies on torch's index checks, which may raise
            ``IndexError`` after part of the step was applied, or let an id through.
        copy: return fresh output tensors (default). ``False`` returns the env's own
            observation and mask buffers, overwritten by the next ``step`` (on the native backend
            the all-zero rewards and flags of a step that ends no hand are reused too, and zeroed
            again every step); the seat is always fresh.
        backend: ``"torch"`` (tensor ops, any device), ``"native"`` (CPU only: the per-step work
            fused in one C loop over the games, ``spades_env.native``; same buffers, same
            results) or ``"auto"`` (default: ``"native"`` on the CPU when the C kernel builds,
            else ``"torch"``). The choice is in ``self.backend``.
        threads: native backend only: OpenMP threads sharing the loop over games (default 1;
            more pays from about 1024 games when cores are free, see ``adapt_threads``; ignored
            when the kernel was built without OpenMP, see ``self.threads``). The kernel shares
            torch's OpenMP runtime, whose thread pool does not survive ``fork``: in a process
            forked after a multi-threaded kernel ran, kernels and torch run on one thread.
        adapt_threads: with ``threads > 1``, time ``threads`` against 1 thread side by side
            every 0.02 to 2 s of steps and run the faster (default; ``spades_env.native.
            ThreadChooser``): OpenMP threads that wait for a busy core made 2 threads slower
            than 1 on a loaded machine, down to 1/80. ``False``: always ``threads`` (for a
            machine or set of cores kept free for this process).

    Raises:
        ValueError: bad arguments (the message names the argument), or ``backend="native"`` on a
            non-CPU device. ``spades_env.native.NativeUnavailable`` (a ``RuntimeError``):
            ``backend="native"`` and the C kernel cannot be built here.
    """

    def __init__(self, num_envs: int, device="cpu", seed: int = 0, rules: Rules | None = None,
                 hands_per_episode: int | None = None, max_hands: int | None = 100,
                 reward: str = "hand", validate: bool = True, copy: bool = True,
                 backend: str = "auto", threads: int = 1, adapt_threads: bool = True):
        if isinstance(num_envs, bool) or not isinstance(num_envs, (int, np.integer)) \
                or num_envs < 1:
            raise ValueError(f"num_envs must be an int >= 1, got {num_envs!r}")
        rules = rules if rules is not None else Rules()
        if not isinstance(rules, Rules):
            raise ValueError(f"rules must be a spades_env.Rules, got {type(rules).__name__}")
        if rules.blind_nil:
            raise ValueError("SpadesVectorEnv does not implement Blind Nil "
                             "(Rules(blind_nil=True)); use the scalar engine "
                             "(SpadesGame / spades_v1) for that variant")
        for name, v in (("hands_per_episode", hands_per_episode), ("max_hands", max_hands)):
            if v is not None and (isinstance(v, bool) or not isinstance(v, (int, np.integer))
                                  or not 1 <= v <= MAX_HANDS_LIMIT):
                raise ValueError(f"{name} must be None or an int in 1..{MAX_HANDS_LIMIT}, got "
                                 f"{v!r}")
        if reward not in ("hand", "game"):
            raise ValueError(f"reward must be 'hand' or 'game', got {reward!r}")
        _check_seed(seed, none_ok=False)
        if backend not in ("auto", "torch", "native"):
            raise ValueError(f"backend must be 'auto', 'torch' or 'native', got {backend!r}")
        if isinstance(threads, bool) or not isinstance(threads, (int, np.integer)) \
                or not 1 <= threads <= 256:
            raise ValueError(f"threads must be an int in 1..256, got {threads!r}")
        if not isinstance(adapt_threads, bool):
            raise ValueError(f"adapt_threads must be a bool, got {adapt_threads!r}")
        self.device = check_device(device, "device", present=False)
        if backend == "native" and self.device.type != "cpu":
            raise ValueError(f"backend='native' runs on the CPU only, not on {self.device}")
        check_device(self.device, "device")  # present on this machine
        _check_size(int(num_envs), self.device, bool(copy), hands_per_episode)
        self.num_envs = n = int(num_envs)
        self.rules = rules
        self.hands_per_episode = None if hands_per_episode is None else int(hands_per_episode)
        self.max_hands = None if max_hands is None else int(max_hands)
        self.reward = reward
        self.validate = bool(validate)
        self.copy = bool(copy)
        self.seed = int(seed)
        self._gen = torch.Generator(device="cpu")
        self._gen.manual_seed(self.seed)
        self._build_consts()
        dev = self.device
        i64 = dict(dtype=torch.int64, device=dev)
        # every seat's observation as uint8: 0/1 flags, and the counts tricks_won and
        # trick_number (divided by 13 on output); scores, bags and target live in _side
        self._obs4 = torch.zeros((n, 4 * ROW), dtype=torch.uint8, device=dev)
        self._side = torch.zeros((n, 4, 5), dtype=torch.float32, device=dev)  # by observer
        self._mask = torch.zeros((n, NUM_ACTIONS), dtype=torch.bool, device=dev)
        self._obs_out = None if self.copy else \
            torch.zeros((n, OBS_SIZE), dtype=torch.float32, device=dev)
        self._gather = torch.zeros((n, ROW // 8), dtype=torch.int64, device=dev)
        self._hands = torch.zeros((n, 4 * NUM_CARDS), dtype=torch.bool, device=dev)
        self._owner = torch.zeros((n, NUM_CARDS), **i64)
        self._voids = torch.zeros((n, 16), dtype=torch.bool, device=dev)
        self._bids = torch.zeros((n, 4), **i64)
        self._tricks = torch.zeros((n, 4), **i64)
        self._trick = torch.zeros((n, 4), **i64)  # cards of the current trick, in play order
        self._trick_obs = torch.zeros((n, 16), **i64)  # its entries in the trick blocks
        self._broken = torch.zeros(n, dtype=torch.bool, device=dev)
        self._dealer = torch.zeros(n, **i64)
        self._cur = torch.zeros(n, **i64)
        self._leader = torch.zeros(n, **i64)
        self._led = torch.zeros(n, **i64)
        self._scores = torch.zeros((n, 2), **i64)
        self._bags = torch.zeros((n, 2), **i64)
        self._hand_count = torch.zeros(n, **i64)
        self._actions = torch.zeros((n, HAND_STEPS), **i64)  # this hand's moves, for get_game
        # per-hand score records of the running games; grows (doubling) when a game gets longer
        cap = 8 if self.hands_per_episode is None else min(8, self.hands_per_episode)
        self._hist = torch.zeros((n, cap, _HIST_WIDTH), dtype=torch.int64, device=dev)
        self._t = 0
        self._serial = 0  # hands dealt (all games deal together)
        self._mirror: dict = {}  # env -> (serial, cached SpadesGame, moves applied to it)
        self._started = False
        self._game_ids = torch.zeros(n, **i64)  # games started in each env (for get_game seeds)
        self._make_views()
        self._kernel = None
        self._threads = 1
        self._chooser = None  # native.ThreadChooser when threads > 1 adapt to the load
        self._adapt = adapt_threads
        self._backend_request = backend
        self.backend = self._pick_backend(backend, int(threads))

    # ------------------------------------------------------------------ set-up
    def _build_consts(self) -> None:
        self._c = _Consts(self.num_envs, self.device)

    def _pick_backend(self, backend, threads: int) -> str:
        if backend == "torch" or self.device.type != "cpu":
            return "torch"
        from . import native
        try:
            self._kernel = native.load_kernel()
        except native.NativeUnavailable:
            if backend == "native":
                raise
            return "torch"
        if self._kernel.sp_openmp() and not native.openmp_unsafe():
            self._threads = threads
            if threads > 1:
                native.note_openmp_use()
                if self._adapt:
                    self._chooser = native.ThreadChooser(threads)
        if not self.copy:  # reused outputs: obs, zero rewards, done, terminated, truncated
            n = self.num_envs
            self._lean = (self._obs_out, torch.zeros((n, 4), dtype=torch.float32),
                          torch.zeros(n, dtype=torch.bool), torch.zeros(n, dtype=torch.bool),
                          torch.zeros(n, dtype=torch.bool))
        self._bind_native()
        native.track(self)
        return "native"

    def _bind_native(self) -> None:
        """Point the kernel's ``sp_env`` struct at this env's tensors (after building the env, and
        after unpickling or deep-copying it: the tensors are new then)."""
        from . import native
        o, r = OFFSETS, self.rules
        ptr = lambda x: x.data_ptr()  # noqa: E731  (tensors allocated once, updated in place)
        self._spenv = native.SpEnv(
            n=self.num_envs, row=ROW, obs_size=OBS_SIZE,
            flb=int(self.rules.forced_spade_lead_breaks), o_phase=o["phase"][0],
            o_hand=o["hand"][0], o_played=o["played"][0], o_trick=o["trick"][0],
            o_led=o["led_suit"][0], o_bids=o["bids"][0], o_won=o["tricks_won"][0],
            o_voids=o["voids"][0], o_broken=o["spades_broken"][0], o_tn=_TN,
            o_to_act=o["to_act"][0], o_side=_SIDE[0],
            cur=ptr(self._cur), actions=ptr(self._actions), bids=ptr(self._bids),
            trick_obs=ptr(self._trick_obs), leader=ptr(self._leader), led=ptr(self._led),
            trick=ptr(self._trick), tricks=ptr(self._tricks), obs4=ptr(self._obs4),
            hands=ptr(self._hands), voids=ptr(self._voids), broken=ptr(self._broken),
            mask=ptr(self._mask), side=ptr(self._side),
            o_looked=o["looked"][0], o_dealer=o["dealer"][0], target=r.target_score,
            bag_limit=r.bag_limit, bag_penalty=r.bag_penalty, nil_bonus=r.nil_bonus,
            has_loss=int(r.loss_threshold is not None), loss_threshold=r.loss_threshold or 0,
            hands_per_episode=self.hands_per_episode or 0, max_hands=self.max_hands or 0,
            reward_game=int(self.reward == "game"), owner=ptr(self._owner),
            dealer=ptr(self._dealer), scores=ptr(self._scores), bags=ptr(self._bags),
            hand_count=ptr(self._hand_count),
            target_feature=float(np.float32(r.target_score / 500.0)), threads=self._threads)
        self._spenv_ref = ctypes.byref(self._spenv)
        if not self.copy:
            self._lean_ptrs = [x.data_ptr() for x in self._lean[1:]]

    @property
    def threads(self) -> int:
        """OpenMP threads the native kernel uses (1 on the torch backend, without OpenMP, or in a
        process forked after a multi-threaded kernel ran: libgomp does not survive a fork); with
        ``adapt_threads`` the most it uses (``threads_now`` is the current choice)."""
        return self._threads

    @property
    def threads_now(self) -> int:
        """The thread count the kernel runs with between probes: ``threads``, or 1 while
        ``adapt_threads`` finds 1 thread faster (a busy machine)."""
        return self._threads if self._chooser is None else self._chooser.best

    def _serial_after_fork(self) -> None:
        self._threads = 1
        self._chooser = None
        if self._kernel is not None:
            self._spenv.threads = 1

    def _make_views(self) -> None:
        """Views of the state tensors written every step (made once: slicing costs Python time;
        made again after unpickling, which does not keep views tied to their base)."""
        n, o = self.num_envs, OFFSETS
        self._side_rows = self._side.view(-1, 5)
        self._obs4v = v = self._obs4.view(n, 4, ROW)
        self._v_rows = self._obs4.view(-1, ROW).view(torch.int64)  # (4N, ROW / 8)
        self._v_broken = v[:, :, o["spades_broken"][0]]
        self._v_trick_number = v[:, :, o["trick_number"][0]]
        self._v_to_act = v[:, :, o["to_act"][0]:o["to_act"][1]]
        self._v_phase_bid = v[:, :, o["phase"][0]]
        self._v_phase_play = v[:, :, o["phase"][0] + 2]
        self._mask_cards = self._mask[:, :NUM_CARDS]
        self._mask_rest = self._mask[:, NUM_CARDS:]
        self._hands_rows = self._hands.view(-1, NUM_CARDS)

    _NATIVE_ATTRS = ("_kernel", "_spenv", "_spenv_ref", "_lean_ptrs")
    _VIEWS = ("_side_rows", "_obs4v", "_v_rows", "_v_broken", "_v_trick_number", "_v_to_act",
              "_v_phase_bid", "_v_phase_play", "_mask_cards", "_mask_rest", "_hands_rows")

    def __getstate__(self) -> dict:
        """Pickle / deep-copy support: the ctypes handles are dropped and rebuilt on load."""
        drop = self._NATIVE_ATTRS + self._VIEWS
        return {k: v for k, v in self.__dict__.items() if k not in drop}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._make_views()
        self._kernel = None
        if self.backend == "native":
            from . import native
            try:
                self._kernel = native.load_kernel()
            except native.NativeUnavailable:
                if self._backend_request == "native":
                    raise
                self.backend, self._threads = "torch", 1  # "auto": the same state, torch ops
                return
            if native.openmp_unsafe():
                self._threads, self._chooser = 1, None
            self._bind_native()
            native.track(self)

    # ------------------------------------------------------------------ public API
    def reset(self, seed: int | None = None, holder=None, dealer=None):
        """Start a new game in every env (first dealer drawn at random, scores 0).

        Args:
            seed: reseed the deal generator first (int), or ``None`` to continue its stream.
            holder: optional first deal, ``(N, 52)`` ints: the seat (0..3) dealt each card id;
                each seat must get 13 cards. Later hands are drawn as usual.
            dealer: optional ``(N,)`` first dealers (seats), only together with ``holder``.
        Returns:
            ``(obs, action_mask, seat)``: ``(N, OBS_SIZE)`` float32, ``(N, 68)`` bool, ``(N,)``
            int64, for the seat to act in each game.
        Raises:
            ValueError: a bad seed, or a ``holder``/``dealer`` of the wrong shape or values.
        """
        n = self.num_envs
        _check_seed(seed, none_ok=True)
        if (holder is None) != (dealer is None):
            raise ValueError("give both holder and dealer (a given first deal), or neither")
        if holder is not None:
            try:
                holder, dealer = torch.as_tensor(holder), torch.as_tensor(dealer)
            except (TypeError, ValueError, RuntimeError, OverflowError) as e:
                raise ValueError(f"holder and dealer must be integer seats (arrays of ints): "
                                 f"{e}") from None
            if holder.dtype.is_floating_point or dealer.dtype.is_floating_point \
                    or holder.dtype == torch.bool or dealer.dtype == torch.bool:
                raise ValueError(f"holder and dealer must hold integer seats, got dtypes "
                                 f"{holder.dtype} and {dealer.dtype}")
            holder = holder.to(device=self.device, dtype=torch.int64)
            dealer = dealer.to(device=self.device, dtype=torch.int64)
            if holder.shape != (n, NUM_CARDS) or dealer.shape != (n,):
                raise ValueError(f"holder must have shape ({n}, 52) and dealer ({n},), got "
                                 f"{tuple(holder.shape)} and {tuple(dealer.shape)}")
            if bool(((holder < 0) | (holder > 3)).any()) or \
                    bool(((dealer < 0) | (dealer > 3)).any()):
                raise ValueError("holder and dealer values must be seats 0..3")
            counts = (holder[:, None, :] == self._c.seats[None, :, None]).sum(2)
            if bool((counts != NUM_TRICKS).any()):
                i = int((counts != NUM_TRICKS).any(1).nonzero()[0, 0])
                raise ValueError(f"each seat must be dealt 13 cards; env {i} has "
                                 f"{counts[i].tolist()}")
        if seed is not None:
            self.seed = int(seed)
            self._gen.manual_seed(self.seed)
        self._scores.zero_()
        self._bags.zero_()
        self._hand_count.zero_()
        self._hist.zero_()
        self._game_ids.zero_()
        if holder is None:
            self._dealer.copy_(torch.randint(4, (n,), generator=self._gen).to(self.device))
        else:
            self._dealer.copy_(dealer)
        self._start_hands(holder)
        self._started = True
        return self._output()

    def step(self, actions):
        """Apply ``actions[i]`` (an action id, see ``spades_env.cards``) in every game ``i``.

        Args:
            actions: ``(N,)`` ints (tensor, array or list), each legal in its game.
        Returns:
            ``(obs, action_mask, seat, rewards, dones, info)``: obs ``(N, OBS_SIZE)`` float32,
            mask ``(N, 68)`` bool and seat ``(N,)`` int64 of the next decision (of the new game
            where one ended); ``rewards`` ``(N, 4)`` float32 by absolute seat; ``dones`` ``(N,)``
            bool (episode ended: terminated or truncated). ``info`` always has ``"terminated"`` and
            ``"truncated"`` ``(N,)`` bool; on the step that ends a hand also ``"hand_points"``
            ``(N, 2)`` int64, ``"hands"`` (lazy list of ``(env, HandResult, start bags)``), and
            ``"final"`` (``FinalResults`` of the games that ended, or None).
        Raises:
            ValueError: wrong shape, or an illegal action (names the first bad game and why);
                nothing is changed then (with ``validate=True``).
            RuntimeError: ``step`` before ``reset``.
        """
        if not self._started:
            raise RuntimeError("call reset() before step()")
        n = self.num_envs
        try:
            a = torch.as_tensor(actions, device=self.device)
        except (OverflowError, RuntimeError, TypeError, ValueError) as e:
            raise ValueError(f"actions must be integer action ids 0..{NUM_ACTIONS - 1}: {e}") \
                from None
        if a.shape != (n,):
            raise ValueError(f"actions must have shape ({n},), got {tuple(a.shape)}")
        if a.dtype != torch.int64:
            if a.dtype.is_floating_point or a.dtype.is_complex or a.dtype == torch.bool \
                    or a.dtype == torch.uint64:
                raise ValueError(f"actions must be integer action ids (int8..int64, uint8..32), "
                                 f"got dtype {a.dtype}")
            a = a.long()
        t = self._t
        if self._kernel is not None:
            a = a.contiguous()
            ch = self._chooser
            if ch is None or t == HAND_STEPS - 1:  # a hand's end is mostly Python: not timed
                return self._step_native(a, t)
            self._spenv.threads = ch.next()
            t0 = time.perf_counter()
            try:
                out = self._step_native(a, t)
            except BaseException:
                self._spenv.threads = ch.best
                raise
            ch.record(time.perf_counter() - t0)
            self._spenv.threads = ch.best  # for the untimed calls (sample_actions...)
            return out
        if self.validate:
            self._check(a)
        if t == HAND_STEPS - 1:
            self._reserve_hist()  # before anything changes: may refuse for lack of memory
        c = self._c
        p = self._cur
        self._actions[:, t] = a
        obs = self._obs4
        if t < 4:  # ---------------------------------------------------- bidding
            bid = a - BID_OFFSET
            self._bids.scatter_(1, p[:, None], bid[:, None])
            idx = _take(c.bid, p)
            obs.scatter_(1, idx, c.zeros4)  # "not yet bid" slot off
            obs.scatter_(1, idx.add_((1 + bid)[:, None]), c.ones4)
            p.add_(1).bitwise_and_(3)
            if t == 3:  # bidding over: the player left of the dealer (= p now) leads
                self._leader.copy_(p)
                self._v_phase_bid.zero_()
                self._v_phase_play.fill_(1.0)
                self._lead_mask()
            self._t = t + 1
            return self._finish_step()
        # -------------------------------------------------------------------- play
        k = t - 4
        pos, j = k & 3, k >> 2
        pa = p * NUM_CARDS + a
        idx = _take(c.play, pa)  # (N, 9): hand entry, 4 played entries, 4 trick entries
        obs.scatter_(1, idx, c.play_val)
        self._trick_obs[:, 4 * pos:4 * pos + 4] = idx[:, 5:]
        self._hands.scatter_(1, pa[:, None], c.false1)
        suit = c.suit_of.index_select(0, a)
        if pos == 0:
            self._leader.copy_(p)
            self._led.copy_(suit)
            obs.scatter_(1, _take(c.led, suit), c.ones4)
            # a spade led before spades are broken: the leader held only spades, so it is void
            # in clubs, diamonds and hearts (observation version 2)
            lead_void = (suit == 3) & ~self._broken
            if bool(lead_void.any()):
                self._lead_voids(p, lead_void)
            if self.rules.forced_spade_lead_breaks:
                self._broken.logical_or_(suit == 3)
                self._v_broken.copy_(self._broken.view(-1, 1))
        else:
            led = self._led
            off = suit != led
            pl = p * 4 + led
            self._voids.scatter_(1, pl.view(-1, 1), off.view(-1, 1))
            obs.scatter_(1, _take(c.void, pl), off.view(-1, 1).to(torch.uint8).expand(n, 4))
            self._broken.logical_or_(off.logical_and_(suit == 3))
            self._v_broken.copy_(self._broken.view(-1, 1))
        self._trick[:, pos] = a
        if pos < 3:
            p.add_(1).bitwise_and_(3)
            self._follow_mask()
            self._t = t + 1
            return self._finish_step()
        # trick complete: the highest spade, else the highest card of the led suit (docs/rules.md)
        led = self._led
        value = c.card_val.index_select(0, (self._trick + led[:, None] * NUM_CARDS).view(-1))
        w = (self._leader + value.view(n, 4).argmax(1)).bitwise_and_(3)
        self._tricks.scatter_add_(1, w[:, None], c.one1)
        won = self._tricks.gather(1, w[:, None])[:, 0]
        obs.scatter_(1, _take(c.won, w), won.to(torch.uint8).view(-1, 1).expand(n, 4))
        obs.scatter_(1, self._trick_obs, c.zeros16)  # clear the trick blocks
        obs.scatter_(1, _take(c.led, led), c.zeros4)  # and the led suit
        self._v_trick_number.fill_(j + 1)
        p.copy_(w)
        self._leader.copy_(w)
        if j < NUM_TRICKS - 1:
            self._lead_mask()
            self._t = t + 1
            return self._finish_step()
        return self._end_hands()

    def get_game(self, i: int) -> SpadesGame:
        """A scalar ``SpadesGame`` equal to game ``i``'s current state (hands, bids, trick,
        scores, bags, dealer, hand number and the score tables of this game's earlier hands).

        The game is built once per hand (``SpadesGame.from_deal``) and cached; later calls in the
        same hand apply only the moves made since, and return a clone of the cached game: playing
        or editing the returned game never changes the env or a later ``get_game``. Its RNG (for
        deals after
        this hand) is seeded from ``(seed, i, game number)``; those deals are not the ones this
        env will draw. Full information: bots must act from ``view(seat)``.
        Raises:
            ValueError: ``i`` out of range. RuntimeError: before ``reset``.
        """
        if not self._started:
            raise RuntimeError("call reset() before get_game()")
        if isinstance(i, bool) or not isinstance(i, (int, np.integer)) \
                or not 0 <= i < self.num_envs:
            raise ValueError(f"env index must be an int in 0..{self.num_envs - 1}, got {i!r}")
        i = int(i)
        t = self._t
        cached = self._mirror.get(i)
        if cached is not None and cached[0] == self._serial and len(cached[1].moves) == cached[2] \
                and cached[2] <= t:
            g = cached[1]
            if cached[2] < t:
                for act in self._actions[i, cached[2]:t].tolist():
                    g.apply(act)
                self._mirror[i] = (self._serial, g, t)
            return g.clone()
        owner = self._owner[i].tolist()
        hands = [[c for c in range(NUM_CARDS) if owner[c] == s] for s in range(4)]
        nh = int(self._hand_count[i])
        g = SpadesGame.from_deal(
            hands, int(self._dealer[i]), self._scores[i].tolist(), self._bags[i].tolist(),
            self.rules, seed=np.random.default_rng([self.seed, i, int(self._game_ids[i])]))
        table = self._hist[i, :nh].cpu().numpy()
        g.hand_results = [_hand_result(table[h], h) for h in range(nh)]
        g.hand_number = nh
        for act in self._actions[i, :t].tolist():
            g.apply(act)
        self._mirror[i] = (self._serial, g, t)
        return g.clone()

    def observe(self, i: int, seat: int) -> np.ndarray:
        """Observation of any ``seat`` (acting or not) in game ``i``: ``(OBS_SIZE,)`` float32 numpy
        array, equal to ``observation.encode(get_game(i).view(seat))``."""
        if isinstance(seat, bool) or not isinstance(seat, (int, np.integer)) \
                or seat not in (0, 1, 2, 3):
            raise ValueError(f"seat must be an int in 0..3, got {seat!r}")
        if isinstance(i, bool) or not isinstance(i, (int, np.integer)) \
                or not 0 <= i < self.num_envs:
            raise ValueError(f"env index must be an int in 0..{self.num_envs - 1}, got {i!r}")
        if not self._started:
            raise RuntimeError("call reset() first")
        seat = int(seat)
        i = int(i)
        self._v_to_act[i] = _take(self._c.onehot, self._cur[i:i + 1]).view(4, 4)
        out = torch.empty((1, OBS_SIZE), dtype=torch.float32, device=self.device)
        rows = torch.tensor([4 * i + seat], device=self.device)
        self._render(rows, out)
        return out[0].cpu().numpy()

    def _step_native(self, a: torch.Tensor, t: int):
        """``step`` on the native backend (``a``: contiguous int64 ids)."""
        k, n = self._kernel, self.num_envs
        if self.validate:
            bad = k.sp_check(self._spenv_ref, a.data_ptr())
            if bad >= 0:
                self._illegal(int(bad), int(a[bad]))
        if t == HAND_STEPS - 1:
            self._reserve_hist()  # before anything changes: may refuse for lack of memory
            r = k.sp_step(self._spenv_ref, a.data_ptr(), t)
            if r < 0:
                self._refused(r, a)
            return self._end_hands()
        seat = torch.empty(n, dtype=torch.int64)
        if self.copy:
            obs = torch.empty((n, OBS_SIZE), dtype=torch.float32)
            r = k.sp_step_render(self._spenv_ref, a.data_ptr(), t, obs.data_ptr(),
                                 seat.data_ptr(), None, None, None, None)
            if r < 0:
                self._refused(r, a)
            self._t = t + 1
            z = torch.zeros(n, dtype=torch.bool)
            return obs, self._mask.clone(), seat, torch.zeros((n, 4), dtype=torch.float32), \
                z, {"terminated": torch.zeros_like(z), "truncated": torch.zeros_like(z)}
        # copy=False: the env's own obs and mask; the all-zero rewards and flags of a step
        # that ends no hand are reused too (re-zeroed in C each step)
        lean = self._lean
        r = k.sp_step_render(self._spenv_ref, a.data_ptr(), t, lean[0].data_ptr(),
                             seat.data_ptr(), *self._lean_ptrs)
        if r < 0:
            self._refused(r, a)
        self._t = t + 1
        return lean[0], self._mask, seat, lean[1], lean[2], \
            {"terminated": lean[3], "truncated": lean[4]}

    def sample_actions(self, generator: torch.Generator | None = None) -> torch.Tensor:
        """A uniformly random legal action for every game's pending decision: ``(N,)`` int64.

        The ``k``-th legal action id of each mask row with ``k = int(u * count)`` (float32),
        ``u = torch.rand(N, generator=generator)`` on the env's device (the same ids on both
        backends for the same ``generator`` state). For random opponents, exploration and
        benchmarks.

        A row with no legal action (impossible in a state the rules reach) gives -1.

        Raises:
            RuntimeError: before ``reset``. ValueError: ``generator`` is not ``None`` or a
                ``torch.Generator`` on the env's device.
        """
        if not self._started:
            raise RuntimeError("call reset() first")
        if generator is not None and (not isinstance(generator, torch.Generator)
                                      or generator.device.type != self.device.type):
            raise ValueError(f"generator must be None or a torch.Generator on {self.device}, got "
                             f"{generator!r}")
        n = self.num_envs
        u = torch.rand(n, generator=generator, device=self.device, dtype=torch.float32)
        if self._kernel is not None:
            out = torch.empty(n, dtype=torch.int64)
            self._kernel.sp_sample(self._spenv_ref, u.data_ptr(), out.data_ptr())
            return out
        mask = self._mask
        count = mask.sum(1, dtype=torch.int32)
        k = (u * count).int()
        pick = (mask.cumsum(1, dtype=torch.int32) > k[:, None]).int().argmax(1)
        return pick.masked_fill_(count == 0, -1)  # as the kernel

    def current(self):
        """``(obs, action_mask, seat)`` of the pending decision in every game."""
        if not self._started:
            raise RuntimeError("call reset() first")
        return self._output()

    @property
    def scores(self) -> torch.Tensor:
        """``(N, 2)`` int64 team totals of the running games (copy)."""
        return self._scores.clone()

    @property
    def bags(self) -> torch.Tensor:
        """``(N, 2)`` int64 team bag counts of the running games (copy)."""
        return self._bags.clone()

    @property
    def dealer(self) -> torch.Tensor:
        return self._dealer.clone()

    @property
    def hand_step(self) -> int:
        """Decisions taken in the current hand (0..55), the same in every game."""
        return self._t

    def memory_bytes(self) -> int:
        """Bytes of the env's state tensors (observation buffers included; each storage counted
        once, views of it not again)."""
        seen: dict[int, int] = {}
        for v in [*vars(self).values(), *getattr(self, "_lean", ()), *self._c.tensors()]:
            if isinstance(v, torch.Tensor):
                st = v.untyped_storage()
                seen[st.data_ptr()] = st.nbytes()
        return sum(seen.values())

    # ------------------------------------------------------------------ save / restore
    _STATE = ("_obs4", "_side", "_mask", "_hands", "_owner", "_voids", "_bids", "_tricks", "_trick",
              "_trick_obs", "_broken", "_dealer", "_cur", "_leader", "_led", "_scores", "_bags",
              "_hand_count",
              "_actions", "_hist", "_game_ids")

    def state_dict(self) -> dict:
        """Everything needed to continue exactly: CPU tensor copies, ints, and the generator."""
        d = {k: getattr(self, k).detach().cpu().clone() for k in self._STATE}
        d.update(format="spades_env.vector", version=1, obs_version=OBS_VERSION,
                 num_envs=self.num_envs, t=self._t,
                 started=self._started, seed=self.seed, gen=self._gen.get_state(),
                 rules=self.rules.to_dict(), hands_per_episode=self.hands_per_episode,
                 max_hands=self.max_hands, reward=self.reward)
        return d

    def load_state_dict(self, d: dict) -> None:
        """Restore ``state_dict`` output.

        The state is checked before anything changes: shapes, dtypes and index ranges, then that
        it is one the rules can reach (``_check_loaded``: the deal, the score records and totals,
        and every observation row, mask, hand, bid, trick and seat re-derived from the deal and
        this hand's action log on the reference path).

        Raises:
            ValueError: not a vector-env state, made for another batch size / rules / episode
                settings, or inconsistent (the message names the env and the tensor); the state
                is left unchanged.
        """
        if not isinstance(d, dict) or d.get("format") != "spades_env.vector" \
                or d.get("version") != 1:
            raise ValueError("not a spades_env.vector state dict (format/version tag missing)")
        if d.get("obs_version", 1) != OBS_VERSION:
            raise ValueError(f"state was saved with observation version {d.get('obs_version', 1)}"
                             f"; this spades_env uses version {OBS_VERSION} "
                             f"(spades_env.observation)")
        if d.get("num_envs") != self.num_envs:
            raise ValueError(f"state has {d.get('num_envs')} envs, this env has {self.num_envs}")
        if d.get("rules") != self.rules.to_dict() or d.get("reward") != self.reward or \
                d.get("hands_per_episode") != self.hands_per_episode or \
                d.get("max_hands") != self.max_hands:
            raise ValueError("state was saved with other rules / reward / episode settings")
        try:
            tensors = {k: torch.as_tensor(d[k]) for k in self._STATE}
            t = d["t"]
            if isinstance(t, bool) or not isinstance(t, (int, np.integer)):
                raise TypeError(f"hand step t must be an int, got {t!r}")
            t = int(t)
            started = d["started"]
            seed = int(d["seed"])
            gen = d["gen"]
            torch.Generator(device="cpu").set_state(gen)  # check it before changing anything
        except (KeyError, TypeError, ValueError, RuntimeError) as e:
            raise ValueError(f"corrupt vector-env state: {type(e).__name__}: {e}") from None
        if not isinstance(started, (bool, np.bool_)):
            raise ValueError(f"corrupt vector-env state: started must be a bool, got {started!r}")
        for k, v in tensors.items():
            cur = getattr(self, k)
            if k == "_hist":
                ok = v.dim() == 3 and v.shape[0] == self.num_envs and v.shape[1] >= 1 \
                    and v.shape[2] == _HIST_WIDTH and v.dtype in (torch.int32, torch.int64)
                want = f"({self.num_envs}, H >= 1, {_HIST_WIDTH}) torch.int64"
            else:
                ok = v.shape == cur.shape and v.dtype == cur.dtype
                want = f"{tuple(cur.shape)} {cur.dtype}"
            if not ok:
                raise ValueError(f"corrupt vector-env state: {k} has shape {tuple(v.shape)} "
                                 f"{v.dtype}, expected {want}")
        if not 0 <= t < HAND_STEPS:
            raise ValueError(f"corrupt vector-env state: hand step {t}")
        # values used as indices (by the C kernel too) must be in range
        limits = {"_cur": (0, 3), "_leader": (0, 3), "_led": (0, 3), "_dealer": (0, 3),
                  "_owner": (0, 3), "_bids": (-1, MAX_BID), "_tricks": (0, NUM_TRICKS),
                  "_trick": (0, NUM_CARDS - 1), "_trick_obs": (0, 4 * ROW - 1),
                  "_actions": (0, NUM_ACTIONS - 1), "_bags": (0, self.rules.bag_limit - 1),
                  "_hand_count": (0, tensors["_hist"].shape[1]), "_game_ids": (0, None)}
        for k, (lo, hi) in limits.items():
            v = tensors[k]
            if v.numel() and (int(v.min()) < lo or (hi is not None and int(v.max()) > hi)):
                raise ValueError(f"corrupt vector-env state: {k} values outside {lo}..{hi}")
        if not 0 <= seed < 2 ** 64:
            raise ValueError(f"corrupt vector-env state: seed {seed} outside 0..2**64-1")
        if started:
            self._check_loaded({k: v.cpu() for k, v in tensors.items()}, t)
        for k, v in tensors.items():
            if k == "_hist":
                # int64 since version 1.2 (int32 before: widened on load)
                self._hist = v.to(device=self.device, dtype=torch.int64).contiguous().clone()
            else:
                getattr(self, k).copy_(v)
        self._t = t
        self._serial += 1
        self._mirror.clear()
        self._started = bool(started)
        self.seed = seed
        self._gen.set_state(gen)

    # tensors that follow from the deal, the dealer, the totals and this hand's action log
    _DERIVED = ("_obs4", "_side", "_mask", "_hands", "_voids", "_bids", "_tricks", "_trick",
                "_trick_obs", "_broken", "_cur", "_leader", "_led", "_actions")

    def _check_loaded(self, tensors: dict, t: int) -> None:
        """Raise ``ValueError`` unless the (CPU) state ``tensors`` at hand step ``t`` is one the
        rules can reach, game by game: each seat dealt 13 cards; every score record the scoring
        of its bids and tricks, chained from 0-0 (dealers rotating, totals and bags carried, no
        hand ending the game or the episode before the last); the totals, bags and dealer
        following the last record; and every other tensor (observation rows, masks, hands, bids,
        tricks, voids, the current trick, whose turn...) equal to what the reference (torch)
        path computes by dealing the recorded deal and replaying this hand's action log, each
        action checked legal. Nothing is changed."""
        n, r = self.num_envs, self.rules

        def fail(i, why):
            raise ValueError(f"corrupt vector-env state: env {i}: {why}")

        owner = tensors["_owner"]
        counts = (owner[:, None, :] == torch.arange(4)[None, :, None]).sum(2)
        bad = (counts != NUM_TRICKS).any(1)
        if bool(bad.any()):
            i = int(bad.nonzero()[0, 0])
            fail(i, f"the deal gives the seats {counts[i].tolist()} cards, not 13 each")
        hist = tensors["_hist"].to(torch.int64)
        hc = tensors["_hand_count"]
        for name, cap in (("hands_per_episode", self.hands_per_episode),
                          ("max_hands", self.max_hands)):
            if cap is not None and bool((hc >= cap).any()):
                fail(int((hc >= cap).nonzero()[0, 0]), f"{int(hc.max())} hands played in a "
                     f"running game, {name} is {cap}")
        scores = torch.zeros((n, 2), dtype=torch.int64)
        bags = torch.zeros((n, 2), dtype=torch.int64)
        last_dealer = torch.zeros(n, dtype=torch.int64)
        for h in range(int(hc.max()) if n else 0):
            live = hc > h
            row = hist[:, h]
            dealer, bids, tricks = row[:, 0], row[:, 1:5], row[:, 5:9]
            ok = (dealer >= 0) & (dealer <= 3) & ((bids >= 0) & (bids <= MAX_BID)).all(1) \
                & (tricks >= 0).all(1) & (tricks.sum(1) == NUM_TRICKS)
            if h:
                ok &= dealer == (last_dealer + 1) & 3
            rec, _, after, bags_after = _score_records(dealer, bids.clamp(0, MAX_BID),
                                                       tricks.clamp(min=0), bags, scores, r)
            ok &= (rec == row).all(1) & (_outcome(after, r) < 0)
            bad = live & ~ok
            if bool(bad.any()):
                fail(int(bad.nonzero()[0, 0]), f"score record {h} is not the rules' scoring of "
                     f"its bids and tricks from the totals before it, or ends the game")
            scores = torch.where(live[:, None], after, scores)
            bags = torch.where(live[:, None], bags_after, bags)
            last_dealer = torch.where(live, dealer, last_dealer)
        bad = (tensors["_scores"] != scores).any(1) | (tensors["_bags"] != bags).any(1)
        if bool(bad.any()):
            fail(int(bad.nonzero()[0, 0]), "the totals or bags do not follow the score records")
        bad = (hc > 0) & (tensors["_dealer"] != (last_dealer + 1) & 3)
        if bool(bad.any()):
            fail(int(bad.nonzero()[0, 0]), "the dealer does not follow the last score record")
        # everything else: deal the recorded deal and replay the action log on the torch path
        step = 4096
        for lo in range(0, n, step):
            hi = min(n, lo + step)
            ref = SpadesVectorEnv(hi - lo, rules=r, hands_per_episode=self.hands_per_episode,
                                  max_hands=self.max_hands, reward=self.reward, backend="torch")
            for k in ("_dealer", "_scores", "_bags", "_hand_count", "_game_ids"):
                getattr(ref, k).copy_(tensors[k][lo:hi])
            ref._hist = hist[lo:hi].clone()
            ref._start_hands(tensors["_owner"][lo:hi].clone())
            ref._started = True
            for k in range(t):
                try:
                    ref.step(tensors["_actions"][lo:hi, k].clone())
                except ValueError as e:
                    raise ValueError(f"corrupt vector-env state: the action log is not legal at "
                                     f"hand step {k}: {e}") from None
            ref.current()  # marks the seat to act in every observation row, as the env does
            for k in self._DERIVED:
                mine = getattr(ref, k)
                bad = (mine != tensors[k][lo:hi]).reshape(hi - lo, -1).any(1)
                if bool(bad.any()):
                    fail(lo + int(bad.nonzero()[0, 0]), f"{k} does not follow from the deal and "
                         f"the action log (hand step {t})")

    # ------------------------------------------------------------------ internals
    def _check(self, a: torch.Tensor) -> None:
        inside = a.clamp(0, NUM_ACTIONS - 1)
        ok = self._mask.gather(1, inside.view(-1, 1))
        if torch.equal(inside, a) and bool(ok.all()):
            return
        ok = ok[:, 0] & (inside == a)
        i = int((~ok).nonzero()[0, 0])
        self._illegal(i, int(a[i]))

    def _refused(self, r: int, a: torch.Tensor) -> None:
        """Raise for the kernel's refusal code ``r = -1 - game`` (``sp_step``)."""
        self._illegal(-1 - r, int(a[-1 - r]))

    def _illegal(self, i: int, act: int) -> None:
        """Raise the ``ValueError`` for an illegal action ``act`` in game ``i``."""
        why = self.get_game(i).explain_illegal(act) or "not in the action mask"
        raise ValueError(f"illegal action {act} in env {i} (seat {int(self._cur[i])} to act): "
                         f"{why}")

    def _reserve_hist(self) -> None:
        """Room for this hand's score record in every game (``_hist`` doubles when the longest
        running game needs it). Raises ``ValueError`` with the memory needed, before anything
        changes, when the larger table does not fit."""
        need = int(self._hand_count.max()) + 1
        cap = self._hist.shape[1]
        if need <= cap:
            return
        new = max(need, 2 * cap)
        n = self.num_envs
        extra = n * new * _HIST_WIDTH * 8
        avail, what = available_memory(self.device)
        if avail is not None and extra > avail:
            raise ValueError(f"the score records of {n} games need {extra / 2 ** 30:.2f} GiB to "
                             f"hold {new} hands (a game has run {need - 1} hands), more than the "
                             f"{avail / 2 ** 30:.2f} GiB of {what}: set max_hands or use fewer "
                             f"games")
        grow = torch.zeros((n, new, _HIST_WIDTH), dtype=torch.int64, device=self.device)
        grow[:, :cap] = self._hist
        self._hist = grow

    def _lead_voids(self, p: torch.Tensor, which: torch.Tensor) -> None:
        """Mark seat ``p[i]`` void in suits 0..2 (state and every observer's row) in the games
        where ``which[i]``; other games unchanged."""
        c, obs = self._c, self._obs4
        w8 = which.to(torch.uint8).view(-1, 1)
        for su in range(3):
            slot = p * 4 + su
            self._voids.scatter_(1, slot.view(-1, 1),
                                 self._voids.gather(1, slot.view(-1, 1)) | which.view(-1, 1))
            idx = _take(c.void, slot)
            obs.scatter_(1, idx, obs.gather(1, idx) | w8)

    def _lead_mask(self) -> None:
        """Legal leads of the seat to act: any card, but no spade before spades are broken unless
        the hand holds only spades (docs/rules.md, Play)."""
        h = self._hands_rows.index_select(0, self._c.row4 + self._cur)
        ns = h & self._c.non_spades
        use_ns = ns.any(1).logical_and_(~self._broken)
        torch.where(use_ns[:, None], ns, h, out=self._mask_cards)
        self._mask_rest.zero_()

    def _follow_mask(self) -> None:
        """Legal cards after the lead: the led suit if held, else any card."""
        h = self._hands_rows.index_select(0, self._c.row4 + self._cur)
        f = h & self._c.suit_cards.index_select(0, self._led)
        torch.where(f.any(1)[:, None], f, h, out=self._mask_cards)

    def _output(self):
        if self._kernel is not None:
            n = self.num_envs
            seat = torch.empty(n, dtype=torch.int64)
            out = torch.empty((n, OBS_SIZE), dtype=torch.float32) if self.copy else self._obs_out
            self._kernel.sp_render(self._spenv_ref, out.data_ptr(), seat.data_ptr())
            return (out, self._mask.clone(), seat) if self.copy else (out, self._mask, seat)
        c = self._c
        seat = self._cur.clone()
        self._v_to_act.copy_(_take(c.onehot, seat).view(-1, 4, 4))
        if self.copy:
            out = torch.empty((self.num_envs, OBS_SIZE), dtype=torch.float32, device=self.device)
        else:
            out = self._obs_out
        self._render(c.row4 + seat, out)
        if self.copy:
            return out, self._mask.clone(), seat
        return out, self._mask, seat

    def _render(self, rows: torch.Tensor, out: torch.Tensor) -> None:
        """Write the float32 observations of the buffer rows ``rows`` (``4 * env + seat``) into
        ``out`` ``(k, OBS_SIZE)``."""
        k = rows.shape[0]
        if k == self.num_envs:  # reuse one gather buffer (fresh ones cost page faults)
            g = torch.index_select(self._v_rows, 0, rows, out=self._gather)
        else:
            g = self._v_rows.index_select(0, rows)
        out.copy_(g.view(torch.uint8)[:, :OBS_SIZE])
        out[:, _TW[0]:_TW[1]].div_(13.0)  # float32 k / 13: bit-equal to the reference encoder's
        out[:, _TN].div_(13.0)
        out[:, _SIDE[0]:_SIDE[1]] = self._side_rows.index_select(0, rows)

    def _finish_step(self, rewards=None, info=None):
        obs, mask, seat = self._output()
        if rewards is None:
            n, dev = self.num_envs, self.device
            rewards = torch.zeros((n, 4), dtype=torch.float32, device=dev)
            z = torch.zeros(n, dtype=torch.bool, device=dev)
            return obs, mask, seat, rewards, z, {"terminated": torch.zeros_like(z),
                                                 "truncated": torch.zeros_like(z)}
        return obs, mask, seat, rewards, info["terminated"] | info["truncated"], info

    def _start_hands(self, holder: torch.Tensor | None = None) -> None:
        """Deal a new hand in every game (``_dealer``, ``_scores``, ``_bags`` already set) and
        rebuild every seat's observation from scratch. The deal: a uniform random permutation
        of the deck dealt one card at a time from the left of the dealer (docs/rules.md, Deal), or
        ``holder`` ``(N, 52)`` when given."""
        n, c, dev = self.num_envs, self._c, self.device
        if self._kernel is not None:
            u = None if holder is not None else torch.rand((n, NUM_CARDS), generator=self._gen,
                                                           dtype=torch.float32)
            if holder is not None:
                holder = holder.contiguous()
            self._kernel.sp_start_hands(self._spenv_ref, None if u is None else u.data_ptr(),
                                        None if holder is None else holder.data_ptr())
            self._t = 0
            self._serial += 1
            return
        first = (self._dealer + 1) & 3
        if holder is None:
            # card perm[k] to seat (first + k) % 4; a stable sort, as the C kernel's
            perm = torch.rand((n, NUM_CARDS), generator=self._gen, dtype=torch.float32).argsort(
                dim=1, stable=True).to(dev)
            self._owner.scatter_(1, perm, (first[:, None] + c.deal_seat[None, :]) & 3)
        else:
            self._owner.copy_(holder)
        self._hands.view(n, 4, NUM_CARDS).copy_(self._owner[:, None, :] == c.seats[None, :, None])
        self._voids.zero_()
        self._bids.fill_(-1)
        self._tricks.zero_()
        self._trick.zero_()
        self._trick_obs.zero_()
        self._broken.zero_()
        self._cur.copy_(first)
        self._leader.copy_(first)
        self._led.zero_()
        self._actions.zero_()
        self._t = 0
        self._serial += 1  # a new hand everywhere: cached get_game mirrors are stale
        o = OFFSETS
        v = self._obs4v
        v.zero_()
        v[:, :, o["phase"][0]] = 1  # bidding
        v[:, :, o["looked"][0]] = 1
        v[:, :, o["hand"][0]:o["hand"][1]] = self._hands.view(n, 4, NUM_CARDS)
        v[:, :, o["bids"][0]:o["bids"][1]].view(n, 4, 4, BID_SLOTS)[..., 0] = 1  # not yet bid
        v[:, :, o["dealer"][0]:o["dealer"][1]] = _take(c.onehot, self._dealer).view(n, 4, 4)
        # team totals and bags relative to each observer's team: (mine, theirs); the target
        rel = torch.tensor([[0, 1], [1, 0], [0, 1], [1, 0]], device=self.device)
        r = self.rules
        side = self._side
        side[:, :, 0:2] = (self._scores[:, rel].double() / r.target_score).float()
        side[:, :, 2:4] = (self._bags[:, rel].double() / r.bag_limit).float()
        side[:, :, 4] = float(np.float32(r.target_score / 500.0))
        self._mask.copy_(c.bid_mask.expand(n, NUM_ACTIONS))

    def _end_hands(self):
        """Score the hand in every game (docs/rules.md, Scoring a hand; End of the game), record it,
        end and reset finished games, deal the next hand."""
        n, r, dev = self.num_envs, self.rules, self.device
        hc = self._hand_count
        need = int(hc.max()) + 1
        if need > self._hist.shape[1]:  # room for this hand's record (doubling)
            grow = torch.zeros((n, max(need, 2 * self._hist.shape[1]), _HIST_WIDTH),
                               dtype=torch.int64, device=dev)
            grow[:, :self._hist.shape[1]] = self._hist
            self._hist = grow
        hand_number = hc.clone()
        if self._kernel is not None:
            rec, hand_points, winner, terminated, truncated, rewards, any_done = \
                self._score_native()
        else:
            rec, hand_points, winner, terminated, truncated, rewards, any_done = \
                self._score_torch()
        scores, bags_after = self._scores, self._bags
        info = {"terminated": terminated, "truncated": truncated, "hand_points": hand_points,
                "winner": winner, "final_scores": scores.clone(), "final_bags": bags_after.clone()}
        info["hands"] = _HandList(torch.arange(n, device=dev), rec, hand_number)
        final = None
        if any_done:
            done = terminated | truncated
            ids = done.nonzero()[:, 0]
            final = FinalResults(ids, scores[ids], bags_after[ids], winner[ids], truncated[ids],
                                 hc[ids], self._hist[ids].clone(), r)
            # reset finished games: new first dealer, scores and bags 0
            new_dealer = torch.randint(4, (n,), generator=self._gen).to(dev)
            self._dealer.copy_(torch.where(done, new_dealer, (self._dealer + 1) & 3))
            self._scores.masked_fill_(done[:, None], 0)
            self._bags.masked_fill_(done[:, None], 0)
            hc.masked_fill_(done, 0)
            self._game_ids.add_(done.long())
        else:
            self._dealer.add_(1).bitwise_and_(3)
        info["final"] = final
        self._start_hands()
        return self._finish_step(rewards=rewards, info=info)

    def _score_native(self):
        """``_score_torch`` in the C kernel (``sp_end_hands``)."""
        n = self.num_envs
        rec = torch.empty((n, _HIST_WIDTH), dtype=torch.int64)
        hand_points = torch.empty((n, 2), dtype=torch.int64)
        winner = torch.empty(n, dtype=torch.int64)
        terminated = torch.empty(n, dtype=torch.bool)
        truncated = torch.empty(n, dtype=torch.bool)
        rewards = torch.empty((n, 4), dtype=torch.float32)
        ended = self._kernel.sp_end_hands(
            self._spenv_ref, rec.data_ptr(), self._hist.data_ptr(), self._hist.shape[1],
            hand_points.data_ptr(), winner.data_ptr(), terminated.data_ptr(),
            truncated.data_ptr(), rewards.data_ptr())
        return rec, hand_points, winner, terminated, truncated, rewards, ended > 0

    def _score_torch(self):
        """Score every game's hand with tensor ops; update scores, bags, hand counts and the
        history. Returns ``(records (N, 27) int64, hand_points (N, 2), winner (N,), terminated,
        truncated (N,) bool, rewards (N, 4) float32, whether any episode ended)``."""
        n, r, dev = self.num_envs, self.rules, self.device
        rec, hand_points, scores, bags_after = _score_records(
            self._dealer, self._bids, self._tricks, self._bags, self._scores, r)
        hc = self._hand_count
        self._hist[torch.arange(n, device=dev), hc] = rec
        hc.add_(1)
        self._scores.copy_(scores)
        self._bags.copy_(bags_after)
        winner = _outcome(scores, r)
        s0, s1 = scores[:, 0], scores[:, 1]
        # episode end, as the AEC env (spades_v1): a won game or hands_per_episode hands
        # terminate, max_hands truncates
        won = winner >= 0
        terminated = won.clone()
        if self.hands_per_episode is not None:
            terminated |= hc >= self.hands_per_episode
        truncated = torch.zeros_like(terminated)
        if self.max_hands is not None:
            truncated |= (hc >= self.max_hands) & ~terminated
        done = terminated | truncated
        # rewards by absolute seat (team of seat s = s & 1)
        if self.reward == "hand":
            d = (hand_points[:, 0] - hand_points[:, 1]).double() / 100.0
        else:  # +1/-1 for a won game; the sign of the score difference at a hands_per_episode end
            d = torch.where(won, 1.0 - 2.0 * winner.double(),
                            torch.where(terminated, (s0 - s1).sign().double(),
                                        torch.zeros_like(s0).double()))
        rewards = torch.stack([d, -d, d, -d], 1).float()
        return (rec, hand_points, winner, terminated, truncated, rewards,
                bool(done.any()))


__all__ = ["SpadesVectorEnv", "FinalResults", "HAND_STEPS", "OBS_SIZE"]
