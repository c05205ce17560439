"""Training rows from labels: the soft targets the network learns toward at each labelled decision.

A card row's target is ``softmax(values / temperature)`` over the search's candidates (Hinton et
al. 2015), optionally weighted by the starting policy (``card_targets``'s ``prior``), learned on
classes of equivalent cards (``equivalence_classes``: cards the search treats as one). Bid rows
take the search's bid values when it valued them, else the starting network's greedy bid
(``build_dataset``; ``bid_rows`` adds fresh deals' bids to hold them in place). The side suits
can be relabelled (``suit_permutation``) without changing the game: the fit's augmentation.
"""

from __future__ import annotations

import numpy as np

from spades_env import Rules, SpadesGame
from spades_env.cards import BID_OFFSET, action_str, card_str, is_int
from spades_env.compact import COMPACT_SIZE, RULES_ID, expand, pack, rules_table

from .envs import randomize_start
from .labels import BIDS_PER_HAND, NUM_BIDS, equivalence_classes  # noqa: F401 (re-exported)
from .teacher_records import MOVES_PER_HAND, mask_bits, replay


# ============================================================================= targets
def _check_temperature(t) -> None:
    if isinstance(t, bool) or not isinstance(t, (int, float, np.floating, np.integer)) \
            or not np.isfinite(t) or t <= 0:
        raise ValueError(f"temperature must be a finite number > 0 (points), got {t!r}")


def soft_targets(values: np.ndarray, temperature: float) -> np.ndarray:
    """``softmax(values / temperature)`` over the valued cards of each row.

    Args:
        values: float ``[N, 52]`` in points, NaN for cards that are not candidates; every row has
            at least one value.
        temperature: points (> 0): a card worth ``temperature`` points more gets ``e`` times the
            probability.
    Returns:
        float32 ``[N, 52]``, rows summing to 1, 0 on NaN cards.
    Raises:
        ValueError: a bad temperature or a row with no value.
    """
    _check_temperature(temperature)
    v = np.asarray(values, dtype=np.float64)
    if v.ndim != 2 or v.shape[1] != 52:
        raise ValueError(f"values must be [N, 52], got shape {list(v.shape)}")
    ok = ~np.isnan(v)
    if not ok.any(1).all():
        raise ValueError("a row of values has no candidate")
    z = np.where(ok, v / temperature, -np.inf)
    z -= z.max(1, keepdims=True)
    p = np.exp(z)
    return (p / p.sum(1, keepdims=True)).astype(np.float32)


def card_targets(values: np.ndarray, class_probs: np.ndarray, temperature: float,
                 prior: float) -> np.ndarray:
    """Card-row targets: ``class_probs ** prior * exp(values / temperature)``, normalised over
    the valued cards (``build_dataset``'s ``prior``).

    Args:
        values: float ``[N, 52]``, points, NaN off the candidates.
        class_probs: float ``[N, 52]``, the reference policy's probability of each candidate's
            class (``equivalence_classes``), floored at 1e-6.
        temperature: points (> 0). prior: 0..1.
    Returns: float32 ``[N, 52]``.
    """
    if isinstance(prior, bool) or not isinstance(prior, (int, float, np.floating)) \
            or not 0.0 <= prior <= 1.0:
        raise ValueError(f"prior must be a number in [0, 1], got {prior!r}")
    class_probs = np.asarray(class_probs, dtype=np.float64)
    if np.isnan(class_probs).any():
        raise ValueError("class_probs holds NaN")
    v = np.asarray(values, dtype=np.float64)
    if prior > 0:
        v = v + temperature * prior * np.log(np.maximum(class_probs, 1e-6))
    return soft_targets(v, temperature)


def _reference_probs(reference, obs: np.ndarray, mask: np.ndarray,
                     table: np.ndarray) -> np.ndarray:
    """The reference network's policy (masked softmax) on every row (compact ``obs``, expanded
    with ``table``), float32 ``[D, 68]``, in batches of 4096 rows."""
    import torch
    ref = np.zeros((len(obs), 68), np.float32)
    with torch.no_grad():
        for i in range(0, len(obs), 4096):
            x = torch.as_tensor(expand(obs[i:i + 4096], table))
            lg = reference.masked(reference.policy_logits(x),
                                  torch.as_tensor(mask[i:i + 4096]))
            ref[i:i + 4096] = torch.softmax(lg, -1).numpy()
    return ref


