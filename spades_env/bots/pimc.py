"""The ``hard`` and ``insane`` bots: Perfect-Information Monte Carlo (PIMC) players (docs/bots.md).

Card play (Long et al., AAAI 2010; Ginsberg's GIB for bridge): before every card that is a real
choice, draw deals of the unseen cards that agree with the seat's information set
(``sampler.DealSampler``: played cards, hand sizes, public voids, Blind Nil exchange cards), play
each candidate card on each deal to the end of the hand, and choose the card with the best average
outcome. A deal is finished by the fast rule-based play-out (``solver.playout``), or solved exactly
(``solver.solve``, double-dummy minimax; all of a decision's deals in one ``solver.solve_many``
call, in C when the kernel is built) when only the last few tricks remain. The outcome is the
team's score difference for the hand (``solver.HandUtility``: contract made or set, Nil and Blind
Nil bonuses/penalties, bags at their real cost).

Bidding: draw deals; for each candidate bid (Nil unless the hand is plainly unfit, and a window
around the estimated trick count) play every deal out with that bid, and choose the bid with the
best average score difference. The partner's and opponents' bids are the real ones when known,
else ``estimate_bid`` of their sampled hands. Play-outs see every card, so their trick counts are
optimistic; ``bid_shade`` / ``nil_shade`` blend in the outcome with one trick fewer (one more for a
Nil) to correct for it (tuned in duplicate matches against ``medium``).

When at most ``samples`` deals agree with the view (late in a hand), every one of them is played
out once instead of sampling, so the expectation is exact.

``insane`` draws many more deals and reads the bidding: it draws ``inference_factor`` times more
candidate deals, weights each by how likely every observed bid is under a simple bidding model
(``bid_likelihood``), and resamples the deals it plays out in proportion to those weights
(sampling-importance-resampling).

Blind Nil: the bot looks at its cards unless its team trails by ``blind_nil_deficit`` points or more
(and its partner has not bid Blind Nil). In the exchange, the Blind Nil bidder passes back its
highest cards (spades first) and its partner passes its lowest cards.

Determinism: all randomness comes from ``self.rng`` (one draw per decision seeds a fast
``random.Random``), so the same seed and views give the same moves. The bot reads only the view.
"""

from __future__ import annotations

from math import exp

import numpy as np

from ..cards import (
    BID_OFFSET, BLIND_NIL_ACTION, LOOK_ACTION, NEXT_SEAT, PARTNER, PREV_SEAT, SEATS_FROM, TEAM,
)
from ..engine import Phase
from ..rules import legal_bids, passes_for_nil
from .base import Bot, check_flag, check_probability, exchanged_seats, legal_bid_numbers
from .sampler import DealSampler, as_random, check_deal, native_deals
from ..rules import STANDARD_DECK
from .solver import HandUtility, high_rank, low_rank, estimate_tricks, native_playouts, \
    nil_risk, playouts, playouts_array, solve_many
from .work import check_work, search_work

__all__ = ["PIMCBot", "HardBot", "InsaneBot", "best_candidate", "bid_likelihood", "bid_weight",
           "forced_bid", "legal_bids_at", "FORCED_MISMATCH", "estimate_bid",
           "resample"]


def estimate_bid(hand: int, deck=STANDARD_DECK) -> int:
    """Bid the model expects from a 13-card hand: 0 (Nil) for a very safe weak hand, else the
    rounded ``estimate_tricks`` (at least 1); ``deck``: the rules' ``Deck``."""
    e = estimate_tricks(hand, deck)
    if e < 1.6 and nil_risk(hand, deck) < 1.0:
        return 0
    return max(1, int(e + 0.5))


FORCED_MISMATCH = 1e-6
"""``bid_weight`` of a deal that contradicts a forced bid (``mirror``, ``whiz``): all but
impossible, not 0, so that a resample among such deals still has weights to draw by."""


def forced_bid(rules, bid: int) -> bool:
    """Whether ``bid`` tells exactly how many spades its bidder held (docs/rules.md, House rules):
    any bid under ``mirror``, a bid other than Nil under ``whiz``."""
    return bool(rules.mirror or (rules.whiz and bid != 0))


