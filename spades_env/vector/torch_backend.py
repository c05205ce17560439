"""The batched engine's torch backend: every game's step as tensor ops on the env's device (CPU or
CUDA). It is the reference path: the native backend (``native_backend``) updates the same
buffers and is checked against it, and ``load_state_dict`` replays saved games on it.

This module is the torch form of the rules (docs/architecture.md, Where the rules are decided):
legal bids and cards (``_lead_mask``, ``_follow_mask``), the trick winner (the ``card_val``
table), spades broken, the voids a play shows (``_lead_voids``), hand scoring
(``score_records``) and the end of the game (``game_outcomes``). A card's suit and its order in
the suit come from the rules' deck (``Rules.deck``: ``suit_of``, ``rank``, the tables the Python
rules use), so the deck of ``Rules.jokers`` runs here too.

Each step writes only the observation entries that changed (a card play: 9 entries per game; a
finished trick: the 16 trick entries and the led suit) into the uint8 rows of ``layout``; the
acting seat's rows are gathered as int64 words and converted to float32 (counts divided by 13 in
float32, bit-equal to the reference encoder's ``k / 13.0``), with the side table's scores, bags
and target, or packed into compact rows (``spades_env.compact``). Seat-relative index tables (``(seat - observer) % 4``) are built once from
``OFFSETS``.
"""

from __future__ import annotations

import numpy as np
import torch

from .. import compact as cpt
from ..cards import BID_OFFSET, MAX_BID, NUM_ACTIONS, NUM_CARDS, NUM_TRICKS
from ..observation import BID_SLOTS, OBS_SIZE, OFFSETS
from ..rules import STANDARD_DECK, Rules
from .layout import ROW, SIDE, TRICK_NUMBER, TRICKS_WON

RULES = OFFSETS["rules"]  # the rules piece: the same floats in every row
_LOW_BITS = 0x0101010101010101  # the low bit of each byte of an int64 word
_GATHER_BITS = 0x0102040810204080  # times it: byte j's low bit lands on bit 56 + j


def legal_bids_batch(rules: Rules, seat: torch.Tensor, bids: torch.Tensor,
                     spades: torch.Tensor | None = None) -> torch.Tensor:
    """The torch form of ``rules.legal_bids`` for bidders that have seen their cards (the batched
    engine has no Blind Nil decision): ``(N, 16)`` bool, column ``k`` the action id
    ``BID_OFFSET + k`` (0..13 the bids, 14 Blind Nil, 15 look).

    Args:
        rules: the switches.
        seat: ``(N,)`` int64, the bidder of each game.
        bids: ``(N, 4)`` int64 by seat, -1 for not bid yet.
        spades: ``(N,)`` int64, the spades the bidder holds (needed under ``mirror`` and
            ``whiz``).
    """
    n, dev = seat.shape[0], seat.device
    out = torch.zeros((n, NUM_ACTIONS - BID_OFFSET), dtype=torch.bool, device=dev)
    b = torch.arange(MAX_BID + 1, device=dev)
    allowed = out[:, :MAX_BID + 1]
    if rules.mirror or rules.whiz:
        allowed.copy_(b[None, :] == spades[:, None])
        if rules.whiz:
            allowed[:, 0] = True
    else:
        allowed.fill_(True)
    if rules.min_team_bid or rules.suicide:
        partner = bids.gather(1, (seat ^ 2)[:, None])  # (N, 1)

        def team_ok(x, y):
            ok = x + y >= rules.min_team_bid
            return ok & ((x == 0) != (y == 0)) if rules.suicide else ok

        first = team_ok(b[:, None], b[None, :]).any(1)  # (14,): a partner can complete it
        allowed &= torch.where(partner >= 0, team_ok(partner, b[None, :]), first[None, :])
    if rules.bid_total_not_13:
        others = bids.sum(1) - bids.gather(1, seat[:, None])[:, 0]
        known = (bids >= 0).sum(1) == 3
        allowed &= ~(known[:, None] & (b[None, :] == 13 - others[:, None]))
    return out


