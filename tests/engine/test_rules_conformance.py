"""Every implementation of the rules agrees with the Python reference (``rules.py``).

The rules are written once per language: Python (``spades_env/rules.py``), C (``_native/rules.h``,
shared by the batched kernel and the play-outs) and torch (the batched engine's GPU backend). This
file runs the same cases through each:

- the primitives, Python against C (``_native/rules.c`` exports ``rules.h``'s functions):
  legal cards, ``card_beats``, ``cards_that_beat``, ``spades_broken_after``, ``voids_revealed``
  and the trick winner, on values worked out from docs/rules.md and then over every card, led suit
  and switch; and the numpy ``legal_cards_batch`` against ``legal_cards_mask``;
- docs/rules.md's worked examples (the trick winners T1-T8 and the play examples B1-C6) through
  the reference, the C rules, the engine, and the batched engine on both backends;
- random games from random deals through the engine and the batched engine (both backends), the
  legal cards, voids and spades broken compared with the reference at every card;
- play-outs (Python and C) whose every card is legal by the reference and whose trick counts the
  reference's trick winner reproduces;
- hand scoring and the end of the game, Python against C, on docs/rules.md's scoring examples
  and 3000 random hands (the batched engine's score tables are held to the engine by
  ``tests/vector/test_vector_parity.py``).
"""

from __future__ import annotations

import ctypes
import random

import numpy as np
import pytest

from tests.doctools import table
from tests.docs.test_docs_rules import deals, parse_rules, read_doc

from spades_env import Rules, SpadesGame, parse_card, parse_cards
from spades_env import rules as R
from spades_env.cards import FULL_DECK, cards_to_mask, mask_to_cards

SUIT = [0x1FFF << (13 * s) for s in range(4)]


# ----------------------------------------------------------------------------- the C rules
@pytest.fixture(scope="module")
def c_rules():
    """``rules.h``'s functions through ``_native/rules.c`` (skipped without a C compiler)."""
    from spades_env.native import NativeUnavailable, load_kernel
    try:
        lib = load_kernel()
    except NativeUnavailable as e:
        pytest.skip(f"no C kernel here: {e}")
    from spades_env.native import SpDeck, SpRules, c_deck, c_rules as to_c
    i64, u64 = ctypes.c_int64, ctypes.c_uint64
    rp = ctypes.POINTER(SpRules)
    dp = ctypes.POINTER(SpDeck)
    sig = {"sp_rule_legal_bids": (u64, [rp, i64, u64, i64, ctypes.POINTER(i64)]),
           "sp_rule_legal_cards": (u64, [dp, u64, i64, i64]),
           "sp_rule_card_beats": (i64, [dp, i64, i64]),
           "sp_rule_cards_that_beat": (u64, [dp, u64, i64]),
           "sp_rule_spades_broken_after": (i64, [dp, i64, i64, i64, i64]),
           "sp_rule_voids_revealed": (i64, [dp, i64, i64, i64]),
           "sp_rule_trick_winner": (i64, [dp, ctypes.POINTER(i64), i64]),
           "sp_rule_score_team": (None, [ctypes.POINTER(i64), ctypes.POINTER(i64),
                                         ctypes.POINTER(ctypes.c_uint8), i64, i64, i64, rp,
                                         ctypes.POINTER(i64)]),
           "sp_rule_game_outcome": (i64, [ctypes.POINTER(i64), rp, i64])}
    out = {}
    for name, (res, args) in sig.items():
        f = getattr(lib, name)
        f.restype, f.argtypes = res, args
        out[name[len("sp_rule_"):]] = f
    # the card-play rules take the deck's tables last, as the Python ones (default: standard)
    for name in ("legal_cards", "card_beats", "cards_that_beat", "spades_broken_after",
                 "voids_revealed"):
        out[name] = (lambda f: lambda *a, deck=R.STANDARD_DECK: f(c_deck(deck), *a))(out[name])
    winner = out["trick_winner"]
    out["trick_winner"] = lambda cards, leader, deck=R.STANDARD_DECK: winner(
        c_deck(deck), (ctypes.c_int64 * 4)(*cards), leader)
    score = out["score_team"]

    def score_team(bids, tricks, blind, team, score_before, bags_before, rules):
        res = (ctypes.c_int64 * 9)()
        score((ctypes.c_int64 * 4)(*bids), (ctypes.c_int64 * 4)(*tricks),
              (ctypes.c_uint8 * 4)(*map(int, blind)), team, score_before, bags_before,
              ctypes.byref(to_c(rules)), res)
        return tuple(res)

    out["score_team"] = score_team
    outcome = out["game_outcome"]
    out["game_outcome"] = lambda scores, r, moon=-1: outcome((ctypes.c_int64 * 2)(*scores),
                                                             ctypes.byref(to_c(r)), moon)
    bids_c = out["legal_bids"]
    out["legal_bids"] = lambda r, seat, hand, looked, bids: bids_c(
        ctypes.byref(to_c(r)), seat, hand, int(looked),
        (ctypes.c_int64 * 4)(*[-1 if b is None else b for b in bids]))
    return out


def _impls(c_rules):
    """The primitive rules as ``{language: {rule: function}}``."""
    py = {"legal_cards": R.legal_cards_mask, "card_beats": R.card_beats,
          "cards_that_beat": R.cards_that_beat, "spades_broken_after": R.spades_broken_after,
          "voids_revealed": R.voids_revealed, "trick_winner": R.trick_winner_unchecked}
    return {"python": py, "c": c_rules}


