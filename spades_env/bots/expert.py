"""``expert``: Perfect-Information Monte Carlo search with deals weighted by the trained network.

``insane`` draws deals that agree with the seat's information set and weights them by a
hand-tuned model of the bids (``bots.pimc.bid_likelihood``). ``expert`` also reads every card the
other three seats played this hand, through the trained policy: policy-based inference (Rebstock,
Solinas, Buro and Sturtevant, "Policy Based Inference in Trick-Taking Card Games", IEEE CoG 2019,
for Skat).

For a sampled deal ``d`` (the hidden hands now), each earlier decision of another seat ``s`` is
re-encoded as ``s`` saw it then: the public part of its observation is the same in every deal
(computed once per decision, by replaying the hand's public moves in the engine), and its hand is
``d[s]`` plus the cards ``s`` has played since. The weight of ``d`` is

    w(d) = B(d) * prod over those decisions of ((1 - floor) * pi(a | o_s(d)) + floor / |legal|) ** t

where ``pi`` is the checkpoint's masked policy, ``a`` the action actually taken, and ``B(d)`` the
bids' weight: ``insane``'s ``bid_likelihood`` (``bid_model="formula"``, the default), or 1 with
the bids read by the network among the decisions (``"network"``) or not at all (``"none"``). The
power ``t`` is ``temper``, lowered as far as needed to keep the effective sample size of the
weights at least ``min_ess`` of the deals (``tempered_weights``); ``floor`` > 0 keeps a confident
but imperfect model from ruling out the real deal. Each decision starts from ``insane``'s
deals (``inference_factor * samples`` drawn, ``samples`` resampled by the bid model; ``bid_samples``
for a bid) and weights each distinct one by the network, its count kept as an untempered factor.
The search itself (candidates, play-outs, the exact endgame, the bid search) is ``PIMCBot``'s,
with ``insane``'s settings. A bid is ``insane``'s bid search with the network's bid prior added:
each candidate bid's searched value plus ``bid_prior * log p(bid)`` (``p`` the policy at the
view, floored at ``BID_PRIOR_FLOOR``). The network's bid is sharp (its favourite usually has
p > 0.99), so this plays the network's bid unless the search values another higher by more than
about ``9.2 * bid_prior`` points; over 100 duplicate pairs of full games against ``insane`` it
gained 3.2 [0.7, 5.7] points per hand over ``bid_prior=0`` (docs/bots.md, Expert ablations).

Why the bids default to the formula: measured as the mean log-probability that the weighted deals
give each hidden card's true holder (``benchmarks/bench_expert_belief.py``), the network's bid
head makes the belief no better than uniform deals when the table bids as the search bots do (its
bids are the network's own, sharper and different), while its card play, distilled from the
search, sharpens it; the formula for the bids with the network for the cards is best.

The forward passes are batched: one matrix product over every (deal, decision) pair, the first
layer split into the part that all deals share (the public observation) and the hand's 52 columns.

The bot reads ``game.view(seat)`` only: its deals are drawn from the view, and the network reads
observations built from the public moves and the sampled hands, never a hidden card.
"""

from __future__ import annotations

import os

import numpy as np
import torch

from ..agents import SHIPPED_CHECKPOINT
from ..agents.checkpoint import build_agent, load_checkpoint
from ..agents.model import torch_threads
from ..cards import BID_OFFSET, LOOK_ACTION, NEXT_SEAT, NUM_ACTIONS, NUM_CARDS, SEATS_FROM, TEAM
from ..devices import check_device
from ..engine import Phase, SpadesGame
from ..observation import OFFSETS, encode
from ..rules import STANDARD_DECK, legal_cards_batch
from .base import exchanged_seats
from .pimc import PIMCBot, bid_weight, legal_bids_at
from .work import check_work

DEFAULT_CHECKPOINT = SHIPPED_CHECKPOINT
"""the network ``make_bot("expert")`` uses when no ``checkpoint`` is given (the shipped agent)."""

INFERENCE = ("network", "bids", "none")
LEAVES = ("playout", "critic")
BID_MODELS = ("network", "formula", "none")
_HAND = OFFSETS["hand"]
BID_PRIOR_FLOOR = 1e-4
"""lowest probability ``bid_prior`` reads from the network (a bid it never makes costs
``bid_prior * log(1e-4)``, about 9.2 nats, not an infinite penalty)."""


