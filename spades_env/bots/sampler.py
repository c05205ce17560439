"""Deal sampler (determinization) for the Monte-Carlo bots.

Given one seat's ``PlayerView`` (its information set), draw full deals of the cards it has not seen
to the seats whose hands it does not know, agreeing with everything public (docs/rules.md, Play):

- the observer's own hand and every card played (``view.played``) are fixed;
- each seat holds exactly ``view.hand_sizes[seat]`` cards;
- a seat that failed to follow a suit is void in it (``view.voids``);
- a seat that led a spade before spades were broken held only spades then, so it is void in
  clubs, diamonds and hearts from then on (the engine does not record this as a void, but it is
  public: see ``inferred_voids``);
- cards known from the Blind Nil exchange (``view.known_cards``) stay with the seat that holds them;
- optionally (``spade_counts``) a seat holds exactly so many of the unseen spades: what a bid the
  rules force tells (``mirror``, ``whiz``: docs/rules.md, House rules; ``bots.pimc.forced_bid``).

Suits are the rules' deck's (``view.rules.deck``): under ``Rules.jokers`` the jokers and the 2 of
diamonds are spades, so a seat void in spades holds none of them, and a forced bid counts them.
The deck always holds the 52 card ids (the jokers take the ids of the deuces that left it), so the
sampler deals exactly the cards in play.

Every constraint is "card of suit ``s`` may (not) go to seat ``o``", so the unknown cards fall into
at most four *pools* (one per suit, suits with the same set of allowed seats merged). The sampler
counts consistent deals exactly with a small dynamic program over pools (state: cards each seat
still needs) and then draws, pool by pool, how many cards of the pool each seat gets with
probability proportional to the number of completions, and which cards by a uniform shuffle. The
result is an **exactly uniform** draw over all consistent deals (no rejection, no systematic
exclusion), and it stays fast when constraints are tight: the work depends on the number of pools
(<= 4) and hand sizes (<= 13), never on how rare a consistent deal is under blind dealing.
``DealSampler.samples`` draws many deals at once the same way with numpy (the splits from the same
tables, the cards by ``Generator.permuted``), about 5x faster than deal by deal for 40 deals.

This is the determinization step of PIMC (Long et al., "Understanding the Success of Perfect
Information Monte Carlo Sampling in Game Tree Search", AAAI 2010; OpenSpiel ``ismcts.py``).
"""

from __future__ import annotations

import ctypes
import random
from bisect import bisect_left
from itertools import combinations
from math import comb

import numpy as np

from ..cards import mask_to_cards
from ..native import NativeUnavailable, c_deck, load_kernel

__all__ = ["DealSampler", "inferred_voids", "sample_deals", "check_deal", "native_deals"]

# ``DealSampler.samples`` draws at least this many deals at once with numpy (fewer one by one in
# Python, faster there: numpy's fixed cost per call is about that of 3 Python deals)
BATCH_MIN = 4
# deals per numpy batch (bounds the batch's arrays: a few KB a deal)
BATCH_ROWS = 4096


def inferred_voids(view) -> tuple:
    """Public voids of each seat: ``view.known_voids`` (failed to follow, and the voids a spade
    lead before spades were broken implies; ``rules.voids_revealed``).

    Args:
        view: a ``PlayerView``.
    Returns:
        4 ints by seat, bit ``s`` set when that seat can hold no card of suit ``s``.
    """
    return view.known_voids


def _splits(c: int, allowed: tuple, need: tuple):
    """All ways to hand ``c`` cards to the seats in ``allowed`` (indices into ``need``), each seat
    ``i`` getting at most ``need[i]``; yields tuples of per-seat counts (length ``len(need)``)."""
    n = len(need)
    if len(allowed) == 1:
        a = allowed[0]
        if c <= need[a]:
            k = [0] * n
            k[a] = c
            yield tuple(k)
        return
    a, rest = allowed[0], allowed[1:]
    rest_cap = sum(need[i] for i in rest)
    for x in range(max(0, c - rest_cap), min(c, need[a]) + 1):
        for k in _splits(c - x, rest, need):
            k = list(k)
            k[a] = x
            yield tuple(k)


def _allowed(key) -> tuple:
    """The allowed seats of a pool key (a tuple of seat indices, or ``(that, "spades")``)."""
    return key[0] if key and isinstance(key[-1], str) else key


def _multinomial(c: int, ks) -> int:
    out = 1
    left = c
    for k in ks:
        if k:
            out *= comb(left, k)
            left -= k
    return out