def test_primitives_give_the_values_docs_rules_md_states(c_rules):
    """Hand-worked values (docs/rules.md, Play) through both languages."""
    hand = cards_to_mask(parse_cards("2C 9H AS"))
    for lang, f in _impls(c_rules).items():
        # follow suit when you can; otherwise any card
        assert f["legal_cards"](hand, 2, 0) == cards_to_mask([parse_card("9H")]), lang
        assert f["legal_cards"](hand, 1, 0) == hand, lang
        # no spade lead before spades are broken ... unless the hand holds only spades
        assert f["legal_cards"](hand, -1, 0) == cards_to_mask(parse_cards("2C 9H")), lang
        assert f["legal_cards"](hand, -1, 1) == hand, lang
        spades = cards_to_mask(parse_cards("3S KS"))
        assert f["legal_cards"](spades, -1, 0) == spades, lang
        assert f["legal_cards"](0, -1, 0) == 0, lang
        # trumps: the lowest spade beats the ace of the led suit; off-suit cards never win
        assert f["card_beats"](parse_card("2S"), parse_card("AD")), lang
        assert not f["card_beats"](parse_card("AC"), parse_card("2D")), lang
        assert f["card_beats"](parse_card("9S"), parse_card("3S")), lang
        assert not f["card_beats"](parse_card("3S"), parse_card("9S")), lang
        assert f["cards_that_beat"](cards_to_mask(parse_cards("2D 9D KD 2S AC")),
                                    parse_card("10D")) == cards_to_mask(parse_cards("KD 2S")), lang
        # a spade on another suit's lead breaks spades; following a spade lead does not; a
        # forced spade lead breaks them only with the switch
        assert f["spades_broken_after"](parse_card("2S"), 0, 0, 0) == 1, lang
        assert f["spades_broken_after"](parse_card("AS"), 3, 0, 0) == 0, lang
        assert f["spades_broken_after"](parse_card("2S"), -1, 0, 0) == 0, lang
        assert f["spades_broken_after"](parse_card("2S"), -1, 0, 1) == 1, lang
        # voids: not following shows the led suit; a spade lead before spades are broken shows
        # clubs, diamonds and hearts
        assert f["voids_revealed"](parse_card("2S"), 1, 0) == 0b0010, lang
        assert f["voids_revealed"](parse_card("5D"), 1, 0) == 0, lang
        assert f["voids_revealed"](parse_card("2S"), -1, 0) == 0b0111, lang
        assert f["voids_revealed"](parse_card("2S"), -1, 1) == 0, lang


@pytest.mark.parametrize("deck", [R.STANDARD_DECK, R.JOKERS_DECK], ids=lambda d: d.name)
def test_primitives_agree_everywhere(c_rules, deck):
    """Python and C over every card, led suit and switch, and 2000 random hands, in each deck
    (the C rules read the deck's tables: ``native.c_deck``)."""
    py, c = _impls(c_rules)["python"], _impls(c_rules)["c"]
    kw = {"deck": deck}
    for card in range(52):
        for led in range(-1, 4):
            for broken in (0, 1):
                assert py["voids_revealed"](card, led, bool(broken), deck) \
                    == c["voids_revealed"](card, led, broken, **kw)
                for flb in (0, 1):
                    assert int(py["spades_broken_after"](card, led, bool(broken), bool(flb),
                                                         deck)) \
                        == c["spades_broken_after"](card, led, broken, flb, **kw)
        for win in range(52):
            if win != card:
                assert int(py["card_beats"](card, win, deck)) == c["card_beats"](card, win, **kw)
    suits = deck.suit_masks
    rnd = random.Random(5)
    for _ in range(2000):
        hand = rnd.getrandbits(52) & rnd.choice([FULL_DECK, suits[3], suits[3] | suits[0],
                                                 suits[1], FULL_DECK])
        for led in range(-1, 4):
            for broken in (0, 1):
                assert py["legal_cards"](hand, led, bool(broken), deck) \
                    == c["legal_cards"](hand, led, broken, **kw)
        win = rnd.randrange(52)
        assert py["cards_that_beat"](hand, win, deck) == c["cards_that_beat"](hand, win, **kw)
        trick = rnd.sample(range(52), 4)
        leader = rnd.randrange(4)
        assert py["trick_winner"](trick, leader, deck) == c["trick_winner"](trick, leader, **kw) \
            == R.trick_winner(trick, leader, deck)


def test_jokers_primitives_give_the_values_docs_rules_md_states(c_rules):
    """docs/rules.md, Jokers, worked by hand in Python and C: the jokers and the 2D are spades
    (a diamond lead calls for the real diamonds only; they may not be led before spades are
    broken; one played on a diamond breaks spades and shows the void), and the trumps rank BJ,
    LJ, 2D, 2S, AS."""
    d = R.JOKERS_DECK
    card = lambda t: parse_card(t, jokers=True)  # noqa: E731
    mask = lambda t: cards_to_mask(parse_cards(t, jokers=True))  # noqa: E731
    hand = mask("2D 3D 9D BJ 5C")
    for lang, f in _impls(c_rules).items():
        assert f["legal_cards"](hand, 1, 0, deck=d) == mask("3D 9D"), lang
        assert f["legal_cards"](mask("2D 5C"), 1, 0, deck=d) == mask("2D 5C"), lang
        assert f["legal_cards"](hand, -1, 0, deck=d) == mask("3D 9D 5C"), lang
        assert f["legal_cards"](mask("2D LJ"), -1, 0, deck=d) == mask("2D LJ"), lang
        assert f["legal_cards"](hand, 3, 0, deck=d) == mask("2D BJ"), lang
        assert f["spades_broken_after"](card("2D"), 1, 0, 0, deck=d) == 1, lang
        assert f["spades_broken_after"](card("BJ"), 2, 0, 0, deck=d) == 1, lang
        assert f["voids_revealed"](card("2D"), 1, 0, deck=d) == 0b0010, lang
        assert f["voids_revealed"](card("LJ"), -1, 0, deck=d) == 0b0111, lang
        order = parse_cards("BJ LJ 2D 2S AS KS 3S", jokers=True)
        for hi, lo in zip(order, order[1:]):
            assert f["card_beats"](hi, lo, deck=d) and not f["card_beats"](lo, hi, deck=d), lang
        assert f["card_beats"](card("2D"), card("AD"), deck=d), lang
        assert f["cards_that_beat"](mask("2D 2S AS KD LJ"), card("AS"), deck=d) \
            == mask("2D 2S LJ"), lang
    rows = table(read_doc(), "id", "rules", "leader", "cards", "winner", "shows")
    assert [r["id"] for r in rows] == ["J1", "J2", "J3"]
    for r in rows:
        cards = parse_cards(r["cards"], jokers=True)
        assert c_rules["trick_winner"](cards, int(r["leader"]), deck=d) == int(r["winner"])