def _mask_bits(masks) -> np.ndarray:
    """52-bit int masks (any shape) -> bool ``[..., 52]`` (bit ``i`` of a mask is card ``i``)."""
    a = np.ascontiguousarray(np.asarray(masks, dtype="<u8"))
    bits = np.unpackbits(a.view(np.uint8).reshape(*a.shape, 8), axis=-1, bitorder="little")
    return bits[..., :NUM_CARDS].view(bool)


def _runs(values) -> list[tuple[int, int]]:
    """``(start, stop)`` of each run of equal neighbours in ``values``."""
    out, a = [], 0
    for i in range(1, len(values) + 1):
        if i == len(values) or values[i] != values[a]:
            out.append((a, i))
            a = i
    return out


class _Evidence:
    """The other seats' decisions of one hand, each as the public part of the observation its seat
    had then (``obs`` float32 ``[R, obs_size]``, hand block zero) and what the deal adds to it."""

    def __init__(self):
        self.obs: list[np.ndarray] = []
        self.seat: list[int] = []      # the deciding seat
        self.action: list[int] = []    # the action id it took
        self.played_then: list[int] = []  # cards that seat had played before that decision
        self.later: list[int] = []     # cards it played from that decision on, up to the view
        self.led: list[int] = []       # suit led to the trick then, -1 when leading or bidding
        self.deck = STANDARD_DECK      # the rules' Deck (Rules.deck): the suits of the legal cards
        self.broken: list[bool] = []
        self.is_bid: list[bool] = []
        self.bid_legal: list[int] = []  # legal bid actions then (16-bit mask, bit = action - 52)
        self.moves: list = []           # the hand's moves these decisions were read from

    def __len__(self) -> int:
        return len(self.seat)


class PolicyLikelihood:
    """The checkpoint's probability of observed decisions for many deals at once.

    Args:
        agent: a ``model.Agent`` (eval mode).
        threads: torch CPU threads while scoring (``None``: torch's own setting).
    """

    def __init__(self, agent, threads: int | None = 1):
        self.agent = agent
        self.threads = threads
        lin = agent.trunk[0]
        self.obs_size = agent.obs_size
        self.w = lin.weight.detach()                                  # [H, obs_size]
        self.b = lin.bias.detach()
        self.w_hand = self.w[:, _HAND[0]:_HAND[1]].T.contiguous()     # [52, H]
        self.rest = agent.trunk[2:]                                   # after the first ReLU

    @torch.no_grad()
    def log_likelihood(self, ev: _Evidence, deals: np.ndarray, floor: float) -> np.ndarray:
        """Log-likelihood of every decision in ``ev`` under each deal.

        Args:
            ev: the decisions (``R`` of them, at least one).
            deals: uint64 ``[D, 4]``: the hands each seat holds now in each deal.
            floor: mixing weight (0..1) of the uniform distribution over the legal actions.
        Returns:
            float64 ``[D, R]``: ``log((1 - floor) * pi(a_r | o_r(d)) + floor / |legal_r(d)|)``,
            ``-inf`` where the action was illegal for the deal's hand.
        """
        with torch_threads(self.threads):
            return self._log_likelihood(ev, deals, floor)

    def _log_likelihood(self, ev, deals, floor):
        n_deals, n_rec = len(deals), len(ev)
        seat = np.asarray(ev.seat)
        n_bid = int(np.sum(ev.is_bid))  # the bids come first: every bid precedes the first card
        held = _mask_bits(deals)                                     # [D, 4, 52]: held now
        later = _mask_bits(np.asarray(ev.later, dtype=np.uint64))   # [R, 52]: played since
        # first layer, split: W x = W (public part) + W (held now) + W (played since), the three
        # disjoint; the public part and the cards played since are the same in every deal
        dev = self.w.device

        def tensor(a):
            return torch.from_numpy(np.ascontiguousarray(a)).to(dev)

        obs = tensor(np.stack(ev.obs)[:, :self.obs_size])
        shared = obs @ self.w.T + self.b + tensor(later.astype(np.float32)) @ self.w_hand
        now = tensor(held.reshape(-1, NUM_CARDS).astype(np.float32)) @ self.w_hand
        now = now.view(n_deals, 4, -1)
        pre = torch.empty(n_deals, n_rec, shared.shape[1], device=dev)
        for a, b in _runs(seat):  # records of one seat in a row: one broadcast add each
            torch.add(now[:, seat[a], None], shared[a:b], out=pre[:, a:b])
        z = self.rest(pre.clamp_(min=0).view(n_deals * n_rec, -1)).view(n_deals, n_rec, -1)
        out = np.zeros((n_deals, n_rec))
        action = np.asarray(ev.action)
        if n_bid < n_rec:
            legal = legal_cards_batch(held[:, seat[n_bid:]] | later[n_bid:],
                                      np.asarray(ev.led[n_bid:]), np.asarray(ev.broken[n_bid:]),
                                      ev.deck)
            logits = self.agent.play_head(z[:, n_bid:])
            out[:, n_bid:] = self._log_mix(logits, tensor(legal), action[n_bid:], floor)
        if n_bid:
            legal = _mask_bits(np.asarray(ev.bid_legal[:n_bid], dtype=np.uint64))[:, :16]
            legal = tensor(legal)
            logits = self.agent.bid_head(z[:, :n_bid])
            out[:, :n_bid] = self._log_mix(logits, legal.expand(n_deals, -1, -1),
                                           action[:n_bid] - BID_OFFSET, floor)
        return out

    @staticmethod
    def _log_mix(logits, legal, action, floor) -> np.ndarray:
        """``log((1 - floor) * softmax_legal(logits)[action] + floor / |legal|)`` per row."""
        logits = logits.masked_fill(~legal, -np.inf)
        logp = torch.log_softmax(logits, -1)
        idx = torch.from_numpy(np.asarray(action, dtype=np.int64)).to(logp.device)
        idx = idx.expand(logp.shape[0], -1)
        lp = logp.gather(-1, idx[..., None]).squeeze(-1)
        if floor > 0:
            n_legal = legal.sum(-1).clamp(min=1).float()
            lp = torch.logaddexp(lp + np.log1p(-floor), np.log(floor) - n_legal.log())
            lp = torch.where(legal.gather(-1, idx[..., None]).squeeze(-1), lp, -np.inf)
        return lp.cpu().numpy()


