"""Search distillation: the policy's card play trained toward a PIMC player's card values.

One round of expert iteration (Anthony, Tian & Barber, "Thinking Fast and Slow with Deep Learning
and Tree Search", NeurIPS 2017) with Perfect-Information Monte Carlo as the expert (the search of
the ``hard`` bot, ``spades_env.bots.pimc``; Long et al., AAAI 2010):

1. **Label** (``label_chunk``): the policy's team plays single hands against a PIMC team. At every
   card decision of all four seats with a real choice, the search estimates the value of each
   candidate card (``PIMCBot.card_values``: the hand's team score difference in points, bags at
   their long-run cost, averaged over ``samples`` deals drawn from the seat's information set).
   The policy's seats play the policy's own card (so the states are the ones it meets: DAgger,
   Ross et al. 2011); the PIMC seats play the best-valued card. All bids are the policy's.
2. **Distil** (``distill``): the policy's card head learns the soft target
   ``softmax(values / temperature)`` over the candidates (Hinton et al. 2015), by cross-entropy on
   the probability of each class of equivalent cards (``equivalence_classes``: cards the search
   treats as one). The bids are held where they were: on bidding rows the target is the starting
   network's own greedy bid.

Why: duplicate matches against ``hard`` showed the policy's bids are sound (its bids played by
``hard``'s card play beat ``hard``) and its card play is where it loses (``checkpoints/README.md``,
Where the agent loses to ``hard``). The search is too slow to play at training scale inside PPO
(10-20 ms a decision); here each of its estimates becomes a supervised target.

A label file (``.npz``, ``FORMAT``) holds per hand: the deal's ``seed`` [H] int64, the ``scores`` [H, 2]
int16 and ``bags`` [H, 2] int8 before the hand, the 56 ``moves`` [H, 56] uint8, the policy's team
``agent_team`` [H] int8, and ``values`` [H, 56, 52] float16 (NaN except the candidates of a card
decision with more than one). The observations are rebuilt by replaying the moves through the
engine (``teacher_records.replay``). Chunk ``k`` of a run with seed ``S`` draws everything from
``np.random.default_rng([S, k])``, so it is reproducible from its seeds and the checkpoint.

    python -m training.distill --from checkpoints/long/latest.pt --out checkpoints/long/distilled.pt
"""

from __future__ import annotations

import argparse
import glob
import io
import os
import sys
import time

import numpy as np

from spades_env import Rules, SpadesGame
from spades_env.bots.pimc import MAX_SAMPLES, PIMCBot
from spades_env.engine import Phase
from spades_env.fileio import write_atomic

from .envs import randomize_start
from .teacher_records import MOVES_PER_HAND, replay

FORMAT = "spades_env.pimc_labels"
VERSION = 1
BIDS_PER_HAND = 4  # the standard preset: 4 bids, then 52 cards