class DealSampler:
    """Uniform sampler over the deals consistent with one seat's information set.

    Args:
        view: the observer's ``PlayerView``. If the observer has not looked at its hand (Blind Nil
            decision), its own hand is sampled too.
        extra_voids: optional 4 suit masks by seat to add as constraints (used by tests).
        spade_counts: optional ``{seat: n}``: that seat holds exactly ``n`` of the unseen spades
            (the spades are then a pool of their own, split only that way).
    Attributes:
        seats: the seats whose hands are sampled (not the observer's, unless it has not looked).
        count: exact number of consistent deals (Python int, may be huge).
    Raises:
        ValueError: when no deal agrees with the view (a corrupt view: e.g. a seat void in every
            suit left).
    """

    def __init__(self, view, extra_voids=None, spade_counts=None):
        self.view = view
        voids = list(inferred_voids(view))
        if extra_voids is not None:
            voids = [voids[s] | extra_voids[s] for s in range(4)]
        self.voids = tuple(voids)
        fixed = [0, 0, 0, 0]
        seats = []
        for s in range(4):
            if s == view.seat and view.looked:
                fixed[s] = view.hand
            else:
                fixed[s] = view.known_cards[s] if s != view.seat else 0
                seats.append(s)
        self.fixed = fixed
        self.seats = tuple(seats)
        known_mask = 0
        for s in range(4):
            known_mask |= fixed[s]
        played = view.played[0] | view.played[1] | view.played[2] | view.played[3]
        free = ((1 << 52) - 1) & ~played & ~known_mask
        need = tuple(view.hand_sizes[s] - fixed[s].bit_count() for s in seats)
        if any(n < 0 for n in need) or sum(need) != free.bit_count():
            raise ValueError(f"inconsistent view: seats {seats} need {need} cards but "
                             f"{free.bit_count()} are unseen")
        # Pools: suits grouped by the set of seats (indices into `seats`) that may hold them.
        groups: dict[tuple, list[int]] = {}
        suits = view.rules.deck.suit_masks
        for suit in range(4):
            cards = mask_to_cards(free & suits[suit])
            if not cards:
                continue
            allowed = tuple(i for i, s in enumerate(seats)
                            if not (voids[s] >> suit) & 1 and need[i])
            if not allowed:
                raise ValueError(
                    f"inconsistent view: no seat may hold the unseen cards of suit {suit}")
            key = (allowed, "spades") if spade_counts and suit == 3 else allowed
            groups.setdefault(key, []).extend(cards)
        # Larger allowed sets last: the last pool's split is then forced by the needs left.
        pools = sorted(groups.items(), key=lambda kv: (len(_allowed(kv[0])), len(kv[1])))
        self.pools = tuple((_allowed(key), tuple(cards)) for key, cards in pools)
        # the split each seat must take of the spades pool (indices into `seats`), or None
        self._fixed_split, self._spades_pool = None, -1
        if spade_counts:
            self._fixed_split = {seats.index(s): n for s, n in spade_counts.items()
                                 if s in seats}
            self._spades_pool = next((i for i, (key, _) in enumerate(pools)
                                      if isinstance(key[-1], str)), -1)
            if self._spades_pool < 0 and any(self._fixed_split.values()):
                raise ValueError(f"inconsistent view: spade counts {spade_counts} but no spade "
                                 f"is unseen")
        self.need = need
        self._ways: dict = {}
        self._choice: dict = {}
        self._arrays = None  # the batched draw's arrays (``_tables``)
        # no unseen card (e.g. the last trick's last cards): the one deal is the fixed hands
        self.count = self._count(0, need) if self.pools else 1
        if self.count == 0:
            raise ValueError(
                "inconsistent view: no deal agrees with the known voids and hand sizes")

    def _count(self, i: int, need: tuple) -> int:
        key = (i, need)
        w = self._ways.get(key)
        if w is not None:
            return w
        allowed, cards = self.pools[i]
        c = len(cards)
        if i == len(self.pools) - 1:
            w = 0
            if sum(need[a] for a in allowed) == c and sum(need) == c and self._split_ok(i, need):
                w = _multinomial(c, need)
            self._ways[key] = w
            return w
        total = 0
        opts = []
        for k in _splits(c, allowed, need):
            if not self._split_ok(i, k):
                continue
            rest = tuple(need[j] - k[j] for j in range(len(need)))
            sub = self._count(i + 1, rest)
            if sub:
                w = _multinomial(c, k) * sub
                total += w
                opts.append((k, rest, w))
        self._ways[key] = total
        if total:
            cum = []
            acc = 0
            for k, rest, w in opts:
                acc += w
                cum.append(acc / total)
            cum[-1] = 1.0
            self._choice[key] = ([(k, rest) for k, rest, _ in opts], cum)
        return total

    def _split_ok(self, i: int, k) -> bool:
        """Whether pool ``i`` may be split ``k`` (cards per seat index): always, except the
        spades pool under ``spade_counts``."""
        if self._fixed_split is None or i != self._spades_pool:
            return True
        return all(k[a] == n for a, n in self._fixed_split.items())

    def sample(self, rnd: random.Random) -> list[int]:
        """Draw one consistent deal, uniformly.

        Args:
            rnd: a ``random.Random`` (the caller seeds it from its own generator).
        Returns:
            4 hand masks by seat (52-bit ints); the observer's is its own hand.
        """
        hands = list(self.fixed)
        seats = self.seats
        need = self.need
        last = len(self.pools) - 1
        for i, (allowed, cards) in enumerate(self.pools):
            if i == last:
                k = need
            else:
                ks, cum = self._choice[(i, need)]
                if len(ks) == 1:
                    j = 0
                else:
                    x = rnd.random()
                    j = 0
                    while cum[j] < x:
                        j += 1
                k, need = ks[j]
            if len(allowed) == 1:
                hands[seats[allowed[0]]] |= _mask_of(cards)
                continue
            perm = rnd.sample(cards, len(cards))
            pos = 0
            for a in allowed:
                n = k[a]
                if n:
                    m = 0
                    for card in perm[pos:pos + n]:
                        m |= 1 << card
                    hands[seats[a]] |= m
                    pos += n
        return hands

    def all_deals(self):
        """Every consistent deal, each once (a generator of 4-mask lists; ``count`` of them).
        Meant for small cases (late in a hand): the PIMC bots enumerate instead of sampling when
        ``count`` is at most their sample count."""
        seats = self.seats
        pools = self.pools
        last = len(pools) - 1

        def split_pool(cards, allowed, k, hands):
            # every way to give k[a] cards of `cards` to seats[allowed[a]]
            if not allowed:
                yield hands
                return
            a = allowed[0]
            n = k[a]
            for combo in combinations(cards, n):
                chosen = _mask_of(combo)
                rest = [c for c in cards if not (chosen >> c) & 1]
                h2 = list(hands)
                h2[seats[a]] |= chosen
                yield from split_pool(rest, allowed[1:], k, h2)

        def rec(i, need, hands):
            allowed, cards = pools[i]
            if i == last:
                options = [(need, None)]
            else:
                options = self._choice.get((i, need), ([], []))[0]
            for k, rest in options:
                for h2 in split_pool(list(cards), allowed, k, hands):
                    if i == last:
                        yield h2
                    else:
                        yield from rec(i + 1, rest, h2)

        if not pools:
            yield list(self.fixed)
            return
        yield from rec(0, self.need, list(self.fixed))

    def samples(self, n: int, rnd: random.Random, batched: bool | None = None) -> list[list[int]]:
        """``n`` independent uniform deals.

        Args:
            n: number of deals (int >= 0).
            rnd: a ``random.Random``; the deals are a function of its state (same state, same
                deals), and it is advanced.
            batched: True draws all ``n`` at once with numpy (``_batch``: one ``getrandbits(64)``
                of ``rnd`` seeds a ``np.random.Generator``); False deal by deal in Python
                (``sample``); None (default) batched when ``n >= BATCH_MIN``. Both are uniform
                over the consistent deals; they draw different deals for the same ``rnd``.
        Returns:
            list of ``n`` deals, each 4 hand masks by seat (Python ints).
        """
        if batched is None:
            batched = n >= BATCH_MIN
        if not batched or n <= 0 or not self.pools:
            return [self.sample(rnd) for _ in range(n)]
        gen = np.random.default_rng(rnd.getrandbits(64))
        out: list = []
        for start in range(0, n, BATCH_ROWS):
            out += self._batch(min(BATCH_ROWS, n - start), gen)
        return out

    def _tables(self) -> tuple:
        """The batched draw's constant arrays, built on first use: each unknown card's bit
        (float64 ``2.0**card``: sums of distinct ones below 2**53 are exact), pool and position in
        its pool (columns pool by pool), the column slices of the pools with more than one allowed
        seat, the seat of each seat index, and the fixed masks (float64)."""
        if self._arrays is None:
            cards, pool, pos, shuffle = [], [], [], []
            for i, (allowed, cs) in enumerate(self.pools):
                if len(allowed) > 1:
                    shuffle.append(slice(len(cards), len(cards) + len(cs)))
                cards += cs
                pool += [i] * len(cs)
                pos += range(len(cs))
            self._arrays = (np.ldexp(1.0, np.array(cards)), np.array(pool),
                            np.array(pos)[None, :, None], tuple(shuffle), np.array(self.seats),
                            np.array([float(m) for m in self.fixed]))
        return self._arrays

    def _batch(self, n: int, gen: np.random.Generator) -> list[list[int]]:
        """``n`` uniform deals (n >= 1) drawn with ``gen``, as ``sample`` draws one: per pool, the
        split (cards per seat) with probability proportional to its completions given the needs
        the pools before it left (a Python walk over ``_choice``, one uniform of ``gen`` per deal
        and pool), then which cards by an exact uniform shuffle (``Generator.permuted``) of the
        pool's seat labels. Returns 4 masks by seat per deal, as ``sample``."""
        bits, pool, pos, shuffle, seat_of, fixed = self._tables()
        last = len(self.pools) - 1
        if last == 0:
            splits = np.array(self.need).reshape(1, 1, -1)  # one pool: each seat takes its need
        else:
            # pool 0 has one state (the needs): its option for every deal at once, the first
            # with cum >= x (as ``sample``'s walk and ``bisect_left``)
            ks, cum = self._choice[(0, self.need)]
            opts = np.array(ks)  # (options, 2, seat index): the split and the needs left
            u = gen.random((n, last))
            j = np.searchsorted(np.array(cum), u[:, 0])
            if last == 1:
                splits = opts[j]  # the last pool takes the needs left
            else:
                choice = self._choice
                flat: list = []
                for jj, row in zip(j.tolist(), u[:, 1:].tolist()):
                    k, need = ks[jj]
                    flat += k
                    for i, x in enumerate(row, 1):
                        ks_i, cum_i = choice[(i, need)]
                        k, need = ks_i[bisect_left(cum_i, x)]
                        flat += k
                    flat += need
                splits = np.array(flat).reshape(n, last + 1, -1)
            # splits: (n, pools, seat index) card counts
        # before the shuffle, position j of a pool goes to the seat index whose segment (seat
        # indices in order, each as long as its count) holds j
        ends = np.cumsum(splits, axis=2)[:, pool, :]  # (n or 1, cards, seat index)
        labels = seat_of[(pos >= ends).sum(axis=2)]  # (n or 1, cards): seats, int64
        if labels.shape[0] != n:
            labels = np.repeat(labels, n, axis=0)
        for sl in shuffle:
            part = labels[:, sl]
            gen.permuted(part, axis=1, out=part)
        own = (labels[:, None, :] == _SEATS).astype(np.float64)  # (n, 4, cards)
        return (own @ bits + fixed).astype(np.uint64).tolist()