@pytest.mark.parametrize("deck", [R.STANDARD_DECK, R.JOKERS_DECK], ids=lambda d: d.name)
def test_the_batched_legal_cards_are_legal_cards_mask(deck):
    """``rules.legal_cards_batch`` (numpy, through the table ``LEGAL_CARDS_BY_SUITS``) against
    ``legal_cards_mask`` on 3000 random hands holding every pattern of suits, each with every led
    suit and both spades states, in one batch."""
    rnd = random.Random(7)
    hands = []
    for k in range(3000):
        suits = sum(deck.suit_masks[s] for s in range(4) if (k % 16) >> s & 1)
        hands.append(rnd.getrandbits(52) & suits)
    cases = [(h, led, broken) for h in hands for led in range(-1, 4) for broken in (False, True)]
    bits = np.array([[(h >> c) & 1 for c in range(52)] for h, _, _ in cases], dtype=bool)
    got = R.legal_cards_batch(bits, np.array([c[1] for c in cases]),
                              np.array([c[2] for c in cases]), deck)
    want = np.array([[(R.legal_cards_mask(*c, deck) >> card) & 1 for card in range(52)]
                     for c in cases], dtype=bool)
    assert np.array_equal(got, want)
    # broadcasting: one led suit and one spades state for a batch of hands
    assert np.array_equal(R.legal_cards_batch(bits[:50], -1, False, deck),
                          R.legal_cards_batch(bits[:50], np.full(50, -1), np.zeros(50, bool),
                                              deck))


# ----------------------------------------------------------------------------- docs/rules.md
def _trick_rows():
    return table(read_doc(), "id", "leader", "cards", "winner", "shows")


def test_worked_trick_winners_in_every_implementation(c_rules):
    rows = _trick_rows()
    assert [r["id"] for r in rows] == [f"T{i}" for i in range(1, 9)]
    for r in rows:
        cards, leader, want = parse_cards(r["cards"]), int(r["leader"]), int(r["winner"])
        assert R.trick_winner(cards, leader) == want, r["id"]
        assert c_rules["trick_winner"](cards, leader) == want, r["id"]


def _play_rows():
    return table(read_doc(), "id", "deal", "rules", "plays", "to act", "legal", "broken", "shows")


def _rules_of(cell: str) -> Rules:
    return parse_rules(cell)


def _reference_walk(hands, dealer, rules, plays):
    """The position after ``plays`` by the Python rules alone: (to act, its hand, led, broken)."""
    hands = list(hands)
    deck = rules.deck
    leader = R.first_leader(rules, hands, dealer)
    broken, trick = rules.spades_lead_any_time, []  # docs/rules.md, House rules
    for k, card in enumerate(plays):
        p = (leader + len(trick)) & 3
        led = deck.suit_of[trick[0]] if trick else -1
        first = R.first_lead_mask(rules, hands[p]) if k == 0 else None
        assert ((R.legal_cards_mask(hands[p], led, broken, deck) if first is None else first)
                >> card) & 1
        hands[p] &= ~(1 << card)
        broken = R.spades_broken_after(card, led, broken, rules.forced_spade_lead_breaks, deck)
        trick.append(card)
        if len(trick) == 4:
            leader, trick = R.trick_winner_unchecked(trick, leader, deck), []
    p = (leader + len(trick)) & 3
    return p, hands[p], deck.suit_of[trick[0]] if trick else -1, broken


def _vector_walk(backend, hands, dealer, rules, plays):
    """The same position reached in the batched engine: (to act, legal cards mask, broken)."""
    torch = pytest.importorskip("torch")
    from spades_env.observation import OFFSETS
    from spades_env.vector import SpadesVectorEnv
    env = SpadesVectorEnv(num_envs=1, rules=rules, seed=0, backend=backend)
    holder = torch.tensor([[next(s for s in range(4) if (hands[s] >> c) & 1) for c in range(52)]])
    obs, mask, seat = env.reset(holder=holder, dealer=torch.tensor([dealer]))
    for _ in range(4):
        obs, mask, seat, *_ = env.step(torch.tensor([52 + 3]))
    for card in plays:
        obs, mask, seat, *_ = env.step(torch.tensor([card]))
    legal = sum(1 << c for c in range(52) if bool(mask[0, c]))
    broken = bool(obs[0, OFFSETS["spades_broken"][0]] > 0.5)
    return int(seat[0]), legal, broken