def _hand_moves(view) -> list[tuple[int, int]]:
    """The public moves of ``view``'s hand so far as ``(seat, action id)``: the bids made, from the
    dealer's left, then the cards played."""
    moves = [(s, BID_OFFSET + view.bids[s]) for s in SEATS_FROM[NEXT_SEAT[view.dealer]]
             if view.bids[s] is not None]
    return moves + list(view.play_history)


def _replay(view, deal, moves, visit=None) -> SpadesGame:
    """``view``'s hand replayed in the engine with the hidden hands of ``deal`` (4 hand masks that
    agree with ``view``): ``moves`` (``_hand_moves``) applied in order, each seat's look at its
    cards taken when its bid is due; ``visit(game, seat, action)`` sees the game before each move.
    Returns the game after the last move."""
    g = SpadesGame.from_deal([deal[s] | view.played[s] for s in range(4)], view.dealer,
                             view.scores, view.bags, view.rules)
    for s, a in moves:
        while g.phase == Phase.BIDDING and not g.looked[g.current_player]:
            g.apply(LOOK_ACTION)
        if visit is not None:
            visit(g, s, a)
        g.apply(a)
    return g


def class_mass(legal, cands, prior) -> dict:
    """The prior of each candidate's class of equivalent cards: ``{card: probability}`` for each
    of ``cands`` (``PIMCBot._candidates`` of ``legal``), a legal card that is not a candidate
    counted with the candidate below it in its suit; ``prior`` float ``[>=52]`` by card id."""
    mass = dict.fromkeys(cands, 0.0)
    cur = cands[0]
    for c in sorted(set(legal)):
        if c in mass:
            cur = c
        mass[cur] += float(prior[c])
    return mass


def _ess(w: np.ndarray) -> float:
    """Effective sample size ``(sum w)^2 / sum w^2`` of importance weights (Kong 1992)."""
    return float(w.sum() ** 2 / (w * w).sum())