_SEATS = np.arange(4)[:, None]


def _mask_of(cards) -> int:
    m = 0
    for c in cards:
        m |= 1 << c
    return m


def as_random(rng) -> random.Random:
    """A ``random.Random`` seeded from ``rng`` (``np.random.Generator``, ``random.Random`` or int
    seed); used so that sampling is fast yet fully determined by the caller's seed.

    Raises:
        ValueError: ``rng`` is None (no unseeded randomness).
    """
    if isinstance(rng, random.Random):
        return rng
    if isinstance(rng, np.random.Generator):
        return random.Random(int(rng.integers(1 << 62)))
    if rng is None:
        raise ValueError("pass a seed or a generator: the sampler never draws unseeded")
    return random.Random(np.random.default_rng(rng).integers(1 << 62).item())


def native_deals(view, n: int, seed: int):
    """``n`` uniform consistent deals drawn in C (``spades_env/_native/deals.c``: the pools,
    count and split walk of ``DealSampler``, its random numbers from ``seed``), for a view whose
    only constraints are hand sizes and public voids: the observer has looked at its hand and no
    card is known from a Blind Nil exchange (``spade_counts`` are not supported either). A few
    microseconds a deal, where ``DealSampler`` takes about 5 (its set-up about 40 a decision).

    Args:
        view: the observer's ``PlayerView``.
        n: deals to draw (int >= 0); 0 only counts them.
        seed: the draw's seed (an int in [0, 2**64)); the same seed, the same deals.
    Returns:
        ``(hands, count)``: uint64 ``[n, 4]`` hand masks by seat (the observer's is its hand) and
        the number of consistent deals (a float: ``DealSampler.count`` to 1e-12, exactly for the
        small counts that decide between drawing and enumerating);
        or None when the view is not such a case (also during an exchange, where a hand holds
        more than 13 cards) or the kernel is not built (use ``DealSampler``).
    Raises:
        ValueError: ``n`` not an int >= 0, ``seed`` not an int in [0, 2**64), or no deal agrees
            with the view (as ``DealSampler``).
    """
    if isinstance(n, (bool, np.bool_)) or not isinstance(n, (int, np.integer)) or n < 0:
        raise ValueError(f"n must be a non-negative int, got {n!r}")
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)) \
            or not 0 <= seed < 1 << 64:
        raise ValueError(f"seed must be an int in [0, 2**64), got {seed!r}")
    if not view.looked or any(view.known_cards) \
            or not all(0 <= view.hand_sizes[s] <= 13 for s in range(4)):
        return None
    try:
        kernel = load_kernel()
    except NativeUnavailable:
        return None
    me = view.seat
    seats = [s for s in range(4) if s != me]
    voids = inferred_voids(view)
    fixed = np.zeros(4, np.uint64)
    fixed[me] = view.hand
    played = view.played[0] | view.played[1] | view.played[2] | view.played[3]
    free = ((1 << 52) - 1) & ~played & ~view.hand
    need = np.array([view.hand_sizes[s] for s in seats], np.int8)
    seat_ids = np.array(seats, np.int8)  # (held here: the kernel reads them by address)
    seat_voids = np.array([voids[s] & 15 for s in seats], np.int8)  # a bit per suit
    out = np.empty((int(n), 4), np.uint64)
    count = ctypes.c_double()
    got = kernel.sp_sample_deals(
        c_deck(view.rules.deck), fixed.ctypes.data, free, 3, seat_ids.ctypes.data,
        need.ctypes.data, seat_voids.ctypes.data, int(n), int(seed),
        out.ctypes.data, ctypes.byref(count))
    if got == -1:
        raise ValueError("inconsistent view: no deal agrees with the known voids and hand sizes")
    if got:
        raise RuntimeError(f"sp_sample_deals failed ({got})")
    return out, count.value