def score_records(dealer, bids, tricks, bags_before, scores_before, r: Rules):
    """Score one hand in every game with tensor ops (docs/rules.md, Scoring a hand; the formulas of
    ``rules.score_hand`` without Blind Nil).

    Args:
        dealer: ``(N,)`` int64 seats.
        bids, tricks: ``(N, 4)`` int64 by seat.
        bags_before, scores_before: ``(N, 2)`` int64 by team.
        r: the ``Rules`` (bag limit and penalty, Nil bonus, ``failed_nil_tricks_count``,
            ``bags_score_points``).
    Returns:
        ``(records (N, 27), hand_points (N, 2), scores after (N, 2), bags after (N, 2))``, int64
        on the inputs' device (records in the columns of ``layout.HIST_FIELDS``).
    """
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
    if r.failed_nil_tricks_count:  # a failed Nil's tricks count toward the partner's contract
        taken = taken + torch.where(has, nil_bags, torch.zeros_like(nil_bags))
        nil_bags = torch.where(has, torch.zeros_like(nil_bags), nil_bags)
    made = has & (taken >= contract)
    over = taken - contract
    per = 10 * contract
    if r.big_bid_double:  # a made contract of big_bid_double tricks or more: 20 per trick
        per = torch.where(contract >= r.big_bid_double, 2 * per, per)
    points = per + over if r.bags_score_points else per  # bags worth a point
    contract_points = torch.where(made, points,
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


def moon_teams(rec, r: Rules):
    """``rules.moon_team`` for every game from its score records ``rec`` ``(N, 27)`` (the
    columns of ``layout.HIST_FIELDS``): ``(N,)`` int64, the team that bid 13 and made it under
    ``moon_wins``, else -1."""
    n = rec.shape[0]
    out = torch.full((n,), -1, dtype=torch.int64, device=rec.device)
    if r.moon_wins:
        for t in (1, 0):  # team 0 first when both (impossible: 13 tricks in a hand)
            moon = (rec[:, 9 + 9 * t] == 13) & (rec[:, 11 + 9 * t] == 1)
            out = torch.where(moon, t, out)
    return out


def game_outcomes(scores, r: Rules, moon=None):
    """``rules.game_outcome`` for every game: ``scores`` ``(N, 2)`` int64 team totals after a hand,
    ``moon`` ``(N,)`` int64 the team that shot the moon in it (``moon_teams``) or -1 (default
    none); returns ``(N,)`` int64 on their device: the winning team 0/1, or -1 to play on."""
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
    out = torch.where(win0, 0, torch.where(win1, 1, -1))
    return out if moon is None else torch.where(moon >= 0, moon, out)


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

    def __init__(self, n: int, dev: torch.device, deck=STANDARD_DECK):
        play, void, bid, won, onehot, led = _seat_index_tables()
        t = lambda a: torch.as_tensor(a, device=dev)  # noqa: E731
        cards = np.arange(NUM_CARDS)
        suit_of = np.array(deck.suit_of)  # cards // 13 in the standard deck
        rank = np.array(deck.rank)  # cards % 13 there; the promoted trumps 13.. under jokers
        self.play = t((play[:, None, :] + cards[None, :, None]).reshape(4 * NUM_CARDS, 9))
        self.void = t((void[:, None, :] + np.arange(4)[None, :, None]).reshape(16, 4))
        self.bid = t(bid)
        self.won = t(won)
        self.led = t(led[None, :] + np.arange(4)[:, None])  # (4 suits, 4 observers)
        self.onehot = t(onehot.reshape(4, 16))
        self.suit_of = t(suit_of)
        # card strength in a trick led in suit `led`: spade 64+, led suit 32+, else rank only
        # (ranks 0..16: a promoted trump of the jokers' deck ranks 13..16)
        val = np.zeros((4, NUM_CARDS), dtype=np.int64)
        for ls in range(4):
            val[ls] = (suit_of == 3) * 64 + (suit_of == ls) * 32 + rank
        self.card_val = t(val.reshape(-1))
        self.suit_cards = t(suit_of[None, :] == np.arange(4)[:, None])
        self.non_spades = t(suit_of != 3)
        self.spade_cards = t(suit_of == 3)
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


class TorchBackend:
    """The torch backend's part of ``SpadesVectorEnv`` (a mixin: it works on the env's state
    tensors, ``_obs4``, ``_hands``, ``_mask``... allocated by the env, and raises through the
    env's ``_illegal``). The env calls ``_apply_torch`` per step, ``_start_hands_torch`` per
    deal, ``_score_torch`` per hand end, ``_output_torch`` and ``_sample_torch``; ``_render``
    (one seat's row, ``observe``) and ``_check`` serve both backends."""

    _VIEWS = ("_side_rows", "_obs4v", "_v_rows", "_v_broken", "_v_trick_number", "_v_to_act",
              "_v_phase_bid", "_v_phase_play", "_mask_cards", "_mask_rest", "_hands_rows")

    def _build_consts(self) -> None:
        self._c = _Consts(self.num_envs, self.device, self.rules.deck)

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

    def _check(self, a: torch.Tensor) -> None:
        """Raise (``_illegal``) unless every action is in its game's mask."""
        inside = a.clamp(0, NUM_ACTIONS - 1)
        ok = self._mask.gather(1, inside.view(-1, 1))
        if torch.equal(inside, a) and bool(ok.all()):
            return
        ok = ok[:, 0] & (inside == a)
        i = int((~ok).nonzero()[0, 0])
        self._illegal(i, int(a[i]))

    def _apply_torch(self, a: torch.Tensor, t: int) -> None:
        """Apply the int64 actions ``a`` ``(N,)`` at hand step ``t`` (checked legal, or the
        state is undefined): state, observation rows and the next mask; a hand's last card
        leaves the scoring to ``_score_torch``."""
        c = self._c
        n = self.num_envs
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
            if t < 3:
                self._bid_mask()
            if t == 3:  # bidding over: the player left of the dealer (= p now) leads
                if self.rules.two_of_clubs_leads:  # rules.first_leader: the 2C's holder
                    p.copy_(self._owner[:, 0])
                self._leader.copy_(p)
                self._v_phase_bid.zero_()
                self._v_phase_play.fill_(1.0)
                self._lead_mask()
                if self.rules.two_of_clubs_leads:  # rules.first_lead_mask: the 2C only
                    self._mask_cards.zero_()
                    self._mask_cards[:, 0] = True
            return
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
            return
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

    def _output_torch(self):
        """``(obs, mask, seat)`` of the seat to act in every game (fresh tensors with ``copy``,
        else the env's reused ``_obs_out`` and ``_mask``; the seat always fresh)."""
        c = self._c
        seat = self._cur.clone()
        self._v_to_act.copy_(_take(c.onehot, seat).view(-1, 4, 4))
        out = self._new_obs() if self.copy else self._obs_out
        if self.obs_format == "compact":
            self._render_compact(c.row4 + seat, out)
        else:
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
        out[:, TRICKS_WON[0]:TRICKS_WON[1]].div_(13.0)  # float32 k / 13: bit-equal to encode's
        out[:, TRICK_NUMBER].div_(13.0)
        out[:, SIDE[0]:SIDE[1]] = self._side_rows.index_select(0, rows)
        out[:, RULES[0]:RULES[1]] = self._rules_feat

    def _render_compact(self, rows: torch.Tensor, out: torch.Tensor) -> None:
        """Write the compact observations (``spades_env.compact``) of the buffer rows ``rows``
        into ``out`` ``(k, COMPACT_SIZE)`` uint8: each 0/1 byte of a row becomes one bit, eight
        at a time (``(word & 0x0101..01) * 0x0102040810204080 >> 56``: byte j of the word lands
        on bit 56 + j, no carries; int64 products wrap), then the counts' bits are cleared and
        the counts and side floats copied into their bytes."""
        k = rows.shape[0]
        if k == self.num_envs:
            g = torch.index_select(self._v_rows, 0, rows, out=self._gather)
        else:
            g = self._v_rows.index_select(0, rows)
        nb = cpt.BITS[1]
        bits = ((g[:, :nb] & _LOW_BITS) * _GATHER_BITS >> 56) & 0xFF
        out.zero_()
        out[:, :nb] = bits
        raw = g.view(torch.uint8)
        for q, pos in enumerate((*range(TRICKS_WON[0], TRICKS_WON[1]), TRICK_NUMBER)):
            out[:, pos >> 3] &= ~(1 << (pos & 7)) & 0xFF
            out[:, cpt.COUNTS[0] + q] = raw[:, pos]
        out[:, cpt.SIDE[0]:cpt.SIDE[1]] = \
            self._side_rows.index_select(0, rows).view(torch.uint8)

    def _observe_row(self, i: int, seat: int) -> np.ndarray:
        """Seat ``seat``'s observation of game ``i`` (ints checked): ``(OBS_SIZE,)`` float32
        numpy, after marking the seat to act in game ``i``'s rows."""
        self._v_to_act[i] = _take(self._c.onehot, self._cur[i:i + 1]).view(4, 4)
        out = torch.empty((1, OBS_SIZE), dtype=torch.float32, device=self.device)
        rows = torch.tensor([4 * i + seat], device=self.device)
        self._render(rows, out)
        return out[0].cpu().numpy()

    def _start_hands_torch(self, holder: torch.Tensor | None) -> None:
        """Deal a new hand in every game (``_dealer``, ``_scores``, ``_bags`` already set) and
        rebuild every seat's observation: card ``perm[k]`` of a stable argsort of uniform floats
        from the env's generator goes to seat ``(first + k) % 4`` (as the C kernel), or the
        ``(N, 52)`` seats ``holder`` when given."""
        n, c = self.num_envs, self._c
        first = (self._dealer + 1) & 3
        if holder is None:
            # card perm[k] to seat (first + k) % 4; a stable sort, as the C kernel's
            perm = torch.rand((n, NUM_CARDS), generator=self._gen, dtype=torch.float32).argsort(
                dim=1, stable=True).to(self.device)
            self._owner.scatter_(1, perm, (first[:, None] + c.deal_seat[None, :]) & 3)
        else:
            self._owner.copy_(holder)
        self._hands.view(n, 4, NUM_CARDS).copy_(self._owner[:, None, :] == c.seats[None, :, None])
        self._voids.zero_()
        self._bids.fill_(-1)
        self._tricks.zero_()
        self._trick.zero_()
        self._trick_obs.zero_()
        self._broken.fill_(self.rules.spades_lead_any_time)  # broken from the start
        self._cur.copy_(first)
        self._leader.copy_(first)
        self._led.zero_()
        self._actions.zero_()
        o = OFFSETS
        v = self._obs4v
        v.zero_()
        v[:, :, o["phase"][0]] = 1  # bidding
        v[:, :, o["looked"][0]] = 1
        v[:, :, o["spades_broken"][0]] = int(self.rules.spades_lead_any_time)
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
        self._bid_mask()

    def _bid_mask(self) -> None:
        """The legal bids of the seat to act in every game (``legal_bids_batch``) as the mask."""
        self._mask_cards.zero_()
        r, spades = self.rules, None
        if r.mirror or r.whiz:  # the bid reads the spades the bidder holds
            hands = self._hands.view(self.num_envs, 4, NUM_CARDS)
            held = hands[torch.arange(self.num_envs, device=self.device), self._cur]
            spades = (held & self._c.spade_cards).sum(1, dtype=torch.int64)  # the deck's spades
        self._mask_rest.copy_(legal_bids_batch(r, self._cur, self._bids, spades))

    def _score_torch(self):
        """Score every game's hand with tensor ops; update scores, bags, hand counts and the
        history. Returns ``(records (N, 27) int64, hand_points (N, 2), winner (N,), terminated,
        truncated (N,) bool, rewards (N, 4) float32, whether any episode ended)``."""
        n, r, dev = self.num_envs, self.rules, self.device
        rec, hand_points, scores, bags_after = score_records(
            self._dealer, self._bids, self._tricks, self._bags, self._scores, r)
        hc = self._hand_count
        self._hist[torch.arange(n, device=dev), hc] = rec
        hc.add_(1)
        self._scores.copy_(scores)
        self._bags.copy_(bags_after)
        winner = game_outcomes(scores, r, moon_teams(rec, r))
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

    def _sample_torch(self, u: torch.Tensor) -> torch.Tensor:
        """The ``k = int(u * count)``-th legal action of each mask row (-1 for an empty row),
        ``u`` ``(N,)`` float32 on the env's device."""
        mask = self._mask
        count = mask.sum(1, dtype=torch.int32)
        k = (u * count).int()
        pick = (mask.cumsum(1, dtype=torch.int32) > k[:, None]).int().argmax(1)
        return pick.masked_fill_(count == 0, -1)  # as the kernel


__all__ = ["TorchBackend", "score_records", "game_outcomes"]