def bid_weight(rules, bid: int, hand: int, legal=None) -> float:
    """Relative likelihood that the holder of ``hand`` (13 cards at bidding time) bid ``bid``
    under ``rules``: a forced bid (``forced_bid``) is 1 when ``hand`` holds that many spades,
    ``FORCED_MISMATCH`` otherwise; any other bid ``bid_likelihood``, divided by its sum over the
    bids ``legal`` at that turn when the rules narrowed them (``legal_bids_at``: a bid that was
    the only one left, or the lowest a team minimum allowed, says less about the hand)."""
    if forced_bid(rules, bid):
        return 1.0 if (hand & rules.deck.spades).bit_count() == bid else FORCED_MISMATCH
    deck = rules.deck
    if legal is not None and len(legal) < 14:
        return bid_likelihood(bid, hand, deck=deck) / sum(bid_likelihood(b, hand, deck=deck)
                                                          for b in legal)
    return bid_likelihood(bid, hand, deck=deck)


def legal_bids_at(view, seat: int) -> list[int] | None:
    """The bids (0..13) ``seat`` could choose from at its turn this hand, from the bids made
    before it (public; ``rules.legal_bids`` with the cards seen), or None when the rules left
    them all (``standard``) or they depend on its cards (``mirror``, ``whiz``)."""
    rules = view.rules
    if rules._free_bids or rules.mirror or rules.whiz:
        return None
    before = [None] * 4
    for s in SEATS_FROM[NEXT_SEAT[view.dealer]]:
        if s == seat:
            break
        before[s] = view.bids[s]
    m = legal_bids(rules, seat, 0, True, before)
    out = [b for b in range(14) if m >> b & 1]
    return None if len(out) == 14 else out


def bid_likelihood(bid: int, hand: int, sigma: float = 1.4, floor: float = 0.03,
                   deck=STANDARD_DECK) -> float:
    """Relative likelihood that a player holding ``hand`` (13 cards, at bidding time) bid ``bid``.

    Bidding model for the inference of ``insane``: a non-Nil bid is normal around
    ``estimate_tricks(hand)`` with deviation ``sigma``; a Nil is likely only for a weak hand with a
    low ``nil_risk``. ``floor`` keeps every deal possible (other players bid differently).
    ``deck``: the rules' ``Deck`` (the hand's top cards in its order). Returns a float in (0, 1].
    """
    e = estimate_tricks(hand, deck)
    if bid == 0:
        r = nil_risk(hand, deck)
        x = max(0.0, r - 0.8) / 1.0 + max(0.0, e - 2.0) / 1.5
        return floor + (1 - floor) * exp(-0.5 * x * x)
    d = (bid - e) / sigma
    return floor + (1 - floor) * exp(-0.5 * d * d)


def resample(weights, n: int, rnd) -> dict[int, int]:
    """Systematic resampling (Kitagawa 1996): ``n`` draws in proportion to ``weights``.

    Args:
        weights: non-negative floats, not all 0.
        n: number of draws (>= 1).
        rnd: a ``random.Random`` (one number is drawn).
    Returns:
        ``{index: count}`` for the drawn indices; the counts sum to ``n``.
    """
    total = float(sum(weights))
    step = total / n
    x = rnd.random() * step
    acc = 0.0
    counts: dict[int, int] = {}
    j = 0
    for i, w in enumerate(weights):
        acc += w
        while x < acc and j < n:
            counts[i] = counts.get(i, 0) + 1
            x += step
            j += 1
    if j < n:  # float round-off: give the rest to the heaviest deal
        i = max(range(len(weights)), key=weights.__getitem__)
        counts[i] = counts.get(i, 0) + n - j
    return counts


# most samples a PIMC bot may take per decision (the insane level uses 400; more runs for hours)
MAX_SAMPLES = 100_000

def best_candidate(cards: list[int], values: list[float]) -> int:
    """The card ``act`` plays from ``card_values``' output: the highest value, the first
    candidate on a tie; the only candidate when there is one (its value is ``nan``)."""
    if len(cards) == 1:
        return cards[0]
    return cards[max(range(len(cards)), key=lambda i: (values[i], -i))]


def _play_legal(view, legal) -> list:
    """``card_values``' checks of its arguments; the legal cards to search (``legal``, by default
    the view's)."""
    if view.phase != Phase.PLAY:
        raise ValueError(f"card_values needs a view in the play phase, got the "
                         f"{Phase(view.phase).name.lower()} phase")
    if not view.legal_actions:
        raise ValueError(f"seat {view.seat} is not to move: it has no legal card")
    if legal is None:
        return list(view.legal_actions)
    if not legal or not set(legal) <= set(view.legal_actions):
        raise ValueError(f"legal must be a non-empty subset of the view's legal cards "
                         f"{sorted(view.legal_actions)}, got {legal!r}")
    return legal


