"""The scripted bots ``easy`` and ``medium`` (``docs/bots.md``).

Both decide from one seat's ``PlayerView`` only, with bit operations on 52-bit card masks.

``EasyBot``
    Bids a rough count of sure tricks (aces, guarded kings, top and long spades), never Nil, always
    looks at its cards (no Blind Nil). Plays by simple habits (win cheaply when the partner is not
    winning, otherwise play low) and with probability ``careless`` (default 0.25) plays a uniformly
    random legal card instead.

``MediumBot``
    Bidding: counts high cards, long spades and short suits with spare spades for ruffing (the
    strategy notes of docs/bots.md); bids Nil with a safe hand (no high spades, few spades, no aces, no
    unguarded kings or queens, many low cards); bids honestly (rounds down) when the partner already
    bid high. With ``Rules.blind_nil`` on it bids Blind Nil only as a comeback: its team is at least
    ``blind_nil_deficit`` (200) points behind and its partner has not bid Nil.
    Play: counts the cards played and the voids shown (``knowledge.py``); takes tricks while the
    team still needs them; ducks (plays the highest losing card, leads low) once the contract is
    safe, because bags cost about 9 points each; covers the partner's Nil (leads high, overtakes the
    partner's winning card, plays high before the partner); attacks an opponent's Nil (leads low in
    suits the Nil bidder may still hold, never overtakes the Nil bidder's winning card, plays low in
    front of it); tries to set the opponents when they still need nearly all remaining tricks.

Blind Nil exchange (both bots): the Blind Nil bidder's partner passes its lowest cards (low
non-spades first), and the Blind Nil bidder passes back its highest cards (high spades first). This
is the usual practice: the Nil hand wants low cards, the covering hand wants the high ones.
"""

from __future__ import annotations

import numpy as np

from ..cards import (
    BID_OFFSET, BLIND_NIL_ACTION, LOOK_ACTION, NEXT_SEAT, NON_SPADES_MASK, OPPONENTS, PARTNER,
    PREV_SEAT, SPADES_MASK, SUIT_MASKS, TEAM,
)
from ..engine import Phase
from ..rules import card_beats, passes_for_nil
from .base import Bot, check_flag, check_probability, legal_bid_numbers, nearest_legal_bid
from .knowledge import can_beat, current_winner, higher_in_suit, possible_holdings

__all__ = ["EasyBot", "MediumBot", "medium_trick_estimate", "medium_nil_safe", "easy_trick_count"]


# --------------------------------------------------------------------------- small mask helpers
def _lowest(mask: int) -> int:
    """Lowest card id in a non-empty mask (lowest suit, then lowest rank)."""
    return (mask & -mask).bit_length() - 1


def _highest(mask: int) -> int:
    return mask.bit_length() - 1


def _cards(mask: int):
    while mask:
        low = mask & -mask
        yield low.bit_length() - 1
        mask ^= low


def _suit_bits(hand: int, suit: int) -> int:
    """13-bit rank mask of ``hand`` in ``suit`` (bit r = rank r, 2..A = 0..12)."""
    return (hand >> (13 * suit)) & 0x1FFF


def _lowest_rank(mask: int) -> int:
    """Card of lowest rank in a mask (ties: lowest suit id); ``mask`` must be non-empty."""
    best, br = -1, 99
    for s in range(4):
        b = (mask >> (13 * s)) & 0x1FFF
        if b:
            r = (b & -b).bit_length() - 1
            if r < br:
                best, br = 13 * s + r, r
    return best


def _highest_rank(mask: int, spade_last: bool = False) -> int:
    """Card of highest rank in a non-empty mask; ``spade_last`` picks a non-spade when one exists."""
    if spade_last and mask & NON_SPADES_MASK:
        mask &= NON_SPADES_MASK
    best, br = -1, -1
    for s in range(4):
        b = (mask >> (13 * s)) & 0x1FFF
        if b:
            r = b.bit_length() - 1
            if r > br:
                best, br = 13 * s + r, r
    return best


def _legal_mask(view) -> int:
    m = 0
    for a in view.legal_actions:
        if a < 52:
            m |= 1 << a
    return m


# --------------------------------------------------------------------------- bidding
def easy_trick_count(hand: int) -> int:
    """Easy's rough count of sure tricks in a 52-bit hand mask: aces, kings with at least one more
    card of their suit, the king of spades, and one trick per spade beyond four. At least 1."""
    n = 0
    for s in range(4):
        b = _suit_bits(hand, s)
        length = b.bit_count()
        if b >> 12 & 1:
            n += 1
        if b >> 11 & 1 and (length >= 2 or s == 3):
            n += 1
    n += max(0, _suit_bits(hand, 3).bit_count() - 4)
    return max(1, min(13, n))