def _searched_bid_targets(target: np.ndarray, rec: dict, mask: np.ndarray, bid_rows: np.ndarray,
                          n: int, temperature: float) -> None:
    """Give the bid rows whose bids the search valued (``rec["bid_values"]``) the soft target
    ``softmax(values / temperature)`` over the valued bids, in ``target``; ``bid_rows``: the
    indices of the ``n`` hands' bid rows, in move order. ``ValueError`` for a value on a bid the
    seat cannot make there."""
    bv = rec.get("bid_values")
    if bv is None:
        return
    bv = bv.reshape(n * BIDS_PER_HAND, NUM_BIDS).astype(np.float64)
    searched = ~np.isnan(bv).all(1)
    if searched.any():
        # the kept rows are in move order: each hand's 4 bids come first
        rows_bid = bid_rows[searched]
        legal = mask[rows_bid, BID_OFFSET:BID_OFFSET + NUM_BIDS]
        off = ~legal & ~np.isnan(bv[searched])
        if off.any():
            r, b = (int(x) for x in np.argwhere(off)[0])
            r = int(np.flatnonzero(searched)[r])
            raise ValueError(f"labels: hand {r // BIDS_PER_HAND}, decision "
                             f"{r % BIDS_PER_HAND}: field 'bid_values' holds a value on "
                             f"{action_str(BID_OFFSET + b)}, which that seat cannot bid "
                             f"there (a corrupt record)")
        vals = bv[searched]
        target[rows_bid] = 0.0
        target[rows_bid, BID_OFFSET:BID_OFFSET + NUM_BIDS] = soft_targets(
            np.pad(vals, ((0, 0), (0, 52 - NUM_BIDS)), constant_values=np.nan), temperature
        )[:, :NUM_BIDS]


def build_dataset(rec: dict, reference, temperature: float, prior: float = 0.0,
                  workers: int = 1, drop_flat: bool = False) -> dict:
    """Rows to learn from: every bid, and every card decision with a real choice.

    Args:
        rec: label arrays (``load_labels`` / ``label_chunk``).
        reference: the starting network (``spades_env.agents.model.Agent``); the bid it plays
            (greedy) is the bid rows' target.
        temperature: of ``soft_targets``, in points.
        prior: 0 gives card rows the plain ``soft_targets``; 1 gives the KL-regularised
            improvement of the reference policy, ``pi_ref(class) * exp(value / temperature)``
            normalised (the closed form of maximising value minus ``temperature`` times the KL to
            ``pi_ref``: Abdolmaleki et al., MPO, 2018; Peng et al., AWR, 2019); in between, the
            reference's class probability raised to ``prior``. Noisy search values then change a
            card only where they favour another one by several ``temperature``.
    Bid rows whose bids the search valued (``bid_values``, ``label_chunk``'s ``bid_samples``)
    take ``softmax(values / temperature)`` over the valued bids; the others the reference's bid.
    ``workers``: processes that replay the hands (``teacher_records.replay``; the same rows).
    ``drop_flat``: leave out the card rows whose candidates the search valued all alike (their
    target says no card is better than another: uniform over the classes with ``prior`` 0; 11%
    of the card rows of the main job's labels).

    Returns:
        ``obs`` uint8 ``[D, COMPACT_SIZE]`` (``spades_env.compact``: ``expand(obs, table)``
        gives the float32 observations; 120 bytes a row instead of 2844), ``table`` float32
        ``[R, RULES_SIZE]`` (the rules table), ``mask`` bool ``[D, 68]``, ``target`` float32
        ``[D, 68]``, ``card`` bool ``[D]`` (card row), ``rep`` uint8 ``[D, 52]``
        (``equivalence_classes``; 52 everywhere on bid rows), ``values`` float32 ``[D, 52]``
        (NaN on bid rows).
    Raises:
        ValueError: a move the engine refuses, or a value on a card or bid the seat cannot play
            there (a corrupt record; ``labels.load_labels`` refuses such a file).
    """
    rows = replay(rec, where="labels", compact=True, priv=False, workers=workers)
    n = len(rec["seed"])
    values = rec["values"].reshape(n * MOVES_PER_HAND, 52).astype(np.float32)
    valued = ~np.isnan(values)
    is_bid = np.zeros((n, MOVES_PER_HAND), bool)
    is_bid[:, :BIDS_PER_HAND] = True
    is_bid = is_bid.reshape(-1)
    off = valued & ~rows["mask"][:, :52]
    if off.any():  # values of an unchecked record (load_labels refuses them: check_legal)
        r, c = (int(x) for x in np.argwhere(off)[0])
        raise ValueError(f"labels: hand {r // MOVES_PER_HAND}, decision {r % MOVES_PER_HAND}: "
                         f"field 'values' holds a value on card {card_str(c)} (card {c}), which "
                         f"that seat cannot play there (a corrupt record)")
    card = valued.sum(1) > 1
    if drop_flat:
        lo = np.where(valued, values, np.inf).min(1)
        card &= np.where(valued, values, -np.inf).max(1) > lo
    keep = is_bid | card
    obs, table = rows["obs"][keep], rows["table"]
    mask = rows["mask"][keep]
    del rows
    card, values, valued = card[keep], values[keep], valued[keep]
    rep = equivalence_classes(mask, valued).astype(np.uint8)
    ref = _reference_probs(reference, obs, mask, table)
    target = np.zeros((len(obs), 68), np.float32)
    bid_rows = np.nonzero(~card)[0]
    target[bid_rows, ref[bid_rows].argmax(1)] = 1.0  # the greedy policy's bid, kept
    _searched_bid_targets(target, rec, mask, bid_rows, n, temperature)
    cards = np.nonzero(card)[0]
    for i in range(0, len(cards), 1 << 17):  # row by row: blocks bound the float64 work arrays
        blk = cards[i:i + (1 << 17)]
        cls = np.zeros((len(blk), 53))
        np.add.at(cls, (np.arange(len(blk))[:, None], rep[blk]), ref[blk, :52])
        target[blk, :52] = card_targets(values[blk], cls[:, :52], temperature, prior)
    values[~card] = np.nan
    return {"obs": obs, "table": table, "mask": mask, "target": target, "card": card,
            "rep": rep, "values": values}