def tempered_weights(log_lik: np.ndarray, temper: float, min_ess: float,
                     base: np.ndarray | None = None) -> np.ndarray:
    """Deal weights ``exp(base + t * log_lik)``, normalised to a maximum of 1, with the power
    ``t`` as close to ``temper`` as keeps the effective sample size at least
    ``min_ess * len(log_lik)`` (adaptive tempering, as in adaptive sequential Monte Carlo: Jasra,
    Stephens, Doucet and Tsagaris 2011); ``t`` is found by bisection.

    Args:
        log_lik: float ``[D]``, the deals' log-likelihoods (``-inf``: impossible).
        temper: the largest power (0..1). min_ess: 0..1.
        base: float ``[D]``, log-weights applied untempered (default 0).
    Returns:
        float64 ``[D]``; all 1 when no deal has a finite likelihood.
    """
    ll = np.asarray(log_lik, dtype=np.float64)
    base = np.zeros(len(ll)) if base is None else np.asarray(base, dtype=np.float64)
    possible = np.isfinite(ll) & np.isfinite(base)
    if not possible.any():  # no deal explains the moves: every deal alike
        return np.ones(len(ll))
    ll = np.where(possible, ll - ll[possible].max(), 0.0)
    base = np.where(possible, base, 0.0)

    def weights(t):
        x = np.where(possible, base + t * ll, -np.inf)
        return np.exp(x - x.max())

    target = min_ess * len(ll)
    if _ess(weights(temper)) >= target:
        return weights(temper)
    lo, hi = 0.0, temper
    for _ in range(30):
        mid = 0.5 * (lo + hi)
        if _ess(weights(mid)) >= target:
            lo = mid
        else:
            hi = mid
    return weights(lo)