@pytest.mark.parametrize("impl", ["reference", "c", "engine", "vector-torch", "vector-native"])
def test_worked_play_examples_in_every_implementation(impl, c_rules):
    table = deals(read_doc())
    rows = _play_rows()
    assert [r["id"] for r in rows] == ["B1", "B2", "B3", "B4", "C1", "C2", "C3", "C4", "C5", "C6",
                                      "C7", "C8", "C9", "J4", "J5", "J6", "J7", "J8"]
    for r in rows:
        dealer, hands = table[r["deal"]]
        masks = [cards_to_mask(h) for h in hands]
        rules = _rules_of(r["rules"])
        deck, jokers = rules.deck, rules.jokers
        plays = [] if r["plays"] == "-" else parse_cards(r["plays"], jokers=jokers)
        p, hand, led, broken = _reference_walk(masks, dealer, rules, plays)
        want_legal = hand if r["legal"] == "whole hand" else \
            cards_to_mask(parse_cards(r["legal"], jokers=jokers))
        want = (int(r["to act"]), want_legal, r["broken"] == "yes")
        # the first lead under two_of_clubs_leads (rules.first_lead_mask; in C the kernel's, so the
        # batched engine's rows below check it there)
        first = R.first_lead_mask(rules, hand) if not plays else None
        if impl == "reference":
            got = (p, R.legal_cards_mask(hand, led, broken, deck) if first is None else first,
                   broken)
        elif impl == "c":
            got = (p, c_rules["legal_cards"](hand, led, broken, deck=deck) if first is None
                   else first, broken)
        elif impl == "engine":
            g = SpadesGame.from_deal(hands, dealer, rules=rules, seed=0)
            for _ in range(4):
                g.apply(52 + 3)
            for card in plays:
                g.apply(card)
            got = (g.current_player, cards_to_mask(g.legal_actions()), g.spades_broken)
        else:
            got = _vector_walk(impl.split("-")[1], masks, dealer, rules, plays)
        assert got == want, (r["id"], impl)


# ----------------------------------------------------------------------------- random games
def _random_game_trace(seed: int, flb: bool, deck=R.STANDARD_DECK):
    """A random legal hand by the reference: the deal, the plays, and after each play the voids
    shown (by seat) and whether spades are broken; before each play the legal cards."""
    rnd = random.Random(seed)
    ids = list(range(52))
    rnd.shuffle(ids)
    hands = [cards_to_mask(ids[13 * s:13 * s + 13]) for s in range(4)]
    dealer = rnd.randrange(4)
    h = list(hands)
    leader, trick, broken = (dealer + 1) & 3, [], False
    voids = [0, 0, 0, 0]
    steps = []
    for _ in range(52):
        p = (leader + len(trick)) & 3
        led = deck.suit_of[trick[0]] if trick else -1
        legal = R.legal_cards_mask(h[p], led, broken, deck)
        card = rnd.choice(mask_to_cards(legal))
        voids[p] |= R.voids_revealed(card, led, broken, deck)
        broken = R.spades_broken_after(card, led, broken, flb, deck)
        h[p] &= ~(1 << card)
        trick.append(card)
        if len(trick) == 4:
            leader, trick = R.trick_winner_unchecked(trick, leader, deck), []
        steps.append((p, legal, card, tuple(voids), broken))
    return hands, dealer, steps


@pytest.mark.parametrize("jokers", [False, True], ids=["standard", "jokers"])
@pytest.mark.parametrize("impl", ["engine", "vector-torch", "vector-native"])
def test_random_games_follow_the_reference_card_by_card(impl, jokers):
    """Random hands by the reference rules (in the standard deck, and in the jokers' deck:
    docs/rules.md, Jokers) replayed in each engine: the same seat to act and legal cards at
    every card, the same voids shown and spades broken after it."""
    flbs = (False, True)
    for k in range(40):
        flb = flbs[k % 2]
        rules = Rules(forced_spade_lead_breaks=flb, jokers=jokers)
        hands, dealer, steps = _random_game_trace(1000 + k, flb, rules.deck)
        if impl == "engine":
            g = SpadesGame.from_deal([mask_to_cards(m) for m in hands], dealer, rules=rules,
                                     seed=0)
            for _ in range(4):
                g.apply(52 + 3)
            for p, legal, card, voids, broken in steps:
                assert (g.current_player, cards_to_mask(g.legal_actions())) == (p, legal)
                g.apply(card)
                if g.hand_number == 0:
                    assert g.view(p).known_voids == voids and g.spades_broken == broken
        else:
            torch = pytest.importorskip("torch")
            from spades_env.observation import OFFSETS
            from spades_env.vector import SpadesVectorEnv
            env = SpadesVectorEnv(num_envs=1, rules=rules, seed=0, backend=impl.split("-")[1])
            holder = torch.tensor([[next(s for s in range(4) if (hands[s] >> c) & 1)
                                    for c in range(52)]])
            obs, mask, seat = env.reset(holder=holder, dealer=torch.tensor([dealer]))
            for _ in range(4):
                obs, mask, seat, *_ = env.step(torch.tensor([52 + 3]))
            vo, sb = OFFSETS["voids"][0], OFFSETS["spades_broken"][0]
            for n, (p, legal, card, voids, broken) in enumerate(steps):
                got = sum(1 << c for c in range(52) if bool(mask[0, c]))
                assert (int(seat[0]), got) == (p, legal)
                if n == 51:
                    break
                obs, mask, seat, *_ = env.step(torch.tensor([card]))
                me = int(seat[0])  # the observer: voids by seat relative to it
                shown = tuple(sum(1 << s for s in range(4)
                                  if obs[0, vo + 4 * ((q - me) & 3) + s] > 0.5) for q in range(4))
                assert shown == voids and bool(obs[0, sb] > 0.5) == broken