class PIMCBot(Bot):
    """Perfect-Information Monte Carlo bot (base of ``hard`` and ``insane``).

    Args:
        seed: int / None / ``np.random.Generator``.
        samples: deals drawn per card decision.
        bid_samples: deals drawn per bid.
        endgame_tricks: solve deals exactly (double-dummy) when at most this many tricks remain.
        infer_bids: weight deals by the observed bids (``insane``).
        inference_factor: candidate deals drawn per kept deal when ``infer_bids``.
        blind_nil_deficit: bid Blind Nil (when allowed) if the team trails by at least this much.
        bid_window: bids tested around the estimated trick count (see ``_bid_candidates``).
        bid_shade: weight (0..1) of the outcome with one trick fewer for this seat, blended into
            each bidding play-out: play-outs see every card, real play does not, so raw play-out
            trick counts are optimistic.
        nil_shade: the same for a Nil candidate: weight of the outcome where the Nil takes one
            trick (from an opponent) in play-outs where it took none.
        verify: check every sampled deal against the view (``sampler.check_deal``) and raise
            ``AssertionError`` on a contradiction (for tests; costs a little time).
        native_deals: at a card decision with no bid inference, no forced bid, no card known from
            a Blind Nil exchange and more consistent deals than ``samples``, draw the deals in C
            (``sampler.native_deals``) and play them out on arrays (``solver.playouts_array``):
            the same search (uniform deals, the same play-outs and utility), its deals drawn by
            other random numbers, about 2x faster a decision (the PIMC labels of
            ``training.labelling`` use it). Other decisions are searched as without it.
    Raises:
        ValueError: an option out of its range, or options whose product makes one decision
            cost more than ``work.LIMITS`` (``work.search_work``; docs/bots.md, Limits).

    ``bot.work`` is the ``work.WorkEstimate`` of its costliest decision.
    """

    name = "pimc"

    def __init__(self, seed=None, samples: int = 40, bid_samples: int = 40, endgame_tricks: int = 3,
                 infer_bids: bool = False, inference_factor: int = 4,
                 blind_nil_deficit: int = 200, bid_window: int = 2, bid_shade: float = 0.75,
                 nil_shade: float = 0.2, verify: bool = False, native_deals: bool = False):
        super().__init__(seed)
        for nm, v, most in (("samples", samples, MAX_SAMPLES),
                            ("bid_samples", bid_samples, MAX_SAMPLES),
                            ("inference_factor", inference_factor, 1000)):
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise ValueError(f"{nm} must be a positive int, got {v!r}")
            if v > most:  # a decision would run for hours
                raise ValueError(f"{nm} must be at most {most}, got {v}")
        if not isinstance(endgame_tricks, int) or isinstance(endgame_tricks, bool) \
                or not 0 <= endgame_tricks <= 5:
            raise ValueError(f"endgame_tricks must be an int in 0..5, got {endgame_tricks!r}")
        self.samples = samples
        self.bid_samples = bid_samples
        self.endgame_tricks = endgame_tricks
        self.infer_bids = check_flag("infer_bids", infer_bids)
        self.inference_factor = inference_factor
        if isinstance(blind_nil_deficit, (bool, np.bool_)) \
                or not isinstance(blind_nil_deficit, (int, np.integer)):
            raise ValueError(f"blind_nil_deficit must be an int (points), got "
                             f"{blind_nil_deficit!r}")
        self.blind_nil_deficit = int(blind_nil_deficit)
        if not isinstance(bid_window, int) or isinstance(bid_window, bool) \
                or not 0 <= bid_window <= 13:
            raise ValueError(f"bid_window must be an int in 0..13, got {bid_window!r}")
        self.bid_window = bid_window
        self.bid_shade = check_probability("bid_shade", bid_shade)
        self.nil_shade = check_probability("nil_shade", nil_shade)
        self.verify = check_flag("verify", verify)
        self.native_deals = check_flag("native_deals", native_deals)
        # the options' product, checked before any decision (docs/bots.md, Limits)
        self.work = check_work(self.name, self.work_estimate())
        self._utils: dict = {}  # the hand's HandUtility, reused by every card of the hand

    def work_estimate(self, network: dict | None = None):
        """``work.search_work`` of this bot's options: the cost of its costliest decision
        (deals, play-outs, network rows, bytes, seconds) and of one seat's hand."""
        return search_work(self.samples, self.bid_samples, self.endgame_tricks, self.infer_bids,
                           self.inference_factor, self.bid_window, network)

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(samples={self.samples}, bid_samples={self.bid_samples}, "
                f"endgame_tricks={self.endgame_tricks}, infer_bids={self.infer_bids}"
                + (", native_deals=True)" if self.native_deals else ")"))

    # ------------------------------------------------------------------ entry point
    def act(self, view) -> int:
        """Choose an action id for ``view`` (a ``PlayerView`` of the seat to act).

        Raises:
            ValueError: the view has no legal action (not this seat's turn, or the game is over).
        """
        legal = view.legal_actions
        if not legal:
            raise ValueError(f"seat {view.seat} has no legal action (not its turn?)")
        if len(legal) == 1:
            return int(legal[0])
        ph = view.phase
        if ph == Phase.PLAY:
            return self._play(view, legal)
        if ph == Phase.BIDDING:
            if not view.looked:
                return self._blind_nil_choice(view, legal)
            return self._bid(view)
        if ph == Phase.EXCHANGE:
            return self._pass(view)
        raise ValueError(f"no decision in phase {ph!r}")

    # ------------------------------------------------------------------ deals
    def _deals(self, view, n: int) -> list:
        """Deals as ``(hands, weight)`` pairs, weights summing to ``n``: every consistent deal
        once when there are at most ``n`` of them, else ``n`` uniform samples (``insane``:
        resampled by the bid likelihood)."""
        rnd = as_random(self.rng)
        seats = []
        changed = exchanged_seats(view)  # hands changed in an exchange after the bids
        for s in range(4):
            if s == view.seat or view.bids[s] is None or view.blind[s] or s in changed:
                continue
            seats.append(s)
        # a bid the rules force (mirror, whiz) is the bidder's spade count: exact, in the sampler
        spades = view.rules.deck.spades
        forced = {s: view.bids[s] - ((view.played[s] | view.known_cards[s]) & spades).bit_count()
                  for s in seats if forced_bid(view.rules, view.bids[s])}
        sampler = DealSampler(view, spade_counts=forced or None)
        seats = [s for s in seats if s not in forced] if self.infer_bids else []
        if self.verify:
            return [(d, w) for d, w in self._deals_unchecked(view, n, rnd, sampler, seats)
                    if self._verified(view, d)]
        return self._deals_unchecked(view, n, rnd, sampler, seats)

    @staticmethod
    def _verified(view, hands) -> bool:
        why = check_deal(view, hands)
        if why is not None:
            raise AssertionError(f"sampled deal contradicts the information set: {why}")
        return True

    def _deals_unchecked(self, view, n, rnd, sampler, seats) -> list:
        legal_at = {s: legal_bids_at(view, s) for s in seats}  # the bids each could choose
        if sampler.count <= n:
            # few enough deals to take each one exactly once (late in a hand)
            deals = list(sampler.all_deals())
            weights = [1.0] * len(deals)
            for i, d in enumerate(deals):
                for s in seats:
                    weights[i] *= bid_weight(view.rules, view.bids[s], d[s] | view.played[s],
                                             legal_at[s])
            total = sum(weights)
            return [(d, n * w / total) for d, w in zip(deals, weights)]
        if not seats:
            return [(d, 1.0) for d in sampler.samples(n, rnd)]
        m = n * self.inference_factor
        cands = sampler.samples(m, rnd)
        weights = []
        for d in cands:
            w = 1.0
            for s in seats:
                w *= bid_weight(view.rules, view.bids[s], d[s] | view.played[s],
                                legal_at[s])
            weights.append(w)
        counts = resample(weights, n, rnd)
        return [(cands[i], float(k)) for i, k in sorted(counts.items())]

    # ------------------------------------------------------------------ card play
    def _candidates(self, view, legal) -> list[int]:
        """Legal cards with equivalent ones merged: two cards of a suit are equivalent when every
        card ranked between them (in the deck's order) is in the bot's hand or was played to an
        earlier trick."""
        deck = view.rules.deck
        suit_of, st, above, below = deck.suit_of, deck.strength, deck.above, deck.below
        trick_cards = 0
        for _s, c in view.current_trick:
            trick_cards |= 1 << c
        gone = (view.played[0] | view.played[1] | view.played[2] | view.played[3]) & ~trick_cards
        gone |= view.hand
        out = []
        prev = -1
        for c in sorted(legal, key=st.__getitem__):  # by strength: equivalents side by side
            if prev >= 0 and suit_of[prev] == suit_of[c] and st[prev] < st[c] \
                    and not (above[prev] & below[c] & ~gone):
                prev = c
                continue
            out.append(c)
            prev = c
        return out

    def card_values(self, view, legal=None) -> tuple[list[int], list[float]]:
        """The search's estimate of every candidate card, the numbers ``act`` chooses from.

        Args:
            view: the seat's ``PlayerView`` in the play phase, with the seat to move.
            legal: the view's legal cards (default ``view.legal_actions``).
        Returns:
            ``(cards, values)``: the candidate cards (card ids 0..51; of equivalent cards only the
            lowest, see ``_candidates``) and, for each, the average over the sampled deals of the
            hand's score difference for the seat's team (its points minus the other team's, bags
            at their long-run cost; ``solver.HandUtility``), in points, float. With one candidate
            no deal is drawn and its value is ``nan``. ``act`` plays the candidate of highest value
            (the first one on a tie), drawing the same random numbers.
        Raises:
            ValueError: the view is not in the play phase, its seat is not to move, or ``legal``
                holds a card that is not legal.
        """
        return self._card_values(view, _play_legal(view, legal))

    def card_outcomes(self, view, legal=None) -> tuple[list[int], list[float], list[list]]:
        """``card_values`` with the deals' outcomes behind its values (the play page's hint
        counts how often a contract is made from them).

        Returns:
            ``(cards, values, outcomes)``: ``cards`` and ``values`` exactly ``card_values``'
            (the same deals from the same random numbers: either call leaves ``self.rng`` in the
            same state), and ``outcomes[i]`` one ``(weight, won)`` pair per sampled deal for card
            ``i``: the deal's weight in the average and the 4 final trick counts by seat (tricks
            already won included) that its play-out ends with, or in the last
            ``endgame_tricks`` tricks a line of best play of the exact solver (a leaf of the
            minimax value). For ``hard`` and ``insane`` each value is the weighted mean of
            ``HandUtility`` over its outcomes (``ExpertBot`` may mix in its critic). With one
            candidate no deal is drawn: ``outcomes == [[]]``. ``act`` never calls it.
        Raises:
            ValueError: as ``card_values``.
        """
        keep: list = []
        cards, values = self._card_values(view, _play_legal(view, legal), keep)
        return cards, values, keep

    def _card_values(self, view, legal, keep=None) -> tuple[list[int], list[float]]:
        """``card_values`` without the checks (``act`` has already read the legal cards); with
        ``keep`` (an empty list) it also fills ``keep`` with ``card_outcomes``' outcomes."""
        cands = self._candidates(view, legal)
        if keep is not None:
            keep.extend([] for _c in cands)
        if len(cands) == 1:
            return cands, [float("nan")]
        me = view.seat
        team = TEAM[me]
        rules = view.rules
        flb = rules.forced_spade_lead_breaks
        bids = tuple(view.bids)
        key = (bids, tuple(view.blind), tuple(view.bags), tuple(view.scores), rules)
        util = self._utils.get(key)
        if util is None:
            if len(self._utils) >= 16:
                self._utils.clear()
            util = self._utils[key] = HandUtility(*key, 0)
        sign = 1.0 if team == 0 else -1.0
        exact = 13 - view.trick_number <= self.endgame_tricks
        trick = [c for _s, c in view.current_trick]
        leader = view.trick_leader if trick else me
        won = view.tricks_won
        broken = view.spades_broken
        if self.native_deals and not exact and not self.infer_bids:
            got = self._native_card_values(view, cands, trick, leader, won, broken, util, sign,
                                           keep)
            if got is not None:
                return cands, got
        totals = [0.0] * len(cands)
        weight = 0.0
        deals = list(self._deals(view, self.samples))
        nc = len(cands)
        rows = [hands for hands, _w in deals for _c in cands]
        if exact:
            # every (deal, candidate) row solved in one call (C when built; the Python solve
            # otherwise: the same values and leaves)
            got = solve_many(rows, cands * len(deals), trick, leader, won, broken, me, util, flb,
                             deck=rules.deck, leaves=keep is not None)
            values, wons = got if keep is not None else (got, None)
            for d, (_hands, w) in enumerate(deals):
                weight += w
                for i in range(nc):
                    totals[i] += w * values[d * nc + i] * sign
                    if keep is not None:
                        keep[i].append((w, wons[d * nc + i]))
        else:
            outs = playouts(rows, bids, cands * len(deals), trick, leader, won, broken, me, flb,
                            fnc=rules.failed_nil_tricks_count, deck=rules.deck)
            # the utility of each distinct outcome once (play-outs repeat few outcomes)
            by_outcome = {o: util(o) * sign for o in set(outs)}
            values = self._leaf_values(view, cands, deals, [by_outcome[o] for o in outs])
            for d, (_hands, w) in enumerate(deals):
                weight += w
                for i in range(nc):
                    totals[i] += w * values[d * nc + i]
                    if keep is not None:
                        keep[i].append((w, tuple(outs[d * nc + i])))
        weight = weight or 1.0
        return cands, [t / weight for t in totals]

    def _native_card_values(self, view, cands, trick, leader, won, broken, util, sign,
                            keep=None) -> list | None:
        """``_card_values``' averages from deals drawn in C and played out on arrays (the
        ``native_deals`` option), or None where that path does not apply (a forced bid, a card
        known from an exchange, at most ``samples`` consistent deals: enumerated as before).
        ``keep`` (``card_outcomes``): filled with each deal's weight 1 and final trick counts."""
        if type(self)._leaf_values is not PIMCBot._leaf_values or not native_playouts():
            return None  # a subclass that mixes in other leaf values (ExpertBot), or no C
        rules = view.rules
        if any(b is not None and forced_bid(rules, b) for b in view.bids):
            return None
        got = native_deals(view, self.samples, as_random(self.rng).getrandbits(64))
        if got is None:
            return None
        hands, count = got
        if count <= self.samples:
            return None
        nc = len(cands)
        outs = playouts_array(np.repeat(hands, nc, axis=0), view.bids,
                              np.tile(np.array(cands, np.int8), len(hands)), trick, leader, won,
                              broken, view.seat, rules.forced_spade_lead_breaks,
                              rules.failed_nil_tricks_count, rules.deck)
        if keep is not None:
            rows = outs.tolist()
            for i in range(nc):
                keep[i].extend((1.0, tuple(r)) for r in rows[i::nc])
        u = util.values(outs)  # each distinct outcome scored once a hand
        return (u.reshape(len(hands), nc).mean(0) * sign).tolist()

    def _leaf_values(self, view, cands, deals, playout_values) -> list:
        """The value of each (deal, candidate) pair, row ``d * len(cands) + i``, for the seat's
        team in points, given the play-outs' values in the same order (``HandUtility`` of their
        trick counts). Here the play-outs' values as they are; ``ExpertBot`` can mix in its
        network's privileged critic."""
        return playout_values

    def _play(self, view, legal) -> int:
        return best_candidate(*self._card_values(view, legal))

    # ------------------------------------------------------------------ bidding
    def _bid_candidates(self, view) -> list[int]:
        """Bids worth testing: Nil (unless the hand is plainly unfit for it) and a window of
        ``bid_window`` below to ``bid_window + 1`` above the estimated trick count."""
        hand = view.hand
        deck = view.rules.deck
        e = int(estimate_tricks(hand, deck) + 0.5)
        lo = max(1, e - self.bid_window)
        hi = min(13, e + self.bid_window + 1)
        cands = list(range(lo, hi + 1))
        if nil_risk(hand, deck) < 4.0 and estimate_tricks(hand, deck) < 3.5:
            cands.insert(0, 0)
        legal = legal_bid_numbers(view)
        kept = [b for b in cands if b in legal]
        if kept:
            return kept
        # the rules forbid the whole window (e.g. a minimum team bid): the legal bids nearest it
        return sorted(sorted(legal, key=lambda b: min(abs(b - lo), abs(b - hi)))[:2])

    def bid_values(self, view) -> tuple[list[int], list[float]]:
        """The bid search's estimate of every candidate bid, the numbers ``act`` bids from.

        Each candidate (``_bid_candidates``) is played out on the same ``bid_samples`` deals with
        it as this seat's bid (the other seats' bids real, or estimated from their sampled hands
        when still to come), play-out trick counts shaded (``bid_shade``, ``nil_shade``).

        Args:
            view: the seat's ``PlayerView`` in the bidding phase, its cards seen, to move.
        Returns:
            ``(bids, values)``: candidate bids (0 = Nil .. 13; not action ids) and for each the
            weighted average over the deals of the hand's score difference for the seat's team
            (``solver.HandUtility``, bags at their long-run cost), in points, float. ``act``
            bids the first of the highest, drawing the same random numbers.
        Raises:
            ValueError: the view is not a bid of its seat with the cards seen.
        """
        if view.phase != Phase.BIDDING or not view.legal_actions or not view.looked:
            raise ValueError("bid_values needs a view in the bidding phase, its seat to bid with "
                             "its cards seen")
        return self._bid_values(view)

    def _bid(self, view) -> int:
        """Bid the candidate of highest value (``bid_values``; the first on a tie)."""
        cands, values = self._bid_values(view)
        best = max(range(len(cands)), key=lambda i: (values[i], -i))
        return BID_OFFSET + cands[best]

    def bid_outcomes(self, view, bids=None) -> tuple[list[int], list[float], list[list]]:
        """The bid search of ``bids`` with the deals' outcomes behind its values (the play
        page's hint counts how often a contract or a Nil is made from them).

        Args:
            view: as ``bid_values``.
            bids: bids to test (0 = Nil .. 13, each legal now); default the candidates ``act``
                tests (``_bid_candidates``).
        Returns:
            ``(bids, values, outcomes)``: with the default ``bids`` exactly ``PIMCBot``'s
            ``bid_values`` (the same deals from the same random numbers; ``ExpertBot``'s bid
            prior is not added); each bid is tested on the same deals whatever the others, so its
            value does not depend on which other bids are asked. ``outcomes[i]`` holds one
            ``(weight, seat_bids, shares)`` triple per sampled deal for bid ``i``: the deal's
            weight, the 4 bids its play-out was scored with (others' bids still to come
            estimated from their sampled hands) and ``[(share, won), ...]``: the final trick
            counts by seat, with the shares (summing to 1) that the value blends them in
            (``bid_shade``, ``nil_shade``). ``act`` never calls it.
        Raises:
            ValueError: the view is not a bid of its seat with its cards seen, or a bid of
                ``bids`` is not legal now.
        """
        if view.phase != Phase.BIDDING or not view.legal_actions or not view.looked:
            raise ValueError("bid_outcomes needs a view in the bidding phase, its seat to bid "
                             "with its cards seen")
        if bids is None:
            bids = self._bid_candidates(view)
        else:
            legal = legal_bid_numbers(view)
            bids = [int(b) for b in bids]
            if not bids or any(b not in legal for b in bids):
                raise ValueError(f"bids must be legal bids now ({sorted(legal)}), got {bids!r}")
        keep: list = []
        cands, values = self._bid_search(view, bids, keep)
        return cands, values, keep

    def _bid_values(self, view) -> tuple[list[int], list[float]]:
        """``bid_values`` without the checks: ``_bid_search`` of the candidate bids."""
        return self._bid_search(view, self._bid_candidates(view))

    def _bid_search(self, view, cands, keep=None) -> tuple[list[int], list[float]]:
        """Test each bid of ``cands`` over sampled deals, playing every deal out with it as this
        seat's bid (the others' bids real or estimated) and averaging the score difference
        (``HandUtility``); with ``keep`` (an empty list) also fill it with ``bid_outcomes``'
        outcomes."""
        me = view.seat
        team = TEAM[me]
        rules = view.rules
        shade = self.bid_shade
        nil_shade = self.nil_shade
        bids_fixed = list(view.bids)
        utils: dict = {}
        totals = [0.0] * len(cands)
        if keep is not None:
            keep.extend([] for _c in cands)
        deals = list(self._deals(view, self.bid_samples))
        keys = []
        for hands, _w in deals:
            bids = list(bids_fixed)
            for s in range(4):
                if s != me and bids[s] is None:
                    bids[s] = estimate_bid(hands[s], rules.deck)
            for b in cands:
                bids[me] = b
                keys.append(tuple(bids))
        nc = len(cands)
        outs = self._bid_playouts(view, [hands for hands, _w in deals for _c in cands], keys)
        for d, (hands, w) in enumerate(deals):
            for i, b in enumerate(cands):
                key = keys[d * nc + i]
                u = utils.get(key)
                if u is None:
                    u = utils[key] = HandUtility(key, view.blind, view.bags, view.scores, rules,
                                                 team)
                won = list(outs[d * nc + i])
                v = u(won)
                blend = None
                if b and shade and won[me]:
                    # play-outs see every card, real play does not: blend in one trick fewer
                    blend, raw = shade, tuple(won)
                    won[me] -= 1
                    won[NEXT_SEAT[me]] += 1
                    v = (1 - shade) * v + shade * u(won)
                elif not b and nil_shade and not won[me]:
                    # the same optimism for a Nil: blend in a Nil that takes one trick
                    o = NEXT_SEAT[me] if won[NEXT_SEAT[me]] else PREV_SEAT[me]
                    if won[o]:
                        blend, raw = nil_shade, tuple(won)
                        won[o] -= 1
                        won[me] += 1
                        v = (1 - nil_shade) * v + nil_shade * u(won)
                totals[i] += w * v
                if keep is not None:
                    keep[i].append((w, key, [(1.0, tuple(won))] if blend is None
                                    else [(1 - blend, raw), (blend, tuple(won))]))
        weight = sum(w for _hands, w in deals) or 1.0
        return list(cands), [t / weight for t in totals]

    def _bid_playouts(self, view, rows, keys) -> list:
        """The final trick counts of each deal of ``rows`` played out from the first lead with
        the bids of ``keys`` (same order)."""
        rules = view.rules
        flb = rules.forced_spade_lead_breaks
        if rules.two_of_clubs_leads:
            # the holder of the 2 of clubs leads it (rules.first_leader): play-outs by holder,
            # each starting with that lead
            outs = [None] * len(rows)
            for holder in range(4):
                idx = [r for r in range(len(rows)) if rows[r][holder] & 1]
                if not idx:
                    continue
                got = playouts([rows[r] for r in idx], [keys[r] for r in idx], [0] * len(idx),
                               [], holder, (0, 0, 0, 0), rules.spades_lead_any_time, holder, flb,
                               fnc=rules.failed_nil_tricks_count, deck=rules.deck)
                for r, o in zip(idx, got):
                    outs[r] = o
            return outs
        return playouts(rows, keys, [-1] * len(keys), [], NEXT_SEAT[view.dealer], (0, 0, 0, 0),
                        rules.spades_lead_any_time, view.seat, flb,
                        fnc=rules.failed_nil_tricks_count, deck=rules.deck)

    # ------------------------------------------------------------------ Blind Nil
    def _blind_nil_choice(self, view, legal) -> int:
        me = view.seat
        team = TEAM[me]
        deficit = view.scores[1 - team] - view.scores[team]
        if (BLIND_NIL_ACTION in legal and not view.blind[PARTNER[me]]
                and deficit >= self.blind_nil_deficit):
            return BLIND_NIL_ACTION
        return LOOK_ACTION

    def _pass(self, view) -> int:
        """An exchange (``rules.exchanges``): the Nil bidder passes its highest card (spades
        first), its partner passes its lowest card (non-spades first)."""
        hand = view.hand
        if not hand:
            raise ValueError("no card to pass")
        deck = view.rules.deck
        if passes_for_nil(view.rules, view.seat, view.bids, view.blind, view.dealer):
            return high_rank(hand, deck)
        return low_rank(hand, deck)