def medium_trick_estimate(hand: int) -> float:
    """Medium's expected trick count for a 52-bit hand mask (docs/bots.md strategy notes).

    Spades: A = 1, K = 1 with another spade, Q = 1 with two more (0.5 without A or K), J = 0.5 with
    three more; every spade beyond three plus the counted honours is a long trick. Side suits:
    A = 1 (0.7 in a suit of 6+), K = 1 behind the A / 0.75 guarded (less in long suits), Q 0.25 in a
    3+ suit with the A or K. Ruffs: each void is worth two and each non-ace singleton one ruff,
    0.8 trick each, limited by the spare spades (those not counted above).
    """
    sp = _suit_bits(hand, 3)
    n_sp = sp.bit_count()
    t = 0.0
    honors = 0
    if sp >> 12 & 1:
        t += 1.0
        honors += 1
    if sp >> 11 & 1:
        if n_sp >= 2:
            t += 1.0
            honors += 1
        else:
            t += 0.3
    if sp >> 10 & 1 and n_sp >= 3:
        t += 1.0 if sp & (3 << 11) else 0.5
        honors += 1
    if sp >> 9 & 1 and n_sp >= 4:
        t += 0.5
        honors += 1
    long_tricks = max(0, n_sp - 3 - honors)
    t += long_tricks
    spare = max(0, n_sp - honors - long_tricks)
    ruff_slots = 0
    for s in range(3):
        b = _suit_bits(hand, s)
        length = b.bit_count()
        ace = b >> 12 & 1
        king = b >> 11 & 1
        if ace:
            t += 1.0 if length <= 5 else 0.7
        if king:
            if ace:
                t += 1.0 if length <= 4 else 0.6
            elif length >= 2:
                t += 0.75 if length <= 4 else 0.4
            else:
                t += 0.1
        if b >> 10 & 1 and length >= 3 and (ace or king):
            t += 0.25
        if length == 0:
            ruff_slots += 2
        elif length == 1 and not ace:
            ruff_slots += 1
    t += 0.8 * min(spare, ruff_slots)
    return t


def medium_nil_safe(hand: int) -> bool:
    """Whether medium would bid Nil with this 52-bit hand mask (docs/bots.md: no high spades, many low
    cards, no unguarded kings or queens).

    Rules: at most 3 spades, none above the 10 (at most the 8 with three spades); no aces; a king
    needs 3 more cards of its suit, a queen 2 more, a jack 1 more; at least 5 cards of rank 7 or
    lower; and a trick estimate below 1.5.
    """
    sp = _suit_bits(hand, 3)
    n_sp = sp.bit_count()
    if n_sp > 3:
        return False
    if n_sp and sp.bit_length() - 1 > (6 if n_sp == 3 else 8):
        return False
    low = 0
    for s in range(4):
        b = _suit_bits(hand, s)
        length = b.bit_count()
        low += (b & 0x3F).bit_count()
        if s == 3:
            continue
        if b >> 12 & 1:
            return False
        if b >> 11 & 1 and length < 4:
            return False
        if b >> 10 & 1 and length < 3:
            return False
        if b >> 9 & 1 and length < 2:
            return False
    return low >= 5 and medium_trick_estimate(hand) < 1.5


# --------------------------------------------------------------------------- shared behaviour
class _ScriptedBot(Bot):
    """Dispatch by phase; subclasses implement ``_blind``, ``_bid`` and ``_play``."""

    def act(self, view) -> int:
        """Choose an action id from ``view.legal_actions`` (a ``PlayerView`` of the seat to act).

        Raises:
            ValueError: the view has no legal action (it is not this seat's turn).
        """
        legal = view.legal_actions
        if not legal:
            raise ValueError(f"seat {view.seat} has no legal action (not its turn?)")
        if view.phase == Phase.BIDDING:
            if legal[-1] == LOOK_ACTION:
                return self._blind(view)
            return self._bid(view)
        if view.phase == Phase.EXCHANGE:
            return _exchange_card(view)
        return self._play(view)

    def _blind(self, view) -> int:
        return LOOK_ACTION


def _exchange_card(view) -> int:
    """One card to pass in an exchange (``rules.exchanges``): the Nil bidder passes its highest
    card (spades count as the highest), its partner passes its lowest card (low non-spades
    first)."""
    hand = view.hand
    if passes_for_nil(view.rules, view.seat, view.bids, view.blind, view.dealer):
        if hand & SPADES_MASK and (hand >> 39).bit_length() - 1 >= 8:
            return _highest(hand)  # a spade 10 or higher is a sure danger
        return _highest_rank(hand)
    non_spades = hand & NON_SPADES_MASK
    return _lowest_rank(non_spades if non_spades else hand)