def test_playouts_follow_the_reference():
    """Every card of a Python play-out is legal by the reference, the reference's trick winner
    gives its trick counts, and the C play-outs give the same counts."""
    from spades_env.bots import solver
    for k in range(30):
        hands, dealer, _ = _random_game_trace(2000 + k, False)
        leader = (dealer + 1) & 3
        log: list = []
        won = solver.playout(hands, [], leader, [0, 0, 0, 0], False, (3, 3, 3, 3), log=log)
        h, trick, broken, counts = list(hands), [], False, [0, 0, 0, 0]
        for card in log:
            p = (leader + len(trick)) & 3
            led = trick[0] // 13 if trick else -1
            assert (R.legal_cards_mask(h[p], led, broken) >> card) & 1
            h[p] &= ~(1 << card)
            broken = R.spades_broken_after(card, led, broken, False)
            trick.append(card)
            if len(trick) == 4:
                leader, trick = R.trick_winner_unchecked(trick, leader), []
                counts[leader] += 1
        assert len(log) == 52 and list(won) == counts
        if solver.native_playouts():
            c = solver.playouts([hands], (3, 3, 3, 3), [-1], [], (dealer + 1) & 3, [0, 0, 0, 0],
                                False, 0)
            assert list(c[0]) == counts


# ----------------------------------------------------------------------------- scoring
def _team_fields(ts) -> tuple:
    """A ``rules.TeamScore`` in the C struct's order (made: 1, 0, or -1 for no contract)."""
    made = -1 if ts.made is None else int(ts.made)
    return (ts.contract, ts.contract_points, made, ts.bags, ts.nil_points, ts.bag_penalty,
            ts.hand_points, ts.total, ts.bags_after)


def test_scoring_worked_examples_in_python_and_c(c_rules):
    """docs/rules.md's scoring examples S1-S13 (Blind Nil included) and S14-S19 (the switches
    ``failed_nil_tricks_count``, ``bags_score_points``: the table with a ``rules`` column)
    through ``score_hand`` and
    ``rules.h``'s ``sp_score_team``: the doc's hand points and bags after, and every field
    equal between the two."""
    head = ("id", "bids", "tricks", "bags before", "contract", "result", "contract points",
            "Nil points", "bags", "bag penalty", "hand points", "bags after", "shows")
    doc = read_doc()
    rows = [(r, Rules(blind_nil=True)) for r in table(doc, *head)]
    switched = table(doc, "id", "rules", *head[1:])
    assert len(rows) == 13
    assert [r["id"] for r in switched] == ["S14", "S15", "S16", "S17", "S18", "S19", "S20",
                                           "S21"]
    rows += [(r, parse_rules(r["rules"])) for r in switched]
    for r, rules in rows:
        words = r["bids"].split()
        bids = [0 if w in ("Nil", "BNil") else int(w) for w in words]
        blind = [w == "BNil" for w in words]
        tricks = [int(x) for x in r["tricks"].split()]
        before = [int(x) for x in r["bags before"].split("/")]
        t0, t1 = R.score_hand(bids, tricks, before, rules, blind)
        want_points = [int(x) for x in r["hand points"].replace("+", "").split("/")]
        want_bags = [int(x) for x in r["bags after"].split("/")]
        assert [t0.hand_points, t1.hand_points] == want_points, r["id"]
        assert [t0.bags_after, t1.bags_after] == want_bags, r["id"]
        for team, ts in ((0, t0), (1, t1)):
            got = c_rules["score_team"](bids, tricks, blind, team, 0, before[team], rules)
            assert got == _team_fields(ts), (r["id"], team)


def test_scoring_and_game_end_agree_on_random_hands(c_rules):
    rnd = random.Random(9)
    presets = [Rules(), Rules(blind_nil=True), Rules.preset("house"),
               Rules(nil_bonus=50, bag_limit=5, bag_penalty=50, loss_threshold=-200),
               Rules(blind_nil=True, failed_nil_tricks_count=True),
               Rules(failed_nil_tricks_count=True, bag_limit=3),
               Rules(bags_score_points=False, bag_limit=3),
               Rules(blind_nil=True, failed_nil_tricks_count=True, bags_score_points=False)]
    for _ in range(3000):
        rules = rnd.choice(presets)
        tricks = [0, 0, 0, 0]
        for _ in range(13):
            tricks[rnd.randrange(4)] += 1
        bids = [rnd.choice([0, 0, rnd.randrange(1, 14)]) for _ in range(4)]
        blind = [rules.blind_nil and b == 0 and rnd.random() < 0.3 for b in bids]
        before_bags = [rnd.randrange(rules.bag_limit) for _ in range(2)]
        before = [rnd.randrange(-400, 600) for _ in range(2)]
        t0, t1 = R.score_hand(bids, tricks, before_bags, rules, blind, before)
        for team, ts in ((0, t0), (1, t1)):
            assert c_rules["score_team"](bids, tricks, blind, team, before[team],
                                         before_bags[team], rules) == _team_fields(ts)
        scores = [t0.total, t1.total]
        want = R.game_outcome(scores, rules)
        assert c_rules["game_outcome"](scores, rules) == (-1 if want is None else want)
    # the ties and thresholds, by hand (docs/rules.md, End of the game)
    r = Rules(loss_threshold=-200)
    for scores, want in (([500, 499], 0), ([499, 500], 1), ([510, 510], None), ([520, 510], 0),
                         ([-200, 0], 1), ([0, -250], 0), ([499, -199], None)):
        assert R.game_outcome(scores, r) == want
        assert c_rules["game_outcome"](scores, r) == (-1 if want is None else want)