BID_BLOCK = 4096  # deals whose bids ``bid_rows`` computes together (one forward pass a bid)


def bid_rows(reference, deals: int, seed: int, random_start: float = 0.5) -> dict:
    """Bidding rows that hold the reference's bids in place: ``deals`` fresh deals, each seat bids
    what the reference plays (greedy), and every bid becomes a row whose target is that bid.

    Bids cost no search, so these rows can far outnumber the labelled hands' 4 bids each: the
    card rows move the shared trunk, and the bids must not move with it.

    Returns ``build_dataset``'s arrays for ``4 * deals`` bid rows.
    """
    import torch

    from spades_env.cards import NUM_ACTIONS
    from spades_env.observation import OBS_SIZE, IncrementalEncoder
    rng = np.random.default_rng([seed, 1 << 20])
    n = 4 * deals
    obs = np.zeros((n, COMPACT_SIZE), np.uint8)
    mask = np.zeros((n, NUM_ACTIONS), bool)
    target = np.zeros((n, NUM_ACTIONS), np.float32)
    encoders = [IncrementalEncoder() for _ in range(min(BID_BLOCK, deals))]  # a deal's 4 rows
    for first in range(0, deals, BID_BLOCK):
        # a block of deals (drawn in order from ``rng``), then each of the 4 bids of every deal
        # of the block at once: one forward pass of the reference per bid position
        games = []
        for _ in range(min(BID_BLOCK, deals - first)):
            g = SpadesGame(Rules(), seed=int(rng.integers(2**63)))
            if random_start > 0 and rng.random() < random_start:
                randomize_start(g, rng)
            encoders[len(games)].new_hand(g)
            games.append(g)
        hand = np.zeros((len(games), BIDS_PER_HAND, OBS_SIZE), np.float32)  # exact, packed below
        rows = 4 * first + np.arange(len(games)) * BIDS_PER_HAND  # row of each deal's first bid
        legal = np.zeros(len(games), object)
        for k in range(BIDS_PER_HAND):
            for j, g in enumerate(games):
                hand[j, k] = encoders[j].buf[g.current_player]
                legal[j] = g.legal_mask()
            mask[rows + k] = mask_bits(legal)
            with torch.no_grad():
                lg = reference.masked(reference.policy_logits(torch.as_tensor(hand[:, k])),
                                      torch.as_tensor(mask[rows + k]))
            bids = lg.argmax(-1).tolist()
            target[rows + k, bids] = 1.0
            for enc, g, a in zip(encoders, games, bids):
                enc.apply(g, a)
        obs[4 * first:4 * first + BIDS_PER_HAND * len(games)] = pack(
            hand.reshape(-1, OBS_SIZE))
    return {"obs": obs, "table": rules_table(Rules()), "mask": mask, "target": target,
            "card": np.zeros(n, bool), "rep": np.full((n, 52), 52, np.uint8),
            "values": np.full((n, 52), np.nan, np.float32)}