class HardBot(PIMCBot):
    """``hard``: PIMC with 100 deals per card (the last 3 tricks solved exactly) and 48 deals per
    bid. Options as ``PIMCBot``."""

    name = "hard"

    def __init__(self, seed=None, samples: int = 100, bid_samples: int = 48,
                 endgame_tricks: int = 3, **kw):
        super().__init__(seed, samples=samples, bid_samples=bid_samples,
                         endgame_tricks=endgame_tricks, **kw)


class InsaneBot(PIMCBot):
    """``insane``: PIMC with 400 deals per card and 240 per bid (the last 3 tricks solved
    exactly), and bid-consistent inference (deals resampled by the likelihood of every observed
    bid). Its better-informed bidding is shaded less (``bid_shade=0.5``), which keeps the table's
    bid total in the 9.5..11.5 range (the contract-quality target of benchmarks/bench_contract_quality.py). Options as ``PIMCBot``."""

    name = "insane"

    def __init__(self, seed=None, samples: int = 400, bid_samples: int = 240,
                 endgame_tricks: int = 3, infer_bids: bool = True, bid_shade: float = 0.5, **kw):
        super().__init__(seed, samples=samples, bid_samples=bid_samples,
                         endgame_tricks=endgame_tricks, infer_bids=infer_bids,
                         bid_shade=bid_shade, **kw)
