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

Suits, trumps and the order of the cards are the rules' deck's (``view.rules.deck``, a
``rules.Deck``): under ``Rules.jokers`` the jokers and the 2 of diamonds count as spades (in the
trump count, the voids, the bids) and as the top trumps ("lowest" and "highest" are by the deck's
order).
"""

from __future__ import annotations

import numpy as np

from ..cards import (
    BID_OFFSET, BLIND_NIL_ACTION, LOOK_ACTION, NEXT_SEAT, OPPONENTS, PARTNER, PREV_SEAT, TEAM,
)
from ..engine import Phase
from ..rules import STANDARD_DECK, Deck, card_beats, passes_for_nil
from .base import Bot, check_flag, check_probability, legal_bid_numbers, nearest_legal_bid
from .knowledge import can_beat, current_winner, higher_in_suit, possible_holdings

__all__ = ["EasyBot", "MediumBot", "medium_trick_estimate", "medium_nil_safe", "easy_trick_count"]


# --------------------------------------------------------------------------- small mask helpers
def _lowest(mask: int, deck: Deck = STANDARD_DECK) -> int:
    """The weakest card of a non-empty mask in the deck's order (``Deck.lowest``; the standard
    deck: the lowest id, lowest suit then lowest rank)."""
    return deck.lowest(mask)


def _highest(mask: int, deck: Deck = STANDARD_DECK) -> int:
    """The strongest card of a non-empty mask in the deck's order (``Deck.highest``)."""
    return deck.highest(mask)


def _cards(mask: int):
    while mask:
        low = mask & -mask
        yield low.bit_length() - 1
        mask ^= low


def _suit_bits(hand: int, suit: int, deck: Deck = STANDARD_DECK) -> int:
    """13-bit mask of ``hand`` in ``suit`` from the top (``Deck.top_bits``: bit 12 the suit's
    strongest card; in the standard deck bit r = rank r, 2..A = 0..12)."""
    return deck.top_bits(hand, suit)


def _suit_length(hand: int, suit: int, deck: Deck = STANDARD_DECK) -> int:
    """How many cards of ``suit`` ``hand`` holds (the deck's suits)."""
    return (hand & deck.suit_masks[suit]).bit_count()


def _lowest_rank(mask: int, deck: Deck = STANDARD_DECK) -> int:
    """Card of lowest rank in a mask (ties: lowest suit id); ``mask`` must be non-empty."""
    return deck.low_rank(mask)


def _highest_rank(mask: int, spade_last: bool = False, deck: Deck = STANDARD_DECK) -> int:
    """Card of highest rank in a non-empty mask (ties: lowest suit id); ``spade_last`` picks a
    non-spade when one exists."""
    if spade_last and mask & deck.non_spades:
        mask &= deck.non_spades
    return deck.high_rank(mask, spades_first=False)


def _trump_last(deck: Deck):
    """Sort key: non-spades before spades, then weakest first (the deck's order)."""
    so, st = deck.suit_of, deck.strength
    return lambda c: (so[c] == 3, st[c])


_LOW = {}  # deck name -> the cards of rank 2..7 (Deck.rank 0..5)


def _low_cards(deck: Deck) -> int:
    m = _LOW.get(deck.name)
    if m is None:
        m = _LOW[deck.name] = sum(1 << c for c in range(52) if deck.rank[c] <= 5)
    return m


def _legal_mask(view) -> int:
    m = 0
    for a in view.legal_actions:
        if a < 52:
            m |= 1 << a
    return m


# --------------------------------------------------------------------------- bidding
def easy_trick_count(hand: int, deck: Deck = STANDARD_DECK) -> int:
    """Easy's rough count of sure tricks in a 52-bit hand mask: aces, kings with at least one more
    card of their suit, the king of spades, and one trick per spade beyond four. At least 1.
    Aces and kings are the top two cards of a suit in ``deck``'s order (under jokers the big and
    little joker in spades), spades the deck's."""
    n = 0
    for s in range(4):
        b = _suit_bits(hand, s, deck)
        length = _suit_length(hand, s, deck)
        if b >> 12 & 1:
            n += 1
        if b >> 11 & 1 and (length >= 2 or s == 3):
            n += 1
    n += max(0, _suit_length(hand, 3, deck) - 4)
    return max(1, min(13, n))