# ============================================================================= labels
def label_chunk(checkpoint: str, hands: int, seed: int, chunk: int, samples: int = 40,
                random_start: float = 0.5) -> dict:
    """Play ``hands`` single hands, the checkpoint's policy (greedy) against a PIMC team, and label
    every card decision with the search's card values.

    Args:
        checkpoint: a training or shipped checkpoint (``CheckpointBot``).
        hands: hands to play (>= 1).
        seed, chunk: the chunk's random numbers come from ``np.random.default_rng([seed, chunk])``.
        samples: deals the search draws per card decision (1..``MAX_SAMPLES``; ``hard`` uses 100).
        random_start: share of hands started from random scores and bags (``envs.randomize_start``)
            instead of 0-0.
    Returns:
        the label arrays of the module docstring (``seed``, ``scores``, ``bags``, ``moves``,
        ``agent_team``, ``values``).
    Raises:
        ValueError: a bad count, or a bad or missing checkpoint.
    """
    from spades_env.agents.bot import CheckpointBot
    for name, v, lo, hi in (("hands", hands, 1, 10**7), ("samples", samples, 1, MAX_SAMPLES)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or not lo <= v <= hi:
            raise ValueError(f"{name} must be an int in [{lo}, {hi}], got {v!r}")
    if not isinstance(random_start, (int, float)) or not 0.0 <= random_start <= 1.0:
        raise ValueError(f"random_start must be in [0, 1], got {random_start!r}")
    rng = np.random.default_rng([seed, chunk])
    policy = CheckpointBot(checkpoint, seed=int(rng.integers(2**31)))
    search = PIMCBot(seed=int(rng.integers(2**31)), samples=int(samples))
    rules = Rules()
    out = {"seed": np.zeros(hands, np.int64), "scores": np.zeros((hands, 2), np.int16),
           "bags": np.zeros((hands, 2), np.int8),
           "moves": np.zeros((hands, MOVES_PER_HAND), np.uint8),
           "agent_team": np.zeros(hands, np.int8),
           "values": np.full((hands, MOVES_PER_HAND, 52), np.nan, np.float16)}
    for h in range(hands):
        s = int(rng.integers(2**63))
        g = SpadesGame(rules, seed=s)
        if random_start > 0 and rng.random() < random_start:
            randomize_start(g, rng)
        team = int(rng.integers(2))
        out["seed"][h], out["scores"][h], out["bags"][h] = s, g.scores, g.bags
        out["agent_team"][h] = team
        for k in range(MOVES_PER_HAND):
            p = g.current_player
            view = g.view(p)
            if view.phase != Phase.PLAY:
                a = policy.act(view)
            else:
                cards, values = search.card_values(view)
                if len(cards) > 1:
                    out["values"][h, k, cards] = values
                if (p & 1) == team:
                    a = policy.act(view)
                else:
                    a = cards[max(range(len(cards)), key=lambda i: (values[i], -i))] \
                        if len(cards) > 1 else cards[0]
            g.apply(int(a))
            out["moves"][h, k] = a
        if not g.hand_results:
            raise RuntimeError("a hand did not end after 56 moves")
    return out


def save_labels(path: str, rec: dict, source: str, samples: int) -> None:
    """Write a label dict to ``path`` (``.npz``, compressed) atomically.

    Raises:
        OSError: ``could not write PATH: REASON``; ``path`` unchanged.
    """
    buf = io.BytesIO()
    np.savez_compressed(buf, format=np.array(FORMAT), version=np.array(VERSION),
                        source=np.array(str(source)), samples=np.array(int(samples)),
                        rules=np.array("standard"),
                        **{k: rec[k] for k in ("seed", "scores", "bags", "moves", "agent_team",
                                               "values")})
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    write_atomic(path, buf.getbuffer(), prefix=".tmp_", suffix=".npz")


def load_labels(path: str) -> dict:
    """Read a label file written by ``save_labels``.

    Returns the six arrays plus ``source`` (str), ``samples`` (int) and ``rules`` (str).
    Raises:
        ValueError: a missing, foreign or corrupt file, or arrays of the wrong shape or dtype,
            naming ``path`` and the field.
    """
    try:
        with np.load(path, allow_pickle=False) as z:
            d = {k: z[k] for k in z.files}
    except Exception as e:  # noqa: BLE001 - zip/npz/OS errors of any kind
        raise ValueError(f"{path}: not a readable PIMC label file ({type(e).__name__}: {e})") \
            from None
    if str(d.get("format", "")) != FORMAT or int(d.get("version", -1)) != VERSION:
        raise ValueError(f"{path}: not a {FORMAT} file of version {VERSION}")
    n = len(d.get("seed", ()))
    want = {"seed": ((n,), np.int64), "scores": ((n, 2), np.int16), "bags": ((n, 2), np.int8),
            "moves": ((n, MOVES_PER_HAND), np.uint8), "agent_team": ((n,), np.int8),
            "values": ((n, MOVES_PER_HAND, 52), np.float16)}
    for k, (shape, dt) in want.items():
        if k not in d or d[k].shape != shape or d[k].dtype != dt:
            raise ValueError(f"{path}: field {k!r} missing or not {dt.__name__}{list(shape)}")
    if n and int(d["moves"].max()) >= 68:
        raise ValueError(f"{path}: field 'moves' holds an action id >= 68")
    if not np.isin(d["agent_team"], (0, 1)).all():
        raise ValueError(f"{path}: field 'agent_team' must hold 0 or 1")
    out = {k: d[k] for k in want}
    out.update(source=str(d.get("source", "")), samples=int(d.get("samples", 0)),
               rules=str(d.get("rules", "standard")))
    return out


def merge_labels(parts: list[dict]) -> dict:
    """Concatenate label dicts (in the given order)."""
    keys = ("seed", "scores", "bags", "moves", "agent_team", "values")
    return {**{k: np.concatenate([p[k] for p in parts]) for k in keys}, "rules": "standard"}


# ============================================================================= targets
def equivalence_classes(mask: np.ndarray, valued: np.ndarray) -> np.ndarray:
    """The class of every legal card: the candidate that stands for it in the search.

    The search values only the lowest card of each run of equivalent cards
    (``PIMCBot._candidates``: same suit, nothing outstanding between them), so a legal card that
    has no value belongs to the nearest valued card below it in its suit.

    Args:
        mask: bool ``[N, >=52]``, the legal actions (only the 52 cards are read).
        valued: bool ``[N, 52]``, the candidates (cards with a value).
    Returns:
        int64 ``[N, 52]``: a card id 0..51 for every legal card, 52 for the others.
    """
    n = len(mask)
    rep = np.full((n, 52), 52, np.int64)
    cur = np.full(n, 52, np.int64)
    for c in range(52):
        if c % 13 == 0:
            cur[:] = 52
        cur = np.where(valued[:, c], c, cur)
        rep[:, c] = np.where(mask[:, c], cur, 52)
    return rep


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
    if not temperature > 0:
        raise ValueError(f"temperature must be > 0 (points), got {temperature!r}")
    v = values.astype(np.float64)
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
    v = values.astype(np.float64)
    if prior > 0:
        v = v + temperature * prior * np.log(np.maximum(class_probs, 1e-6))
    return soft_targets(v, temperature)


def build_dataset(rec: dict, reference, temperature: float, prior: float = 0.0) -> dict:
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
    Returns:
        ``obs`` float32 ``[D, OBS_SIZE]``, ``mask`` bool ``[D, 68]``, ``target`` float32
        ``[D, 68]``, ``card`` bool ``[D]`` (card row), ``rep`` int64 ``[D, 52]``
        (``equivalence_classes``; 52 everywhere on bid rows), ``values`` float32 ``[D, 52]``
        (NaN on bid rows).
    Raises:
        ValueError: a move the engine refuses (a corrupt record).
    """
    import torch
    rows = replay(rec)
    n = len(rec["seed"])
    values = rec["values"].reshape(n * MOVES_PER_HAND, 52).astype(np.float32)
    valued = ~np.isnan(values)
    is_bid = np.zeros((n, MOVES_PER_HAND), bool)
    is_bid[:, :BIDS_PER_HAND] = True
    is_bid = is_bid.reshape(-1)
    card = valued.sum(1) > 1
    keep = is_bid | card
    obs = rows["obs"][keep].astype(np.float32)
    mask = rows["mask"][keep]
    card, values, valued = card[keep], values[keep], valued[keep]
    if not 0.0 <= prior <= 1.0:
        raise ValueError(f"prior must be in [0, 1], got {prior!r}")
    rep = equivalence_classes(mask, valued)
    ref = np.zeros((len(obs), 68), np.float32)
    with torch.no_grad():
        for i in range(0, len(obs), 4096):
            lg = reference.masked(reference.policy_logits(torch.as_tensor(obs[i:i + 4096])),
                                  torch.as_tensor(mask[i:i + 4096]))
            ref[i:i + 4096] = torch.softmax(lg, -1).numpy()
    target = np.zeros((len(obs), 68), np.float32)
    bid_rows = np.nonzero(~card)[0]
    target[bid_rows, ref[bid_rows].argmax(1)] = 1.0  # the greedy policy's bid, kept
    cls = np.zeros((int(card.sum()), 53))
    np.add.at(cls, (np.arange(len(cls))[:, None], rep[card]), ref[card, :52])
    target[card, :52] = card_targets(values[card], cls[:, :52], temperature, prior)
    values[~card] = np.nan
    return {"obs": obs, "mask": mask, "target": target, "card": card, "rep": rep,
            "values": values}


def bid_rows(reference, deals: int, seed: int, random_start: float = 0.5) -> dict:
    """Bidding rows that hold the reference's bids in place: ``deals`` fresh deals, each seat bids
    what the reference plays (greedy), and every bid becomes a row whose target is that bid.

    Bids cost no search, so these rows can far outnumber the labelled hands' 4 bids each: the
    card rows move the shared trunk, and the bids must not move with it.

    Returns ``build_dataset``'s arrays for ``4 * deals`` bid rows.
    """
    import torch

    from spades_env.cards import NUM_ACTIONS
    from spades_env.observation import OBS_SIZE, encode
    rng = np.random.default_rng([seed, 1 << 20])
    n = 4 * deals
    obs = np.zeros((n, OBS_SIZE), np.float32)
    mask = np.zeros((n, NUM_ACTIONS), bool)
    target = np.zeros((n, NUM_ACTIONS), np.float32)
    r = 0
    for _ in range(deals):
        g = SpadesGame(Rules(), seed=int(rng.integers(2**63)))
        if random_start > 0 and rng.random() < random_start:
            randomize_start(g, rng)
        for _k in range(BIDS_PER_HAND):
            view = g.view(g.current_player)
            encode(view, obs[r])
            mask[r, list(view.legal_actions)] = True
            with torch.no_grad():
                lg = reference.masked(reference.policy_logits(torch.as_tensor(obs[r:r + 1])),
                                      torch.as_tensor(mask[r:r + 1]))
            a = int(lg.argmax(-1))
            target[r, a] = 1.0
            g.apply(a)
            r += 1
    return {"obs": obs, "mask": mask, "target": target, "card": np.zeros(n, bool),
            "rep": np.full((n, 52), 52, np.int64), "values": np.full((n, 52), np.nan, np.float32)}


def concat_rows(a: dict, b: dict) -> dict:
    """Rows of two ``build_dataset``-style dicts, one after the other."""
    return {k: np.concatenate([a[k], b[k]]) for k in a}


# ============================================================================= augmentation
SIDE_SUIT_PERMUTATIONS = ((0, 1, 2), (0, 2, 1), (1, 0, 2), (1, 2, 0), (2, 0, 1), (2, 1, 0))
"""The six orders of the side suits (clubs 0, diamonds 1, hearts 2); spades (3) stays trump."""

_CARD_PIECES = ("hand", "played", "trick", "exchange")


def card_map(perm) -> np.ndarray:
    """int64 ``[52]``: the id each card takes when side suit ``s`` becomes ``perm[s]``."""
    suit = list(perm) + [3]
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
    cm = card_map(perm)
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


# ============================================================================= learning
def _class_probs(torch, probs, rep):
    """Probability of each class ``[B, 52]``: the card probabilities summed by ``rep``."""
    out = torch.zeros(len(probs), 53, dtype=probs.dtype)
    return out.scatter_add_(1, rep, probs[:, :52])[:, :52]


def evaluate_rows(net, data: dict, index: np.ndarray) -> dict:
    """How the network's greedy choice compares with the targets on ``index`` rows.

    Returns ``card_agree`` (share of card rows whose chosen card is in a class of the search's best
    value),
    ``card_regret`` (points: mean of best value minus the chosen class's value, by the search's
    own estimates), ``bid_agree`` (share of bid rows where the greedy bid is the reference's).
    """
    import torch
    with torch.no_grad():
        obs = torch.as_tensor(data["obs"][index])
        lg = net.masked(net.policy_logits(obs), torch.as_tensor(data["mask"][index]))
        a = lg.argmax(-1).numpy()
    card = data["card"][index]
    tgt = data["target"][index].argmax(1)
    ci = np.nonzero(card)[0]
    chosen = data["rep"][index][ci, np.minimum(a[ci], 51)]
    v = data["values"][index][ci]
    best = np.nanmax(v, 1)
    regret = best - v[np.arange(len(ci)), chosen]
    bi = np.nonzero(~card)[0]
    return {"card_agree": float((regret <= 1e-6).mean()) if len(ci) else float("nan"),
            "card_regret": float(regret.mean()) if len(ci) else float("nan"),
            "bid_agree": float((a[bi] == tgt[bi]).mean()) if len(bi) else float("nan")}


def distill(net, data: dict, epochs: int = 3, lr: float = 3e-4, batch: int = 512,
            holdout: float = 0.05, seed: int = 0, augment: bool = True, bid_weight: float = 4.0,
            log=print) -> list[dict]:
    """Train ``net`` (in place) on ``build_dataset`` rows.

    Loss per row: on a card row, the cross-entropy of the soft target against the network's
    probability of each class of equivalent cards (``equivalence_classes``); on a bid row, the
    cross-entropy against the reference's greedy bid, weighted ``bid_weight``. Adam, the step size
    falling linearly from ``lr`` to 0, gradient norm clipped at 0.5.

    Args:
        net: ``Agent``; trained in place (all layers; the value heads get no gradient).
        epochs, lr, batch: passes over the rows, Adam step size, rows per step.
        holdout: share of rows kept out for ``evaluate_rows`` before and after each pass.
        seed: shuffling seed.
        augment: each step relabels its rows' side suits by one of the six orders, drawn at
            random (``suit_permutation``; the game is unchanged, so each labelled position counts
            six ways).
    Returns:
        one dict per evaluation (``epoch``: 0 before training, then 1..epochs; ``loss``; and
        ``evaluate_rows``' fields on the held-out rows).
    """
    import torch
    rng = np.random.default_rng(seed)
    idx = rng.permutation(len(data["obs"]))
    nval = int(len(idx) * holdout)
    val, train = idx[:nval], idx[nval:]
    obs, mask = torch.as_tensor(data["obs"]), torch.as_tensor(data["mask"])
    target, rep = torch.as_tensor(data["target"]), torch.as_tensor(data["rep"])
    card = torch.as_tensor(data["card"])
    opt = torch.optim.Adam(net.parameters(), lr=lr)
    steps = epochs * -(-len(train) // batch)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda i: max(0.0, 1.0 - i / max(1, steps)))
    perms = []
    for perm in SIDE_SUIT_PERMUTATIONS:
        oi, ai = suit_permutation(perm)
        cm = np.append(card_map(perm), 52)
        perms.append((torch.as_tensor(oi), torch.as_tensor(ai), torch.as_tensor(cm)))
    hist = [{"epoch": 0, "loss": float("nan"), **evaluate_rows(net, data, val)}]
    log(f"before: {hist[0]}")
    for ep in range(1, epochs + 1):
        rng.shuffle(train)
        total, t0 = 0.0, time.time()
        for k in range(0, len(train), batch):
            ix = torch.as_tensor(train[k:k + batch])
            o, m, t, r = obs[ix], mask[ix], target[ix], rep[ix]
            if augment:
                oi, ai, cm = perms[int(rng.integers(len(perms)))]
                o, m, t = o[:, oi], m[:, ai], t[:, ai]
                r = cm[r][:, ai[:52]]
            probs = torch.softmax(net.masked(net.policy_logits(o), m), -1)
            c = card[ix]
            pc = _class_probs(torch, probs[c], r[c])
            loss_card = -(t[c, :52] * pc.clamp_min(1e-8).log()).sum()
            loss_bid = -(t[~c] * probs[~c].clamp_min(1e-8).log()).sum()
            loss = (loss_card + bid_weight * loss_bid) / len(ix)
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(net.parameters(), 0.5)
            opt.step()
            sched.step()
            total += float(loss.detach()) * len(ix)
        hist.append({"epoch": ep, "loss": total / max(1, len(train)),
                     **evaluate_rows(net, data, val)})
        log(f"pass {ep}: {hist[-1]} ({time.time() - t0:.0f} s)")
    return hist


# ============================================================================= command line
def _worker(job):
    checkpoint, hands, seed, chunk, samples, random_start, folder = job
    import torch
    torch.set_num_threads(1)
    path = os.path.join(folder, f"chunk_{chunk:05d}.npz")
    if os.path.exists(path):
        return path, 0.0
    t0 = time.time()
    rec = label_chunk(checkpoint, hands, seed, chunk, samples, random_start)
    save_labels(path, rec, checkpoint, samples)
    return path, time.time() - t0


def produce_labels(checkpoint: str, folder: str, minutes: float, chunks: int, chunk_hands: int,
                   seed: int, samples: int, workers: int, random_start: float = 0.5,
                   log=print) -> list[str]:
    """Label chunks 0, 1, ... in ``workers`` processes until ``chunks`` are done or ``minutes``
    have passed (chunks already in ``folder`` are kept: a stopped run resumes). Returns the chunk
    paths in order."""
    import multiprocessing as mp
    os.makedirs(folder, exist_ok=True)
    jobs = [(checkpoint, chunk_hands, seed, c, samples, random_start, folder)
            for c in range(chunks)]
    deadline = time.time() + minutes * 60
    pool = mp.get_context("spawn").Pool(workers)
    try:
        for path, sec in pool.imap_unordered(_worker, jobs):
            log(f"{path} {sec:.0f} s")
            if time.time() >= deadline:
                log(f"label budget of {minutes} min reached")
                break
    finally:
        pool.terminate()
        pool.join()
    return sorted(glob.glob(os.path.join(folder, "chunk_*.npz")))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m training.distill",
                                description=__doc__.splitlines()[0])
    p.add_argument("--from", dest="src", required=True, help="checkpoint to start from")
    p.add_argument("--out", required=True, help="checkpoint to write (stripped, playable)")
    p.add_argument("--labels", default=None,
                   help="label chunk folder (default: OUT without .pt, + _labels)")
    p.add_argument("--minutes", type=float, default=30.0, help="labelling budget (wall clock)")
    p.add_argument("--chunks", type=int, default=1000, help="most chunks to label")
    p.add_argument("--chunk-hands", type=int, default=50)
    p.add_argument("--samples", type=int, default=40, help="search deals per card decision")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--temperature", type=float, default=3.0, help="soft-target temperature, points")
    p.add_argument("--prior", type=float, default=0.0,
                   help="weight of the starting policy in the card targets (build_dataset)")
    p.add_argument("--bid-deals", type=int, default=50000,
                   help="fresh deals whose bids hold the starting network's bids (bid_rows)")
    p.add_argument("--epochs", type=int, default=12)
    p.add_argument("--lr", type=float, default=1e-3)
    a = p.parse_args(argv)
    import torch
    torch.set_num_threads(1)
    from spades_env.fileio import check_output_file

    from .checkpoint import build_agent, load_checkpoint, save_checkpoint
    try:
        check_output_file(a.out, "output checkpoint", create_folder=True)
        data = load_checkpoint(a.src)
        net = build_agent(data, "cpu")
    except (ValueError, FileNotFoundError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    folder = a.labels or os.path.splitext(a.out)[0] + "_labels"
    t0 = time.time()
    paths = produce_labels(a.src, folder, a.minutes, a.chunks, a.chunk_hands, a.seed, a.samples,
                           a.workers)
    if not paths:
        print("error: no label chunk was finished", file=sys.stderr)
        return 2
    rec = merge_labels([load_labels(q) for q in paths])
    label_s = time.time() - t0
    import copy
    reference = copy.deepcopy(net).eval()
    ds = build_dataset(rec, reference, a.temperature, a.prior)
    if a.bid_deals > 0:
        ds = concat_rows(ds, bid_rows(reference, a.bid_deals, a.seed))
    print(f"{len(rec['seed'])} hands from {len(paths)} chunks: {int(ds['card'].sum())} card rows, "
          f"{int((~ds['card']).sum())} bid rows ({label_s / 60:.1f} min)", flush=True)
    hist = distill(net, ds, epochs=a.epochs, lr=a.lr, seed=a.seed)
    keep = ("config", "model_shape", "progress", "eval")
    out = {k: data[k] for k in keep if k in data}
    out["model"] = net.state_dict()
    out["source"] = a.src
    out["distill"] = {"hands": int(len(rec["seed"])), "samples": a.samples,
                      "temperature": a.temperature, "prior": a.prior, "bid_deals": a.bid_deals, "epochs": a.epochs, "lr": a.lr,
                      "seed": a.seed, "label_minutes": label_s / 60,
                      "history": [{k: float(v) for k, v in h.items()} for h in hist]}
    save_checkpoint(a.out, out)
    print(f"wrote {a.out} ({(time.time() - t0) / 60:.1f} min in all)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