def concat_rows(a: dict, b: dict) -> dict:
    """Rows of two ``build_dataset``-style dicts, one after the other, with one rules table:
    ``b``'s rules rows not already in ``a``'s are appended, and ``b``'s rows' rules ids (byte
    ``compact.RULES_ID``) renumbered to match. Raises ``ValueError`` past 256 rule sets."""
    ta, tb = a["table"], b["table"]
    table, ids = [*ta], []
    for row in tb:
        same = [i for i, t in enumerate(table) if np.array_equal(t, row)]
        if not same:
            table.append(row)
        ids.append(same[0] if same else len(table) - 1)
    if len(table) > 256:
        raise ValueError(f"the rows hold {len(table)} rule sets; a rules table holds 256")
    out = {k: np.concatenate([a[k], b[k]]) for k in a if k != "table"}
    out["table"] = np.stack(table).astype(np.float32)
    if len(table) > 1:
        if len(ta) == 1:
            out["obs"][:len(a["obs"]), RULES_ID] = 0  # one-row tables leave byte 94 unread
        old = b["obs"][:, RULES_ID] if len(tb) > 1 else np.zeros(len(b["obs"]), np.intp)
        out["obs"][len(a["obs"]):, RULES_ID] = np.asarray(ids, np.uint8)[old]
    return out


# ============================================================================= augmentation
SIDE_SUIT_PERMUTATIONS = ((0, 1, 2), (0, 2, 1), (1, 0, 2), (1, 2, 0), (2, 0, 1), (2, 1, 0))
"""The six orders of the side suits (clubs 0, diamonds 1, hearts 2); spades (3) stays trump."""

_CARD_PIECES = ("hand", "played", "trick", "exchange")


def card_map(perm) -> np.ndarray:
    """int64 ``[52]``: the id each card takes when side suit ``s`` becomes ``perm[s]``.

    Raises ValueError unless ``perm`` is an order of (0, 1, 2)."""
    if isinstance(perm, (str, bytes)) or not hasattr(perm, "__len__") or len(perm) != 3 \
            or not all(is_int(x) for x in perm) or sorted(int(x) for x in perm) != [0, 1, 2]:
        raise ValueError(f"perm must be an order of the side suits (0, 1, 2), got {perm!r}")
    suit = [int(x) for x in perm] + [3]
    c = np.arange(52)
    return np.array([suit[s] for s in c // 13]) * 13 + c % 13


def suit_permutation(perm) -> tuple[np.ndarray, np.ndarray]:
    """Index arrays that relabel the side suits of observations and actions.

    Renaming the side suits changes nothing in the game (only spades are special: trump, and the
    rule on leading them), so a position and its relabelled copy have the same values with the
    cards renamed. ``obs[..., oi]`` is the observation of the relabelled position and
    ``actions[..., ai]`` (any per-action array: mask, logits, targets) its actions.

    Args:
        perm: a permutation of (0, 1, 2): side suit ``s`` becomes ``perm[s]``.
    Returns:
        ``oi`` int64 ``[OBS_SIZE]``, ``ai`` int64 ``[68]``.
    """
    from spades_env.observation import OBS_SIZE, OFFSETS
    cm = card_map(perm)  # checks perm
    inv = np.empty(52, np.int64)
    inv[cm] = np.arange(52)
    oi = np.arange(OBS_SIZE)
    for name in _CARD_PIECES:
        a, b = OFFSETS[name]
        for k in range(a, b, 52):
            oi[k:k + 52] = k + inv
    sinv = np.empty(4, np.int64)
    sinv[list(perm) + [3]] = np.arange(4)
    a, _b = OFFSETS["led_suit"]
    oi[a:a + 4] = a + sinv
    a, b = OFFSETS["voids"]
    for k in range(a, b, 4):
        oi[k:k + 4] = k + sinv
    ai = np.arange(68)
    ai[:52] = inv
    return oi, ai