def medium_trick_estimate(hand: int, deck: Deck = STANDARD_DECK) -> float:
    """Medium's expected trick count for a 52-bit hand mask (docs/bots.md strategy notes).

    Spades: A = 1, K = 1 with another spade, Q = 1 with two more (0.5 without A or K), J = 0.5 with
    three more; every spade beyond three plus the counted honours is a long trick. Side suits:
    A = 1 (0.7 in a suit of 6+), K = 1 behind the A / 0.75 guarded (less in long suits), Q 0.25 in a
    3+ suit with the A or K. Ruffs: each void is worth two and each non-ace singleton one ruff,
    0.8 trick each, limited by the spare spades (those not counted above). Honours are a suit's
    top cards in ``deck``'s order (under jokers: big joker, little joker, 2D, 2S in spades).
    """
    sp = _suit_bits(hand, 3, deck)
    n_sp = _suit_length(hand, 3, deck)
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
        b = _suit_bits(hand, s, deck)
        length = _suit_length(hand, s, deck)
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


def medium_nil_safe(hand: int, deck: Deck = STANDARD_DECK) -> bool:
    """Whether medium would bid Nil with this 52-bit hand mask (docs/bots.md: no high spades, many low
    cards, no unguarded kings or queens).

    Rules: at most 3 spades, none above the 10 (at most the 8 with three spades); no aces; a king
    needs 3 more cards of its suit, a queen 2 more, a jack 1 more; at least 5 cards of rank 7 or
    lower; and a trick estimate below 1.5. Ranks are ``deck.rank`` (under jokers the promoted
    trumps rank above the ace), high cards a suit's top ones in the deck's order.
    """
    n_sp = _suit_length(hand, 3, deck)
    if n_sp > 3:
        return False
    if n_sp and deck.rank[deck.highest(hand & deck.spades)] > (6 if n_sp == 3 else 8):
        return False
    low = (hand & _low_cards(deck)).bit_count()
    for s in range(3):
        b = _suit_bits(hand, s, deck)
        length = _suit_length(hand, s, deck)
        if b >> 12 & 1:
            return False
        if b >> 11 & 1 and length < 4:
            return False
        if b >> 10 & 1 and length < 3:
            return False
        if b >> 9 & 1 and length < 2:
            return False
    return low >= 5 and medium_trick_estimate(hand, deck) < 1.5


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
    deck = view.rules.deck
    spades = hand & deck.spades
    if passes_for_nil(view.rules, view.seat, view.bids, view.blind, view.dealer):
        if spades and deck.rank[deck.highest(spades)] >= 8:
            return deck.highest(spades)  # a spade 10 or higher is a sure danger
        return _highest_rank(hand, deck=deck)
    non_spades = hand & deck.non_spades
    return _lowest_rank(non_spades if non_spades else hand, deck)