def sample_deals(view, n: int, rng=0) -> list[list[int]]:
    """``n`` uniform consistent deals for ``view`` (see ``DealSampler``).

    Args:
        view: a ``PlayerView``.
        n: number of deals (int >= 0).
        rng: ``np.random.Generator``, ``random.Random`` or int seed (default 0: deterministic).
    Returns:
        list of ``n`` deals, each 4 hand masks by seat.
    Raises:
        ValueError: ``n`` negative, or no deal agrees with the view.
    """
    if not isinstance(n, (int, np.integer)) or n < 0:
        raise ValueError(f"n must be a non-negative int, got {n!r}")
    return DealSampler(view).samples(int(n), as_random(rng))


def check_deal(view, hands) -> str | None:
    """Why ``hands`` (4 masks) contradicts ``view``, or None when it agrees with it.

    Checks: the observer's hand, disjointness from played cards and each other, hand sizes, public
    voids (``inferred_voids``) and cards known from the Blind Nil exchange.
    """
    if len(hands) != 4:
        return "need 4 hands"
    played = view.played[0] | view.played[1] | view.played[2] | view.played[3]
    voids = inferred_voids(view)
    suits = view.rules.deck.suit_masks
    seen = 0
    for s in range(4):
        h = hands[s]
        if h & seen:
            return f"seat {s} holds a card another seat holds"
        seen |= h
        if h & played:
            return f"seat {s} holds a card already played"
        if h.bit_count() != view.hand_sizes[s]:
            return f"seat {s} holds {h.bit_count()} cards, not {view.hand_sizes[s]}"
        if s == view.seat and view.looked and h != view.hand:
            return "the observer's hand differs"
        for suit in range(4):
            if (voids[s] >> suit) & 1 and h & suits[suit]:
                return f"seat {s} holds a card of suit {suit} it is known to be void in"
        if s != view.seat and view.known_cards[s] & ~h:
            return f"seat {s} lacks a card known from the Blind Nil exchange"
    if seen | played != (1 << 52) - 1:
        return "the hands and the played cards do not make one deck"
    return None