def test_scoring_worked_examples_in_torch():
    """The scoring examples without Blind Nil (the batched engine has none), with and without a
    ``rules`` column, through the torch backend's ``score_records``: every team figure equal to
    ``score_hand``'s, for each scoring switch (S14-S21 included)."""
    torch = pytest.importorskip("torch")
    from spades_env.vector.torch_backend import score_records
    head = ("id", "bids", "tricks", "bags before", "contract", "result", "contract points",
            "Nil points", "bags", "bag penalty", "hand points", "bags after", "shows")
    doc = read_doc()
    rows = [(r, Rules()) for r in table(doc, *head)]
    rows += [(r, parse_rules(r["rules"])) for r in table(doc, "id", "rules", *head[1:])]
    checked = 0
    for r, rules in rows:
        if "BNil" in r["bids"]:
            continue
        bids = [0 if w == "Nil" else int(w) for w in r["bids"].split()]
        tricks = [int(x) for x in r["tricks"].split()]
        before = [int(x) for x in r["bags before"].split("/")]
        teams = R.score_hand(bids, tricks, before, rules, scores_before=(40, -30))
        rec, points, scores, bags_after = score_records(
            torch.tensor([0]), torch.tensor([bids]), torch.tensor([tricks]),
            torch.tensor([before]), torch.tensor([[40, -30]]), rules)
        got = rec[0, 9:].view(2, 9).tolist()
        assert got == [list(_team_fields(ts)) for ts in teams], r["id"]
        assert points[0].tolist() == [ts.hand_points for ts in teams], r["id"]
        assert bags_after[0].tolist() == [ts.bags_after for ts in teams], r["id"]
        checked += 1
    assert checked == 19