class ExpertBot(PIMCBot):
    """``expert``: ``insane``'s search with deals weighted by a trained network's likelihood of
    everything the other seats did this hand (module docstring).

    Args:
        seed: int / None / ``np.random.Generator``.
        checkpoint: path of a training checkpoint (default ``DEFAULT_CHECKPOINT``, the shipped
            agent).
        samples, bid_samples, endgame_tricks, inference_factor, bid_window, bid_shade,
            nil_shade, blind_nil_deficit, verify: as ``PIMCBot`` (defaults: ``insane``'s).
        inference: ``"network"`` (default), ``"bids"`` (``insane``'s ``bid_likelihood``) or
            ``"none"`` (uniform deals, as ``hard``).
        temper: largest power (0..1) of the likelihood; 0 ignores the network (the first
            stage's counts and the bid model still weigh).
        bid_model: how the bids made weigh with ``inference="network"``: ``"network"`` (the
            network's bid head, tempered with the card plays), ``"formula"`` (``insane``'s
            ``bid_likelihood``, untempered) or ``"none"`` (card plays only).
        min_ess: the power is lowered until the weighted deals' effective sample size is at
            least this fraction (0..1) of the deals drawn (``tempered_weights``).
        floor: weight (0..1) of a uniform choice among the legal actions mixed into the policy.
        leaf: how a (deal, candidate) pair is valued: ``"playout"`` (default: the rule-based
            play-out to the end of the hand, as ``insane``) or ``"critic"``: that value mixed with
            the network's privileged critic right after the candidate card (``critic_values``),
            ``leaf_weight`` of the critic, while fewer than ``leaf_tricks`` tricks have been
            played (later the play-outs, and the exact endgame, are better leaves).
        leaf_weight: the critic's share (0..1) with ``leaf="critic"``.
        leaf_tricks: with ``leaf="critic"``, the critic is mixed in before this many tricks
            (0..13) have been played.
        prune: candidate pruning by the network's prior: a candidate card whose class of
            equivalent cards (``PIMCBot._candidates``) the policy plays with probability below
            ``prune`` (0..1) is not searched; the most probable class always is. 0: off.
        bid_prior: the network's bid prior in the bid search, in points per nat: each candidate
            bid's value (``bid_values``) gets ``bid_prior * log p(bid)`` added, ``p`` the
            policy's probability of that bid at the view (floored at ``BID_PRIOR_FLOOR``), so
            the network decides between bids the search values alike. Default 1 (a bid the
            network all but never makes needs a 9.2-point better search value); 0: off.
        device: torch device of the network. threads: torch CPU threads while scoring.
    Raises:
        ValueError: a bad option or device, no checkpoint at ``checkpoint``, a corrupt, foreign
            or mis-shaped checkpoint (named), or options whose product, with the network's rows,
            makes one decision cost more than ``work.LIMITS`` (docs/bots.md, Limits).
    """

    name = "expert"

    def __init__(self, seed=None, checkpoint=None, samples: int = 400, bid_samples: int = 240,
                 endgame_tricks: int = 3, inference: str = "network", inference_factor: int = 4,
                 temper: float = 1.0, floor: float = 0.02, min_ess: float = 0.25,
                 bid_model: str = "formula", bid_shade: float = 0.5, leaf: str = "playout",
                 leaf_weight: float = 0.5, leaf_tricks: int = 8, prune: float = 0.0,
                 bid_prior: float = 1.0, device: str = "cpu", threads: int | None = 1, **kw):
        if inference not in INFERENCE:
            raise ValueError(f"inference must be one of {list(INFERENCE)}, got {inference!r}")
        if bid_model not in BID_MODELS:
            raise ValueError(f"bid_model must be one of {list(BID_MODELS)}, got {bid_model!r}")
        if leaf not in LEAVES:
            raise ValueError(f"leaf must be one of {list(LEAVES)}, got {leaf!r}")
        if isinstance(leaf_tricks, (bool, np.bool_)) or not isinstance(leaf_tricks, (int, np.integer)) \
                or not 0 <= leaf_tricks <= 13:
            raise ValueError(f"leaf_tricks must be an int in 0..13, got {leaf_tricks!r}")
        for nm, v in (("temper", temper), ("floor", floor), ("min_ess", min_ess),
                      ("leaf_weight", leaf_weight), ("prune", prune)):
            if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.integer,
                                                                     np.floating)) \
                    or not 0 <= v <= 1:
                raise ValueError(f"{nm} must be a number in 0..1, got {v!r}")
        if isinstance(bid_prior, (bool, np.bool_)) \
                or not isinstance(bid_prior, (int, float, np.integer, np.floating)) \
                or not 0 <= bid_prior <= 1000:
            raise ValueError(f"bid_prior must be a number in 0..1000 (points per nat), got "
                             f"{bid_prior!r}")
        if floor >= 1:
            raise ValueError(f"floor must be below 1 (1 ignores the network), got {floor!r}")
        if threads is not None and (isinstance(threads, (bool, np.bool_))
                                    or not isinstance(threads, (int, np.integer))
                                    or not 1 <= threads <= 1024):
            raise ValueError(f"threads must be an int in 1..1024 or None, got {threads!r}")
        if "infer_bids" in kw:
            raise ValueError("expert takes no infer_bids option: inference= sets it")
        super().__init__(seed, samples=samples, bid_samples=bid_samples,
                         endgame_tricks=endgame_tricks, infer_bids=inference != "none",
                         inference_factor=inference_factor, bid_shade=bid_shade, **kw)
        self.inference = inference
        self.temper = float(temper)
        self.floor = float(floor)
        self.min_ess = float(min_ess)
        self.bid_model = bid_model
        device = check_device(device)  # before the file: a bad device is not the file's fault
        path = os.fspath(checkpoint) if checkpoint is not None else str(DEFAULT_CHECKPOINT)
        self.checkpoint = path
        if not os.path.lexists(path):
            raise ValueError(f"expert: no checkpoint at {path!r}" + (
                " (the shipped agent is in the repository's checkpoints/shipped/ and in the "
                "wheel; pass checkpoint=PATH)" if checkpoint is None else ""))
        data = load_checkpoint(path, map_location=device)
        self.likelihood = PolicyLikelihood(build_agent(data, device, path),
                                           None if threads is None else int(threads))
        if leaf == "critic" and self.likelihood.agent.critic is None:
            raise ValueError(f"expert: leaf='critic' needs a network with a privileged critic; "
                             f"{path!r} has none (critic_hidden is empty)")
        self.leaf = leaf
        self.leaf_weight = float(leaf_weight)
        self.leaf_tricks = int(leaf_tricks)
        self.prune = float(prune)
        self.bid_prior = float(bid_prior)
        # PIMCBot checked the search alone; now with the network's rows and their width
        self.work = check_work(self.name, self.work_estimate(self.network_work()))
        self._evidence_key = None
        self._evidence = _Evidence()

    def network_work(self) -> dict:
        """The network's part of ``work_estimate``: which rows a decision sends through it and
        their bytes (float32; the first layer's output kept beside the later ones)."""
        agent = self.likelihood.agent

        def floats(module):
            return 0 if module is None else sum(
                m.out_features for m in module.modules() if isinstance(m, torch.nn.Linear))

        card = self.inference == "network"
        return {"row_bytes": 4 * (2 * floats(agent.trunk) + floats(agent.play_head)),
                "critic_bytes": 4 * (agent.obs_size + 3 * NUM_CARDS + 2 * floats(agent.critic)),
                "card_rows": card, "bid_rows": card and self.bid_model == "network",
                "critic": self.leaf == "critic" and self.leaf_weight > 0 and self.leaf_tricks > 0,
                "policy": self.prune > 0 or self.bid_prior > 0}

    def __repr__(self) -> str:
        return (f"ExpertBot({self.checkpoint!r}, samples={self.samples}, "
                f"inference={self.inference!r}, temper={self.temper}, floor={self.floor}, "
                f"leaf={self.leaf!r}, prune={self.prune}, bid_prior={self.bid_prior})")

    # ------------------------------------------------------------------ evidence
    def evidence(self, view, deal) -> _Evidence:
        """The other seats' decisions this hand as ``_Evidence`` (cached across the decisions of a
        hand: only new decisions are encoded).

        Args:
            view: the deciding seat's ``PlayerView``.
            deal: any deal that agrees with ``view`` (4 hand masks): the hand's public moves are
                replayed on it to build each decision's public observation, whose other pieces do
                not depend on the hidden cards.
        """
        me = view.seat
        key = (view.hand_number, view.dealer, view.scores, view.bags, view.hand | view.played[me],
               view.rules)
        if key != self._evidence_key:
            self._evidence_key, self._evidence = key, _Evidence()
            self._evidence.deck = view.rules.deck
        moves = _hand_moves(view)
        ev = self._evidence
        if ev.moves != moves[:len(ev.moves)]:  # another game or hand with the same key
            ev = self._evidence = _Evidence()
            ev.deck = view.rules.deck
        ev.moves = moves
        others = sum(1 for s, _a in moves if s != me)
        if others > len(ev):
            self._encode_new(view, deal, moves, ev)
        # what each seat played since each decision grows with the hand: read from this view
        ev.later = [view.played[s] & ~then for s, then in zip(ev.seat, ev.played_then)]
        return ev

    @staticmethod
    def _encode_new(view, deal, moves, ev) -> None:
        """Replay the hand's public moves on ``deal`` and encode the decisions not in ``ev``."""
        me = view.seat
        k = 0

        def visit(g, s, a):
            nonlocal k
            if s == me:
                return
            if k >= len(ev):
                obs = encode(g.view(s))
                obs[_HAND[0]:_HAND[1]] = 0.0
                ev.obs.append(obs)
                ev.seat.append(s)
                ev.action.append(a)
                ev.played_then.append(g.played[s])
                is_bid = g.phase == Phase.BIDDING
                ev.is_bid.append(is_bid)
                ev.led.append(-1 if is_bid or not g.trick else g.led_suit)
                ev.broken.append(bool(g.spades_broken))
                ev.bid_legal.append(g.legal_mask() >> BID_OFFSET if is_bid else 0)
            k += 1

        _replay(view, deal, moves, visit)

    def bid_log_weights(self, view, deals) -> np.ndarray | None:
        """``insane``'s bid model (``bid_likelihood``) of each deal, as log-weights (float64
        ``[len(deals)]``), when ``bid_model`` is ``"formula"``; ``None`` otherwise."""
        if self.bid_model != "formula":
            return None
        me = view.seat
        seats = [s for s in range(4) if s != me and view.bids[s] is not None]
        legal = {s: legal_bids_at(view, s) for s in seats}
        return np.array([sum(np.log(bid_weight(view.rules, view.bids[s], d[s] | view.played[s],
                                               legal[s]))
                             for s in seats) for d in deals], dtype=np.float64)

    def deal_weights(self, view, deals, base=None) -> np.ndarray:
        """Relative weight (float64 ``[len(deals)]``, max 1) of each deal (4 hand masks, each
        agreeing with ``view``) given the other seats' decisions this hand (module docstring):
        ``exp(base)`` (default: ``bid_log_weights``) times the network's floored likelihood of the
        cards played (and of the bids with ``bid_model="network"``), tempered by
        ``tempered_weights``."""
        if not deals:
            return np.zeros(0)
        if base is None:
            base = self.bid_log_weights(view, deals)
        ev = self.evidence(view, deals[0])
        first = 0 if self.bid_model == "network" else int(np.sum(ev.is_bid))
        if first >= len(ev):
            return np.ones(len(deals)) if base is None else np.exp(base - base.max())
        ll = self.likelihood.log_likelihood(ev, np.asarray(deals, dtype=np.uint64), self.floor)
        return tempered_weights(ll[:, first:].sum(-1), self.temper, self.min_ess, base)

    # ------------------------------------------------------------------ candidates
    @torch.no_grad()
    def policy(self, view, legal) -> np.ndarray:
        """The network's policy at ``view`` over the actions ``legal`` (float64 ``[68]``, 0 off
        them), from ``encode(view)`` only (the acting policy, as ``CheckpointBot``).

        Raises:
            ValueError: ``legal`` is empty or holds an action that is not legal in ``view``.
        """
        legal = set(legal)
        if not legal or not legal <= set(view.legal_actions):
            raise ValueError(f"legal must be a non-empty set of the view's legal actions "
                             f"{sorted(view.legal_actions)}, got {sorted(legal)!r}")
        agent = self.likelihood.agent
        dev = next(agent.parameters()).device
        mask = np.zeros((1, NUM_ACTIONS), dtype=bool)
        mask[0, list(legal)] = True
        with torch_threads(self.likelihood.threads):
            logits = agent.policy_logits(torch.as_tensor(encode(view), device=dev)[None])
            logits = agent.masked(logits, torch.as_tensor(mask, device=dev))[0].cpu()
        return torch.softmax(logits.double(), -1).numpy()

    def card_prior(self, view, legal) -> np.ndarray:
        """``policy`` over the cards ``legal`` (float64 ``[52]``, 0 off them).

        Raises:
            ValueError: ``legal`` is empty or holds an action that is not a card legal in
                ``view``.
        """
        legal = set(legal)
        if not legal or not legal <= set(view.legal_actions) or max(legal) >= NUM_CARDS:
            raise ValueError(f"legal must be a non-empty set of the view's legal cards "
                             f"{sorted(view.legal_actions)}, got {sorted(legal)!r}")
        return self.policy(view, legal)[:NUM_CARDS]

    def bid_prior_values(self, view, bids) -> np.ndarray:
        """``bid_prior * log p(b)`` for each bid ``b`` of ``bids`` (0..13, legal at ``view``),
        ``p`` the network's policy over the view's legal bids floored at ``BID_PRIOR_FLOOR``:
        float64 ``[len(bids)]``, in points (at most 0)."""
        legal = [a for a in view.legal_actions if BID_OFFSET <= a <= BID_OFFSET + 13]
        p = self.policy(view, legal)
        logp = np.log(np.maximum(p[[BID_OFFSET + b for b in bids]], BID_PRIOR_FLOOR))
        return self.bid_prior * logp

    def _bid_values(self, view) -> tuple[list[int], list[float]]:
        """``PIMCBot``'s bid search; with ``bid_prior`` > 0 each value has
        ``bid_prior_values`` added."""
        cands, values = super()._bid_values(view)
        if self.bid_prior <= 0:
            return cands, values
        return cands, (np.asarray(values) + self.bid_prior_values(view, cands)).tolist()

    def _candidates(self, view, legal) -> list[int]:
        """``PIMCBot``'s candidates; with ``prune`` > 0, those whose class of equivalent cards
        has a prior (``card_prior``, summed over the class) below ``prune`` are dropped, the most
        probable class kept."""
        cands = super()._candidates(view, legal)
        if self.prune <= 0 or len(cands) < 2:
            return cands
        mass = class_mass(legal, cands, self.card_prior(view, legal))
        top = max(cands, key=mass.__getitem__)
        return [c for c in cands if c == top or mass[c] >= self.prune]

    # ------------------------------------------------------------------ leaves
    def _leaf_values(self, view, cands, deals, playout_values) -> list:
        """With ``leaf="critic"`` and fewer than ``leaf_tricks`` tricks played (no Blind Nil this
        hand): ``(1 - leaf_weight)`` of each play-out's value plus ``leaf_weight`` of the critic's
        (``critic_values``); else the play-outs' values."""
        if self.leaf != "critic" or view.trick_number >= self.leaf_tricks \
                or self.leaf_weight == 0 or any(view.blind) or exchanged_seats(view) or not deals:
            return playout_values
        critic = self.critic_values(view, cands, [d for d, _w in deals])
        w = self.leaf_weight
        pv = np.asarray(playout_values, dtype=np.float64).reshape(len(deals), len(cands))
        return ((1 - w) * pv + w * critic).reshape(-1).tolist()

    def position(self, view, deal) -> SpadesGame:
        """The game at ``view``'s position with the hidden hands of ``deal`` (4 hand masks that
        agree with ``view``): the hand's public moves replayed on that deal (no Blind Nil
        exchange this hand)."""
        return _replay(view, deal, _hand_moves(view))

    @torch.no_grad()
    def critic_values(self, view, cands, deals) -> np.ndarray:
        """The privileged critic's value of playing each candidate card, in each deal.

        After the seat plays card ``c`` the next seat to act, ``s``, has an observation whose
        public part is the same in every deal (encoded once per candidate) and whose hand is that
        deal's; the critic reads it with the other three hands of the deal (``s``'s privileged
        input, ``model.privileged_features``) and returns ``s``'s expected hand result, own team
        minus the other, bags at 10 points, in hundreds of points (the trainer's reward scale).

        Args:
            view: the deciding seat's ``PlayerView`` in the play phase.
            cands: card ids it may play.
            deals: D deals (4 hand masks each, the hands now) that agree with ``view``.
        Returns:
            float64 ``[D, len(cands)]``: the value for the deciding seat's team, in points.
        """
        me = view.seat
        agent = self.likelihood.agent
        g = self.position(view, deals[0])
        held = _mask_bits(np.asarray(deals, dtype=np.uint64))        # [D, 4, 52]
        n, size = len(deals), agent.obs_size
        x = np.empty((len(cands), n, size + 3 * NUM_CARDS), np.float32)
        sign = np.empty(len(cands))
        for i, c in enumerate(cands):
            g2 = g.clone()
            g2.apply(c)
            s = g2.current_player
            obs = encode(g2.view(s))[:size]
            after = held.copy()
            after[:, me, c] = False
            x[i, :, :size] = obs
            x[i, :, _HAND[0]:_HAND[1]] = after[:, s]
            x[i, :, size:] = after[:, list(SEATS_FROM[s][1:])].reshape(n, 3 * NUM_CARDS)
            sign[i] = 100.0 if TEAM[s] == TEAM[me] else -100.0
        dev = next(agent.parameters()).device
        with torch_threads(self.likelihood.threads):
            v = agent.critic(torch.from_numpy(x).to(dev)).squeeze(-1).cpu().numpy()
        return (v * sign[:, None]).T.astype(np.float64)

    # ------------------------------------------------------------------ deals
    def _deals_unchecked(self, view, n, rnd, sampler, seats) -> list:
        """Two stages: ``insane``'s deals (``inference_factor * n`` drawn, ``n`` resampled by the
        bid model), then each distinct one weighted by the network's likelihood of the cards
        played, its count kept as an untempered base. The weighted deals are returned as they are
        (no second resampling, which would only lose distinct deals)."""
        if self.inference != "network" or any(view.blind) or exchanged_seats(view):
            # an exchange changed hands after the bids: insane's inference (which skips
            # those seats), or no inference at all
            return super()._deals_unchecked(view, n, rnd, sampler, seats)
        if self.bid_model != "formula":
            seats = []  # stage 1 draws uniform deals; the network reads the bids or none
        stage1 = super()._deals_unchecked(view, n, rnd, sampler, seats)
        if not view.play_history and self.bid_model != "network":
            return stage1  # no card played yet: the bid model is all the evidence
        deals = [d for d, _w in stage1]
        w = self.deal_weights(view, deals, base=np.log([c for _d, c in stage1]))
        total = float(w.sum())
        return [(d, n * float(x) / total) for d, x in zip(deals, w) if x > 0]


__all__ = ["ExpertBot", "PolicyLikelihood", "tempered_weights", "class_mass", "DEFAULT_CHECKPOINT",
           "BID_PRIOR_FLOOR", "INFERENCE",
           "LEAVES"]