# --------------------------------------------------------------------------- easy
class EasyBot(_ScriptedBot):
    """The ``easy`` level (docs/bots.md): rough bidding, simple play habits, some careless cards.

    Args:
        seed: int / None / ``np.random.Generator`` for the bot's own RNG.
        careless: probability (0..1) of playing a uniformly random legal card instead of the habit.
    Raises:
        ValueError: ``careless`` outside 0..1.
    """

    name = "easy"

    def __init__(self, seed=None, careless: float = 0.25):
        super().__init__(seed)
        self.careless = check_probability("careless", careless)

    def _bid(self, view) -> int:
        return nearest_legal_bid(view, easy_trick_count(view.hand))

    def _play(self, view) -> int:
        legal = view.legal_actions
        if self.rng.random() < self.careless:
            return int(legal[int(self.rng.integers(len(legal)))])
        lm = _legal_mask(view)
        trick = view.current_trick
        if not trick:
            aces = lm & NON_SPADES_MASK & ((1 << 12) | (1 << 25) | (1 << 38))
            if aces:
                return _lowest(aces)
            # low card of the longest suit
            best, blen = 0, -1
            for s in range(4):
                m = lm & SUIT_MASKS[s]
                if m and m.bit_count() > blen:
                    best, blen = m, m.bit_count()
            return _lowest(best)
        ws, wc = current_winner(trick)
        if ws != PARTNER[view.seat]:
            winners = [c for c in _cards(lm) if card_beats(c, wc)]
            if winners:
                return min(winners, key=lambda c: (c // 13 == 3, c))
        non_spades = lm & NON_SPADES_MASK
        return _lowest_rank(non_spades if non_spades else lm)


# --------------------------------------------------------------------------- medium
class MediumBot(_ScriptedBot):
    """The ``medium`` level (docs/bots.md): counted bidding with Nil, card counting in play.

    Args:
        seed: int / None / ``np.random.Generator`` (medium is deterministic; the RNG is unused).
        blind_nil_deficit: with ``Rules.blind_nil`` on, bid Blind Nil when the team trails by at
            least this many points (int; ``None`` never bids Blind Nil).
        cover_nil, attack_nil, set_opponents, duck: switch off one play habit (for ablation
            measurements in the arena); all on by default.
    """

    name = "medium"

    def __init__(self, seed=None, blind_nil_deficit: int | None = 200, cover_nil: bool = True,
                 attack_nil: bool = True, set_opponents: bool = True, duck: bool = True):
        super().__init__(seed)
        if blind_nil_deficit is not None and (
                isinstance(blind_nil_deficit, (bool, np.bool_))
                or not isinstance(blind_nil_deficit, (int, np.integer))):
            raise ValueError(f"blind_nil_deficit must be None or an int (points), got "
                             f"{blind_nil_deficit!r}")
        self.blind_nil_deficit = None if blind_nil_deficit is None else int(blind_nil_deficit)
        self.cover_nil = check_flag("cover_nil", cover_nil)
        self.attack_nil = check_flag("attack_nil", attack_nil)
        self.set_opponents = check_flag("set_opponents", set_opponents)
        self.duck = check_flag("duck", duck)

    # ------------------------------------------------------------ bidding
    def _blind(self, view) -> int:
        me = view.seat
        if self.blind_nil_deficit is None or view.bids[PARTNER[me]] == 0:
            return LOOK_ACTION
        mine, theirs = view.scores[TEAM[me]], view.scores[1 - TEAM[me]]
        if theirs - mine >= self.blind_nil_deficit:
            return BLIND_NIL_ACTION
        return LOOK_ACTION

    def _bid(self, view) -> int:
        hand = view.hand
        partner_bid = view.bids[PARTNER[view.seat]]
        if partner_bid != 0 and 0 in legal_bid_numbers(view) and medium_nil_safe(hand):
            return BID_OFFSET
        est = medium_trick_estimate(hand)
        if partner_bid is not None and partner_bid >= 5:
            bid = int(est)  # partner bid high: bid honestly, no hopeful trick
        else:
            bid = int(est + 0.5)
        return nearest_legal_bid(view, max(1, min(13, bid)))

    # ------------------------------------------------------------ play
    def _play(self, view) -> int:
        me = view.seat
        pa = PARTNER[me]
        bids = view.bids
        tw = view.tricks_won
        remaining = 13 - view.trick_number
        lm = _legal_mask(view)
        if lm & (lm - 1) == 0:
            return _lowest(lm)  # a single legal card
        poss = possible_holdings(view)
        trick = view.current_trick

        # team needs (a Nil bidder's tricks count toward the contract only with the rule
        # failed_nil_tricks_count; a Nil that took none adds 0 either way)
        fnc = view.rules.failed_nil_tricks_count
        my_team = (me, pa)
        contract = sum(bids[s] for s in my_team if bids[s])
        need = contract - sum(tw[s] for s in my_team if bids[s] or fnc) if contract else 0
        opps = OPPONENTS[me]
        opp_contract = sum(bids[s] for s in opps if bids[s])
        opp_need = opp_contract - sum(tw[s] for s in opps if bids[s] or fnc) \
            if opp_contract else 0
        set_mode = self.set_opponents and opp_need > 0 and opp_need >= remaining - 2
        want = need > 0 or set_mode or not self.duck

        my_nil = bids[me] == 0 and tw[me] == 0
        partner_nil = self.cover_nil and bids[pa] == 0 and tw[pa] == 0
        nil_opp = -1
        for s in opps:
            if bids[s] == 0 and tw[s] == 0:
                nil_opp = s
                break
        attack = self.attack_nil and nil_opp >= 0 and (need <= 0 or need < remaining - 2)
        if bids[me] == 0 and not my_nil and not fnc:
            want = set_mode  # a failed Nil's tricks are bags only

        if not trick:
            if my_nil:
                return self._nil_lead(lm, poss, me)
            if partner_nil:
                return self._cover_lead(lm, poss, me, pa)
            if attack:
                m = 0
                for s in range(4):
                    if poss[nil_opp] & SUIT_MASKS[s]:
                        m |= lm & SUIT_MASKS[s]
                if m:
                    return _lowest_rank(m)
            if want:
                return self._win_lead(lm, poss, me, pa)
            return self._duck_lead(lm, poss, me)

        ls = trick[0][1] // 13
        ws, wc = current_winner(trick)
        played_seats = {s for s, _ in trick}
        later = [(me + i) & 3 for i in range(1, 4 - len(trick))]
        last = not later
        winners = 0
        for c in _cards(lm):
            if card_beats(c, wc):
                winners |= 1 << c
        losers = lm & ~winners

        if my_nil:
            return self._nil_follow(lm, winners, losers, last)

        if partner_nil:
            if pa in played_seats:
                if ws == pa and winners:  # overtake the partner's winning card
                    return self._safe_or_high(winners, poss, later, ls, include=later)
            elif winners:  # partner plays after me: play high so that the partner can go under
                return self._safe_or_high(winners, poss, later, ls, include=later)

        if attack:
            if nil_opp in played_seats:
                if ws == nil_opp:  # never overtake the Nil bidder's winning card
                    if losers:
                        return _highest_rank(losers, spade_last=True)
                    return _lowest(winners)
            elif ws != pa or not want:
                # Nil bidder still to play: keep the winning card as low as possible
                follow = lm & SUIT_MASKS[ls]
                if follow:
                    return _lowest(follow)
                non_spades = lm & NON_SPADES_MASK
                if non_spades:
                    return _lowest_rank(non_spades)

        opp_later = [s for s in later if s != pa]
        if ws == pa:
            partner_safe = not any(can_beat(poss[s], wc, ls) for s in opp_later)
            if partner_safe or not want:
                return self._give(lm, losers, want)
            safe = [c for c in _cards(winners) if not any(can_beat(poss[s], c, ls)
                                                         for s in opp_later)]
            if safe:
                return min(safe, key=lambda c: (c // 13 == 3, c))
            return self._give(lm, losers, want)

        if want:
            if winners:
                safe = [c for c in _cards(winners) if not any(can_beat(poss[s], c, ls)
                                                             for s in opp_later)]
                if safe:
                    return min(safe, key=lambda c: (c // 13 == 3, c))
                urgent = need >= remaining - 1 or set_mode
                if len(trick) == 2 or urgent:  # third hand high
                    follow = winners & SUIT_MASKS[ls]
                    return _highest(follow) if follow else _lowest(winners)
                # second hand low
                if losers:
                    return self._give(lm, losers, True)
                return _lowest(winners)
            return self._give(lm, losers, True)

        # duck: the contract is safe, avoid bags
        if losers:
            return _highest_rank(losers, spade_last=False) if losers & SUIT_MASKS[ls] else \
                self._discard_high(losers)
        return _highest(winners) if last else _lowest(winners)

    # ------------------------------------------------------------ play helpers
    @staticmethod
    def _give(lm: int, losers: int, keep_high: bool) -> int:
        """A card that does not take the trick (partner's or lost anyway): the lowest one when we
        still want tricks later (keep the high cards), the highest one when ducking."""
        pool = losers if losers else lm
        if keep_high:
            non_spades = pool & NON_SPADES_MASK
            return _lowest_rank(non_spades if non_spades else pool)
        return _highest_rank(pool, spade_last=True)

    @staticmethod
    def _discard_high(mask: int) -> int:
        non_spades = mask & NON_SPADES_MASK
        return _highest_rank(non_spades if non_spades else mask)

    @staticmethod
    def _safe_or_high(winners: int, poss, later, ls: int, include) -> int:
        """Lowest winner that nobody in ``include`` can beat, else the highest winner."""
        best = -1
        for c in _cards(winners):
            if not any(can_beat(poss[s], c, ls) for s in include):
                if best < 0 or (c // 13 == 3, c) < (best // 13 == 3, best):
                    best = c
        if best >= 0:
            return best
        follow = winners & SUIT_MASKS[ls]
        return _highest(follow) if follow else _highest(winners)

    @staticmethod
    def _nil_follow(lm: int, winners: int, losers: int, last: bool) -> int:
        """Own Nil: the highest card that still loses; if every card wins, the highest when last
        (the trick is lost anyway), else the lowest (someone may still overtake)."""
        if losers:
            return _highest_rank(losers)
        return _highest(winners) if last else _lowest(winners)

    @staticmethod
    def _nil_lead(lm: int, poss, me: int) -> int:
        """Own Nil leading: the lowest card in the suit where the most unseen cards rank above it."""
        best, key = -1, None
        others = poss[NEXT_SEAT[me]] | poss[PARTNER[me]] | poss[PREV_SEAT[me]]
        for s in range(4):
            m = lm & SUIT_MASKS[s]
            if not m:
                continue
            c = _lowest(m)
            above = (others & higher_in_suit(c)).bit_count()
            k = (above == 0, c % 13, -above, s == 3)
            if key is None or k < key:
                best, key = c, k
        return best

    @staticmethod
    def _cover_lead(lm: int, poss, me: int, pa: int) -> int:
        """Partner bid Nil: lead a suit the partner is out of, else our highest (boss) card."""
        for s in range(3):
            m = lm & SUIT_MASKS[s]
            if m and not poss[pa] & SUIT_MASKS[s]:
                return _highest(m)
        non_spades = lm & NON_SPADES_MASK
        return _highest_rank(non_spades if non_spades else lm)

    @staticmethod
    def _win_lead(lm: int, poss, me: int, pa: int) -> int:
        """Need tricks: cash a card no opponent can beat; else lead low into the partner's void
        (a ruff), else low from our shortest side suit (to ruff later), else our lowest card."""
        o1, o2 = poss[NEXT_SEAT[me]], poss[PREV_SEAT[me]]
        safe = -1
        for c in _cards(lm):
            s = c // 13
            if not can_beat(o1, c, s) and not can_beat(o2, c, s):
                if safe < 0 or (s == 3, c) < (safe // 13 == 3, safe):
                    safe = c
        if safe >= 0:
            return safe
        pp = poss[pa]
        for s in range(3):
            m = lm & SUIT_MASKS[s]
            if m and not pp & SUIT_MASKS[s] and pp & SPADES_MASK \
                    and o1 & SUIT_MASKS[s] and o2 & SUIT_MASKS[s]:
                return _lowest(m)
        hand_spades = poss[me] & SPADES_MASK
        if hand_spades:
            best, blen = -1, 99
            for s in range(3):
                m = lm & SUIT_MASKS[s]
                if m and m.bit_count() < blen:
                    best, blen = _lowest(m), m.bit_count()
            if best >= 0:
                return best
        non_spades = lm & NON_SPADES_MASK
        return _lowest_rank(non_spades if non_spades else lm)

    @staticmethod
    def _duck_lead(lm: int, poss, me: int) -> int:
        """Contract safe: lead the card most likely to lose (many unseen higher cards in its suit)."""
        others = poss[NEXT_SEAT[me]] | poss[PARTNER[me]] | poss[PREV_SEAT[me]]
        best, key = -1, None
        for c in _cards(lm):
            above = (others & higher_in_suit(c)).bit_count()
            k = (above == 0, -above, c % 13)
            if key is None or k < key:
                best, key = c, k
        return best