_SIDE_ACES = (1 << 12) | (1 << 25) | (1 << 38)  # the aces of clubs, diamonds, hearts (any deck)


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
        return nearest_legal_bid(view, easy_trick_count(view.hand, view.rules.deck))

    def _play(self, view) -> int:
        legal = view.legal_actions
        if self.rng.random() < self.careless:
            return int(legal[int(self.rng.integers(len(legal)))])
        lm = _legal_mask(view)
        trick = view.current_trick
        deck = view.rules.deck
        if not trick:
            aces = lm & deck.non_spades & _SIDE_ACES
            if aces:
                return _lowest(aces, deck)
            # low card of the longest suit
            best, blen = 0, -1
            for s in range(4):
                m = lm & deck.suit_masks[s]
                if m and m.bit_count() > blen:
                    best, blen = m, m.bit_count()
            return _lowest(best, deck)
        ws, wc = current_winner(trick, deck)
        if ws != PARTNER[view.seat]:
            winners = [c for c in _cards(lm) if card_beats(c, wc, deck)]
            if winners:
                return min(winners, key=_trump_last(deck))
        non_spades = lm & deck.non_spades
        return _lowest_rank(non_spades if non_spades else lm, deck)


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
        deck = view.rules.deck
        partner_bid = view.bids[PARTNER[view.seat]]
        if partner_bid != 0 and 0 in legal_bid_numbers(view) and medium_nil_safe(hand, deck):
            return BID_OFFSET
        est = medium_trick_estimate(hand, deck)
        if partner_bid is not None and partner_bid >= 5:
            bid = int(est)  # partner bid high: bid honestly, no hopeful trick
        else:
            bid = int(est + 0.5)
        return nearest_legal_bid(view, max(1, min(13, bid)))

    # ------------------------------------------------------------ play
    def _play(self, view) -> int:
        """The card to play: works out what the side wants (tricks for the contract, a set of the
        opponents, ducking) and which Nil is live, then leads (``_lead``) or follows
        (``_follow``)."""
        me = view.seat
        pa = PARTNER[me]
        bids = view.bids
        tw = view.tricks_won
        remaining = 13 - view.trick_number
        deck = view.rules.deck
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
            return self._lead(lm, poss, me, pa, deck, my_nil, partner_nil, attack, nil_opp, want)
        urgent = need >= remaining - 1 or set_mode
        return self._follow(trick, lm, poss, me, pa, deck, my_nil, partner_nil, attack, nil_opp,
                            want, urgent)

    def _lead(self, lm: int, poss, me: int, pa: int, deck: Deck, my_nil: bool,
              partner_nil: bool, attack: bool, nil_opp: int, want: bool) -> int:
        """The card to lead (``_play`` with an empty trick): the Nil habits first (own Nil,
        covering the partner's, attacking an opponent's), then a lead that wins tricks or one
        that ducks them."""
        suits = deck.suit_masks
        if my_nil:
            return self._nil_lead(lm, poss, me, deck)
        if partner_nil:
            return self._cover_lead(lm, poss, me, pa, deck)
        if attack:
            m = 0
            for s in range(4):
                if poss[nil_opp] & suits[s]:
                    m |= lm & suits[s]
            if m:
                return _lowest_rank(m, deck)
        if want:
            return self._win_lead(lm, poss, me, pa, deck)
        return self._duck_lead(lm, poss, me, deck)

    def _follow(self, trick, lm: int, poss, me: int, pa: int, deck: Deck, my_nil: bool,
                partner_nil: bool, attack: bool, nil_opp: int, want: bool, urgent: bool) -> int:
        """The card to play after the lead (``_play``): the Nil habits first, then low under a
        partner's safe winner, the cheapest safe winner when tricks are wanted (third hand high,
        second hand low), or the highest losing card when ducking. ``urgent``: the side needs all
        but at most one of the remaining tricks, or is setting the opponents (it plays high in the
        second seat too)."""
        suits = deck.suit_masks
        ls = deck.suit_of[trick[0][1]]
        ws, wc = current_winner(trick, deck)
        played_seats = {s for s, _ in trick}
        later = [(me + i) & 3 for i in range(1, 4 - len(trick))]
        last = not later
        winners = lm & deck.beaters[wc]  # card_beats(c, wc) for each legal card
        losers = lm & ~winners
        trump_last = _trump_last(deck)

        if my_nil:
            return self._nil_follow(lm, winners, losers, last, deck)

        if partner_nil:
            if pa in played_seats:
                if ws == pa and winners:  # overtake the partner's winning card
                    return self._safe_or_high(winners, poss, later, ls, later, deck)
            elif winners:  # partner plays after me: play high so that the partner can go under
                return self._safe_or_high(winners, poss, later, ls, later, deck)

        if attack:
            if nil_opp in played_seats:
                if ws == nil_opp:  # never overtake the Nil bidder's winning card
                    if losers:
                        return _highest_rank(losers, spade_last=True, deck=deck)
                    return _lowest(winners, deck)
            elif ws != pa or not want:
                # Nil bidder still to play: keep the winning card as low as possible
                follow = lm & suits[ls]
                if follow:
                    return _lowest(follow, deck)
                non_spades = lm & deck.non_spades
                if non_spades:
                    return _lowest_rank(non_spades, deck)

        opp_later = [s for s in later if s != pa]
        if ws == pa:
            partner_safe = not any(can_beat(poss[s], wc, ls, deck) for s in opp_later)
            if partner_safe or not want:
                return self._give(lm, losers, want, deck)
            safe = [c for c in _cards(winners) if not any(can_beat(poss[s], c, ls, deck)
                                                         for s in opp_later)]
            if safe:
                return min(safe, key=trump_last)
            return self._give(lm, losers, want, deck)

        if want:
            if winners:
                safe = [c for c in _cards(winners) if not any(can_beat(poss[s], c, ls, deck)
                                                             for s in opp_later)]
                if safe:
                    return min(safe, key=trump_last)
                if len(trick) == 2 or urgent:  # third hand high
                    follow = winners & suits[ls]
                    return _highest(follow, deck) if follow else _lowest(winners, deck)
                # second hand low
                if losers:
                    return self._give(lm, losers, True, deck)
                return _lowest(winners, deck)
            return self._give(lm, losers, True, deck)

        # duck: the contract is safe, avoid bags
        if losers:
            return _highest_rank(losers, spade_last=False, deck=deck) if losers & suits[ls] \
                else self._discard_high(losers, deck)
        return _highest(winners, deck) if last else _lowest(winners, deck)

    # ------------------------------------------------------------ play helpers
    @staticmethod
    def _give(lm: int, losers: int, keep_high: bool, deck: Deck = STANDARD_DECK) -> int:
        """A card that does not take the trick (partner's or lost anyway): the lowest one when we
        still want tricks later (keep the high cards), the highest one when ducking."""
        pool = losers if losers else lm
        if keep_high:
            non_spades = pool & deck.non_spades
            return _lowest_rank(non_spades if non_spades else pool, deck)
        return _highest_rank(pool, spade_last=True, deck=deck)

    @staticmethod
    def _discard_high(mask: int, deck: Deck = STANDARD_DECK) -> int:
        non_spades = mask & deck.non_spades
        return _highest_rank(non_spades if non_spades else mask, deck=deck)

    @staticmethod
    def _safe_or_high(winners: int, poss, later, ls: int, include,
                      deck: Deck = STANDARD_DECK) -> int:
        """Lowest winner that nobody in ``include`` can beat, else the highest winner."""
        best = -1
        key = _trump_last(deck)
        for c in _cards(winners):
            if not any(can_beat(poss[s], c, ls, deck) for s in include):
                if best < 0 or key(c) < key(best):
                    best = c
        if best >= 0:
            return best
        follow = winners & deck.suit_masks[ls]
        return _highest(follow, deck) if follow else _highest(winners, deck)

    @staticmethod
    def _nil_follow(lm: int, winners: int, losers: int, last: bool,
                    deck: Deck = STANDARD_DECK) -> int:
        """Own Nil: the highest card that still loses; if every card wins, the highest when last
        (the trick is lost anyway), else the lowest (someone may still overtake)."""
        if losers:
            return _highest_rank(losers, deck=deck)
        return _highest(winners, deck) if last else _lowest(winners, deck)

    @staticmethod
    def _nil_lead(lm: int, poss, me: int, deck: Deck = STANDARD_DECK) -> int:
        """Own Nil leading: the lowest card in the suit where the most unseen cards rank above it."""
        best, key = -1, None
        others = poss[NEXT_SEAT[me]] | poss[PARTNER[me]] | poss[PREV_SEAT[me]]
        for s in range(4):
            m = lm & deck.suit_masks[s]
            if not m:
                continue
            c = _lowest(m, deck)
            above = (others & higher_in_suit(c, deck)).bit_count()
            k = (above == 0, deck.rank[c], -above, s == 3)
            if key is None or k < key:
                best, key = c, k
        return best

    @staticmethod
    def _cover_lead(lm: int, poss, me: int, pa: int, deck: Deck = STANDARD_DECK) -> int:
        """Partner bid Nil: lead a suit the partner is out of, else our highest (boss) card."""
        suits = deck.suit_masks
        for s in range(3):
            m = lm & suits[s]
            if m and not poss[pa] & suits[s]:
                return _highest(m, deck)
        non_spades = lm & deck.non_spades
        return _highest_rank(non_spades if non_spades else lm, deck=deck)

    @staticmethod
    def _win_lead(lm: int, poss, me: int, pa: int, deck: Deck = STANDARD_DECK) -> int:
        """Need tricks: cash a card no opponent can beat; else lead low into the partner's void
        (a ruff), else low from our shortest side suit (to ruff later), else our lowest card."""
        o1, o2 = poss[NEXT_SEAT[me]], poss[PREV_SEAT[me]]
        suits = deck.suit_masks
        key = _trump_last(deck)
        safe = -1
        for c in _cards(lm):
            s = deck.suit_of[c]
            if not can_beat(o1, c, s, deck) and not can_beat(o2, c, s, deck):
                if safe < 0 or key(c) < key(safe):
                    safe = c
        if safe >= 0:
            return safe
        pp = poss[pa]
        for s in range(3):
            m = lm & suits[s]
            if m and not pp & suits[s] and pp & deck.spades \
                    and o1 & suits[s] and o2 & suits[s]:
                return _lowest(m, deck)
        hand_spades = poss[me] & deck.spades
        if hand_spades:
            best, blen = -1, 99
            for s in range(3):
                m = lm & suits[s]
                if m and m.bit_count() < blen:
                    best, blen = _lowest(m, deck), m.bit_count()
            if best >= 0:
                return best
        non_spades = lm & deck.non_spades
        return _lowest_rank(non_spades if non_spades else lm, deck)

    @staticmethod
    def _duck_lead(lm: int, poss, me: int, deck: Deck = STANDARD_DECK) -> int:
        """Contract safe: lead the card most likely to lose (many unseen higher cards in its suit)."""
        others = poss[NEXT_SEAT[me]] | poss[PARTNER[me]] | poss[PREV_SEAT[me]]
        best, key = -1, None
        for c in _cards(lm):
            above = (others & higher_in_suit(c, deck)).bit_count()
            k = (above == 0, -above, deck.rank[c])
            if key is None or k < key:
                best, key = c, k
        return best