@pytest.mark.parametrize("impl", ["reference", "c", "engine", "vector-torch", "vector-native"])
def test_failed_nil_tricks_count_hand_through_every_implementation(impl, c_rules):
    """Worked by hand (docs/rules.md, Scoring a hand): seat 0 holds all 13 spades and bids Nil,
    the other seats bid 3 and hold one suit each, so seat 0 takes every trick. Standard: team 0
    loses 100 (the Nil) + 30 (seat 2's 3 set) + 100 (13 bags trip the penalty), 3 bags left.
    With ``failed_nil_tricks_count``: the 13 tricks make seat 2's 3 (+30 + 10 overtricks), 10 bags
    trip the penalty: -100 + 40 - 100 = -160, 0 bags left. Team 1 (6 bid, no trick): -60."""
    hands = [cards_to_mask(range(13 * (3 - s), 13 * (4 - s))) for s in range(4)]  # S H D C
    bids, tricks = [0, 3, 3, 3], [13, 0, 0, 0]
    for fnc, want in ((False, ((-230, 3), (-60, 0))), (True, ((-160, 0), (-60, 0)))):
        rules = Rules(failed_nil_tricks_count=fnc)
        if impl == "reference":
            got = tuple((t.hand_points, t.bags_after)
                        for t in R.score_hand(bids, tricks, [0, 0], rules))
        elif impl == "c":
            got = tuple(c_rules["score_team"](bids, tricks, [False] * 4, t, 0, 0, rules)[6::2]
                        for t in (0, 1))
        elif impl == "engine":
            g = SpadesGame.from_deal([mask_to_cards(h) for h in hands], 3, rules=rules, seed=0)
            for b in bids:
                g.apply(52 + b)
            while g.hand_results == []:
                g.apply(g.legal_actions()[-1])
            got = tuple((t.hand_points, t.bags_after) for t in g.hand_results[0].teams)
        else:
            torch = pytest.importorskip("torch")
            from spades_env.vector import SpadesVectorEnv
            env = SpadesVectorEnv(1, rules=rules, backend=impl.split("-")[1])
            holder = torch.tensor([[3 - c // 13 for c in range(52)]])
            obs, mask, seat = env.reset(holder=holder, dealer=torch.tensor([3]))
            for b in bids:
                obs, mask, seat, *_ = env.step(torch.tensor([52 + b]))
            info = {}
            while "hand_points" not in info:
                action = int(mask[0].nonzero()[-1, 0])
                obs, mask, seat, _r, _d, info = env.step(torch.tensor([action]))
            got = tuple(zip(info["hand_points"][0].tolist(), info["final_bags"][0].tolist()))
        assert got == want, (impl, fnc)


# ----------------------------------------------------------------------------- bids and exchanges
_BIDDING_RULES = [Rules(), Rules(blind_nil=True), Rules(min_team_bid=4),
                  Rules(min_team_bid=10, bid_total_not_13=True, blind_nil=True),
                  Rules(suicide=True), Rules(suicide=True, min_team_bid=4), Rules(mirror=True),
                  Rules(whiz=True), Rules(bid_total_not_13=True),
                  Rules(blind_nil=True, blind_nil_deficit=100)]


def _random_bidding(rng):
    """A random point in a bidding: (rules, seat, hand, looked, bids so far)."""
    rules = _BIDDING_RULES[int(rng.integers(len(_BIDDING_RULES)))]
    hand = cards_to_mask(rng.choice(52, 13, replace=False).tolist())
    dealer = int(rng.integers(4))
    n = int(rng.integers(4))  # bids made so far, from the seat left of the dealer
    bids = [None] * 4
    for k in range(n):  # earlier bids: each a legal one (by the reference) from a random hand
        s = (dealer + 1 + k) % 4
        other = cards_to_mask(rng.choice(52, 13, replace=False).tolist())
        legal = R.legal_bids(rules, s, other, True, bids)
        bids[s] = int(rng.choice([b for b in range(14) if legal >> b & 1]))
    seat = (dealer + 1 + n) % 4
    looked = not rules.blind_nil or bool(rng.random() < 0.7)
    return rules, seat, hand, looked, bids


def test_legal_bids_agree_in_python_c_and_torch(c_rules):
    """``rules.legal_bids`` (the reference) against ``rules.h``'s ``sp_legal_bids`` and the torch
    backend's ``legal_bids_batch`` (bidders who have seen their cards) at 500 random points of a
    bidding; the hand-worked values first: a seat that has looked bids 0..13, one still to decide
    under Blind Nil chooses Blind Nil (66) or look (67)."""
    torch = pytest.importorskip("torch")
    from spades_env.vector.torch_backend import legal_bids_batch

    assert R.legal_bids(Rules(), 0, 0, True, [None] * 4) == (1 << 14) - 1
    assert R.legal_bids(Rules(blind_nil=True), 1, 0, False, [3, None, None, None]) == 0b11 << 14
    rng = np.random.default_rng(5)
    for _ in range(3000):
        rules, seat, hand, looked, bids = _random_bidding(rng)
        want = R.legal_bids(rules, seat, hand, looked, bids)
        assert want, (rules, seat, bids)  # never no legal bid
        assert c_rules["legal_bids"](rules, seat, hand, looked, bids) == want, (rules, seat, bids)
        if looked:
            spades = torch.tensor([(hand >> 39).bit_count()])
            got = legal_bids_batch(rules, torch.tensor([seat]),
                                   torch.tensor([[-1 if b is None else b for b in bids]]),
                                   spades)[0]
            assert sum(int(v) << k for k, v in enumerate(got.tolist())) == want


def test_the_engine_asks_legal_bids_and_explains_each_refusal():
    """The engine's legal actions while bidding are ``legal_bids`` shifted to action ids, and
    every other bid action is refused with ``illegal_bid_reason``'s words."""
    rng = np.random.default_rng(11)
    for seed in range(80):
        g = SpadesGame(_BIDDING_RULES[seed % len(_BIDDING_RULES)], seed=seed)
        while g.phase == 0:
            p = g.current_player
            want = R.legal_bids(g.rules, p, g.hands[p], g.looked[p], g.bids)
            assert g.legal_mask() == want << 52
            assert g.legal_actions() == [52 + k for k in range(16) if want >> k & 1]
            for k in range(16):
                why = g.explain_illegal(52 + k)
                assert (why is None) == bool(want >> k & 1)
                if why is not None:
                    assert why == R.illegal_bid_reason(g.rules, k, p, g.hands[p], g.looked[p], g.bids)
            acts = g.legal_actions()
            g.apply(acts[int(rng.integers(len(acts)))])


def test_exchanges_worked_examples():
    """docs/rules.md, Blind Nil: a Blind Nil bidder whose partner did not also bid Blind Nil
    exchanges 3 cards, the partner passing first; exchanges come in bidding order (left of the
    dealer first); two partners both Blind Nil exchange nothing."""
    r = Rules(blind_nil=True)
    blind = [False, True, False, True]  # seats 1 and 3 are partners: no exchange
    assert R.exchanges(r, [4, 0, 3, 0], blind, 0) == ()
    blind = [True, False, False, True]  # seats 0 and 3, of two teams
    # dealer 1: bidding order 2, 3, 0, 1 -> seat 3's exchange first
    assert R.exchanges(r, [0, 4, 3, 0], blind, 1) == ((3, 3), (0, 3))
    assert R.exchange_queue(r, [0, 4, 3, 0], blind, 1) == [1, 1, 1, 3, 3, 3, 2, 2, 2, 0, 0, 0]
    assert R.passes_for_nil(r, 3, [0, 4, 3, 0], blind, 1)
    assert not R.passes_for_nil(r, 1, [0, 4, 3, 0], blind, 1)
    with pytest.raises(ValueError, match="no exchange"):
        R.passes_for_nil(r, 0, [0, 4, 3, 0], [False] * 4, 1)


def test_the_c_rules_struct_is_the_rules_fields():
    """``SP_RULES_FIELDS`` (rules.h) names every ``Rules`` field once (plus ``has_`` flags for the
    optional ones), and ``c_rules`` fills each from the ``Rules`` by name."""
    from dataclasses import fields

    from spades_env.native import c_rules, rules_c_fields
    names = rules_c_fields()
    assert len(set(names)) == len(names)
    py = {f.name for f in fields(Rules)}
    assert {n for n in names if not n.startswith("has_")} == py
    r = Rules(target_score=250, loss_threshold=-200, blind_nil=True, bag_penalty=50)
    c = c_rules(r)
    assert (c.target_score, c.has_loss_threshold, c.loss_threshold, c.blind_nil,
            c.bag_penalty) == (250, 1, -200, 1, 50)
    assert c_rules(Rules()).has_loss_threshold == 0


def test_blind_nil_offered_only_to_a_team_trailing_enough():
    """``blind_nil_deficit`` (docs/rules.md, House rules): 0 offers Blind Nil to every seat, a
    leading team included; 100 only to the seats of a team at least 100 behind, who then decide
    before looking while the others bid with their cards seen."""
    r0 = Rules(blind_nil=True)
    assert all(R.blind_nil_offered(r0, s, (170, 94)) for s in range(4))
    r = Rules(blind_nil=True, blind_nil_deficit=100)
    assert [R.blind_nil_offered(r, s, (0, 100)) for s in range(4)] == [True, False, True, False]
    assert [R.blind_nil_offered(r, s, (0, 99)) for s in range(4)] == [False] * 4
    g = SpadesGame.from_deal([cards_to_mask(range(13 * k, 13 * k + 13)) for k in range(4)],
                             dealer=3, scores=(0, 150), rules=r)
    assert g.looked == [False, True, False, True]
    assert g.legal_actions() == [66, 67]  # seat 0, of the trailing team
    g.apply(67)
    g.apply(52 + 3)
    assert g.current_player == 1 and g.legal_actions() == list(range(52, 66))  # no decision
    assert "already looked" in g.explain_illegal(66)


def test_spades_lead_any_time_shows_no_void_and_runs_in_every_engine():
    """``spades_lead_any_time`` (docs/rules.md, House rules): spades count as broken from the
    start, so a spade lead at the first trick is legal and shows no void (``voids_of_plays``
    with ``broken_at_start``), in the engine's ``known_voids`` as in the reference."""
    assert R.voids_of_plays([(0, 51)], False) == (0b0111, 0, 0, 0)  # standard: only spades
    assert R.voids_of_plays([(0, 51)], False, broken_at_start=True) == (0, 0, 0, 0)
    r = Rules(spades_lead_any_time=True)
    with pytest.raises(ValueError, match="spades_lead_any_time and Rules.forced_spade_lead"):
        Rules(spades_lead_any_time=True, forced_spade_lead_breaks=True)
    g = SpadesGame.from_deal([cards_to_mask(range(13 * k, 13 * k + 13)) for k in (3, 0, 1, 2)],
                             dealer=3, rules=r)  # seat 0 holds the spades
    for _ in range(4):
        g.apply(52 + 3)
    assert g.spades_broken and g.legal_actions() == list(range(39, 52))
    g.apply(51)  # AS led
    assert g.view(1).known_voids == (0, 0, 0, 0)


def _moon_deal():
    """Seat 0 holds the 13 spades (it leads every trick and wins it), seat 1 the clubs, seat 2
    the diamonds, seat 3 the hearts; dealer 3, so seat 0 bids and leads first."""
    return [cards_to_mask(range(13 * k, 13 * k + 13)) for k in (3, 0, 1, 2)]


@pytest.mark.parametrize("impl", ["engine", "vector-torch", "vector-native"])
def test_big_bid_double_and_the_moon_in_every_engine(impl):
    """docs/rules.md, House rules: team 0 bids 7 + 6 = 13 and seat 0's spades take all 13 tricks.
    With ``big_bid_double=10`` the contract scores 20 per trick (260; team 1's 2 + 2 set: -40);
    with ``moon_wins`` the game ends at once, team 0 the winner, far below the target of 500;
    without it the game plays on. The scalar engine and both batched backends agree."""
    for moon in (True, False):
        rules = Rules(big_bid_double=10, moon_wins=moon)
        bids = (7, 2, 6, 2)
        if impl == "engine":
            g = SpadesGame.from_deal(_moon_deal(), dealer=3, rules=rules)
            for b in bids:
                g.apply(52 + b)
            while g.hand_number == 0:
                g.apply(g.legal_actions()[0])
            t0, t1 = g.hand_results[0].teams
            got = (t0.contract_points, t1.contract_points, g.winner)
        else:
            torch = pytest.importorskip("torch")
            from spades_env.vector import SpadesVectorEnv
            env = SpadesVectorEnv(num_envs=1, rules=rules, seed=0, backend=impl[7:])
            hands = _moon_deal()
            holder = torch.tensor([[next(s for s in range(4) if (hands[s] >> c) & 1)
                                    for c in range(52)]])
            obs, mask, seat = env.reset(holder=holder, dealer=torch.tensor([3]))
            for b in bids:
                obs, mask, seat, *_ = env.step(torch.tensor([52 + b]))
            for _ in range(52):
                a = int(mask[0].nonzero()[0, 0])
                obs, mask, seat, rew, done, info = env.step(torch.tensor([a]))
            w = int(info["winner"][0])
            got = (int(info["hand_points"][0, 0]), int(info["hand_points"][0, 1]),
                   None if w < 0 else w)
        assert got == (260, -40, 0 if moon else None), (moon, got)


def test_moon_and_big_bid_worked_values_in_python_and_c(c_rules):
    """The same rules through ``score_hand`` / ``sp_score_team`` and ``game_outcome`` /
    ``sp_game_outcome``: a made 10 scores 200 under ``big_bid_double=10`` and 100 without; a made
    9 stays 90; a set 10 loses 100 either way; ``moon_team`` names the team of a made 13 only
    under ``moon_wins``, and the moon wins whatever the totals."""
    r = Rules(big_bid_double=10, moon_wins=True)
    for bids, tricks, want in (((5, 2, 5, 2), (5, 1, 5, 2), 200), ((5, 2, 4, 2), (5, 1, 5, 2), 91),
                               ((5, 2, 5, 2), (5, 2, 4, 2), -100)):
        t0 = R.score_hand(bids, tricks, (0, 0), r)[0]
        assert t0.contract_points == want
        assert c_rules["score_team"](bids, tricks, [False] * 4, 0, 0, 0, r)[1] == want
    assert R.score_hand((5, 2, 5, 2), (5, 1, 5, 2), (0, 0), Rules())[0].contract_points == 100
    teams = R.score_hand((7, 2, 6, 2), (13, 0, 0, 0), (0, 0), r)
    assert R.moon_team(r, teams) == 0 and R.moon_team(Rules(), teams) is None
    assert R.game_outcome((-300, 450), r, moon=0) == 0
    assert c_rules["game_outcome"]((-300, 450), r, 0) == 0
    assert c_rules["game_outcome"]((-300, 450), r, -1) == -1
    with pytest.raises(ValueError, match="big_bid_double must be 0"):
        Rules(big_bid_double=5)
