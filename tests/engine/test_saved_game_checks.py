"""Saved games are checked in every field whatever the move log holds.

A game whose move log is empty (set up mid-way, or a crafted file) is its own starting point: its
current hand is replayed from the deal it shows and its earlier score tables are checked by the
rules' scoring (``spades_env.saved_game``), so every field is checked without a log. A game that
loads must print, save, load again and play; every refusal is a ``ValueError``.
"""

from __future__ import annotations

import copy
import json

import pytest

from spades_env import Rules, SpadesGame, bid_action
from spades_env.cards import BLIND_NIL_ACTION, LOOK_ACTION


def _play_until(g: SpadesGame, done) -> SpadesGame:
    while not done(g):
        g.apply(g.legal_actions()[0])
    return g


def _mid_way_state(source: str) -> dict:
    """Hand 2 of a game (two score tables, dealers 2 then 3), 5 cards into the play, as a state
    without a move log (its own starting point): played by the engine (``"engine"``) or by the
    vector env (``"vector"``, needs torch; skipped without it)."""
    if source == "engine":
        g = SpadesGame(seed=4)
        for _ in range(2 * 56 + 9):
            g.apply(g.legal_actions()[0])
        d = g.to_dict()
    else:
        pytest.importorskip("torch")
        from spades_env.vector import SpadesVectorEnv

        env = SpadesVectorEnv(1, seed=3, backend="torch")
        obs, mask, seat = env.reset()
        for _ in range(2 * 56 + 9):
            obs, mask, seat, *_ = env.step(mask.int().argmax(1))
        d = env.get_game(0).to_dict()
    d["moves"], d["initial"] = [], {}
    assert len(d["hand_results"]) == 2 and d["phase"] == 2
    assert [t["dealer"] for t in d["hand_results"]] == [2, 3]
    return d


# where the mid-way state comes from: the engine's own play, and the vector env's (needs torch)
SOURCES = pytest.mark.parametrize("source", ["engine", "vector"])


def _exchange_state() -> dict:
    """House rules: seat left of the dealer bids Blind Nil, the others look and bid 3; the
    partner has passed one of its three cards. Move log stripped."""
    g = SpadesGame(Rules.preset("house"), seed=0)
    g.apply(BLIND_NIL_ACTION)
    for _ in range(3):
        g.apply(LOOK_ACTION)
        g.apply(bid_action(3))
    assert g.phase == 1 and len(g.exchange_queue) == 6
    g.apply(g.legal_actions()[0])
    d = g.to_dict()
    d["moves"], d["initial"] = [], {}
    return d


def _load_ok(d: dict) -> SpadesGame:
    g = SpadesGame.from_dict(d)
    str(g)
    again = SpadesGame.from_json(g.to_json())
    assert again.to_dict() == g.to_dict()
    if not g.is_over:
        g.apply(g.legal_actions()[0])
        SpadesGame.from_json(g.to_json())
    return g


@SOURCES
def test_the_base_states_load_print_save_and_play(source):
    for d in (_mid_way_state(source), _exchange_state()):
        _load_ok(d)


# ------------------------------------------------------------------------- score tables
def _table_edit(path, value):
    def edit(d):
        x = d["hand_results"]
        for k in path[:-1]:
            x = x[k]
        x[path[-1]] = value
    return edit


@pytest.mark.parametrize("edit,match", [
    (_table_edit([0, "bids"], ["hello", 3, 3, 3]), "bids must be 4 ints"),
    (_table_edit([0, "tricks"], [None] * 4), "tricks must be 4 ints"),
    (_table_edit([0, "hand_number"], "x"), "hand_number must be an int"),
    (_table_edit([1, "dealer"], None), "dealer must be an int"),
    (_table_edit([0, "teams", 1, "made"], "yes"), "made must be True, False or None"),
    (_table_edit([0, "teams", 0, "hand_points"], 1e9), "hand_points must be an int"),
    (_table_edit([0, "teams", 0, "extra"], 1), "exactly the keys"),
    (_table_edit([0, "teams"], []), "teams must be 2"),
    # well-typed but not what the rules give
    (_table_edit([1, "hand_number"], 5), "hand number 5"),
    (_table_edit([1, "dealer"], 0), "rotate|dealer"),
    (_table_edit([0, "blind"], [True, False, False, False]), "Blind Nil"),
])
@SOURCES
def test_garbage_score_tables_are_refused_without_a_move_log(edit, match, source):
    d = _mid_way_state(source)
    edit(d)
    with pytest.raises(ValueError, match=match):
        SpadesGame.from_dict(d)


@SOURCES
def test_score_table_numbers_must_be_the_scoring_of_its_bids_and_tricks(source):
    base = _mid_way_state(source)
    t = base["hand_results"][1]["teams"][0]
    for field, delta in (("hand_points", 1), ("contract_points", -10), ("bags", 1),
                         ("nil_points", 100), ("total", 7), ("contract", 1)):
        d = copy.deepcopy(base)
        d["hand_results"][1]["teams"][0][field] = t[field] + delta
        with pytest.raises(ValueError):
            SpadesGame.from_dict(d)
    d = copy.deepcopy(base)  # tricks that do not make 13
    h = d["hand_results"][0]
    h["tricks"][0] += 1
    h["teams"][0]["tricks"][0] += 1
    with pytest.raises(ValueError, match="sum to 13"):
        SpadesGame.from_dict(d)
    d = copy.deepcopy(base)  # the second hand must start from the first one's bags
    d["hand_results"][0]["teams"][1]["bags_after"] = (t["bags_after"] + 1) % 10
    with pytest.raises(ValueError):
        SpadesGame.from_dict(d)


def test_running_game_whose_totals_end_it_is_refused():
    # no score table, empty log: totals 520 - 10 would have ended the game (target 500)
    d = SpadesGame(seed=4).to_dict()
    d["scores"] = [520, 10]
    with pytest.raises(ValueError, match="already end"):
        SpadesGame.from_dict(d)
    d["scores"] = [499, -10_000]  # no loss threshold in the standard rules: plays on
    _load_ok(d)


# ------------------------------------------------------------------- Blind Nil exchange
@pytest.mark.parametrize("queue", "bad")
def test_exchange_queue_must_follow_the_blind_nil_bids(queue):
    d = _exchange_state()
    p = d["current_player"]
    queues = {"b": [p, 9, 9], "a": [p] * 5, "d": [p, p, p]}
    d["exchange_queue"] = queues[queue]
    with pytest.raises(ValueError, match="exchange"):
        SpadesGame.from_dict(d)


def test_exchange_without_a_blind_nil_bid_is_refused():
    g = SpadesGame(Rules.preset("house"), seed=0)
    for _ in range(4):
        g.apply(LOOK_ACTION)
        g.apply(bid_action(3))
    d = g.to_dict()
    d["moves"], d["initial"], d["phase"] = [], {}, 1
    d["current_player"] = p = d["trick_leader"]
    d["exchange_queue"] = [p, p, p]
    with pytest.raises(ValueError, match="exchange"):
        SpadesGame.from_dict(d)


def test_exchange_log_must_match_where_the_cards_are():
    d = _exchange_state()
    frm, to, card = d["exchanges"][0]
    bad = copy.deepcopy(d)  # the log says the card went to the partner; it is still at home
    bad["hands"][frm] |= 1 << card
    bad["hands"][to] &= ~(1 << card)
    with pytest.raises(ValueError, match="passed to"):
        SpadesGame.from_dict(bad)
    bad = copy.deepcopy(d)  # a pass by the wrong seat
    bad["exchanges"][0][0] = (frm + 1) & 3
    with pytest.raises(ValueError, match="exchange"):
        SpadesGame.from_dict(bad)
    bad = copy.deepcopy(d)  # play starts with the exchange unfinished
    bad["phase"], bad["exchange_queue"] = 2, []
    bad["current_player"] = bad["trick_leader"]
    with pytest.raises(ValueError):
        SpadesGame.from_dict(bad)


# ------------------------------------------------------------------ initial state and rng
def test_initial_state_is_checked_even_without_moves():
    d = SpadesGame(seed=5).to_dict()
    for init in ({"foo": 1}, {"rng": {"bit_generator": "PCG64"}, "rules": {}},
                 {**d["initial"], "rules": Rules(target_score=250).to_dict()}):
        e = copy.deepcopy(d)
        e["initial"] = init
        with pytest.raises(ValueError, match="initial"):
            SpadesGame.from_dict(e)
    e = copy.deepcopy(d)
    e["initial"] = {**d["initial"], "rng": {**d["initial"]["rng"], "state": object()}}
    with pytest.raises(ValueError):
        SpadesGame.from_dict(e)


def test_rng_state_out_of_range_is_a_value_error():
    d = SpadesGame(seed=5).to_dict()
    d["rng"]["state"]["state"] = 2 ** 200
    with pytest.raises(ValueError):
        SpadesGame.from_dict(d)
    d = SpadesGame(seed=5).to_dict()
    d["rng"] = {"bit_generator": "PCG64", "state": "x"}
    with pytest.raises(ValueError):
        SpadesGame.from_dict(d)


# ------------------------------------------------------------------ every field, many values
GARBAGE = (None, "x", -1, 3, 10 ** 30, 1.5, True, [], {}, [0, 0, 0, 0])


def _leaf_paths(x, path=()):
    if isinstance(x, dict):
        for k, v in x.items():
            yield path + (k,)
            yield from _leaf_paths(v, path + (k,))
    elif isinstance(x, list):
        for i, v in enumerate(x):
            yield path + (i,)
            yield from _leaf_paths(v, path + (i,))


@SOURCES
def test_every_field_garbage_is_refused_or_the_game_prints_saves_and_plays(source):
    """Replace each field (and each element of each list) of two states without a move log by
    each of ten garbage values: the load either raises ValueError or gives a game that prints,
    saves, loads again and plays a move."""
    loaded = refused = 0
    for base in (_mid_way_state(source), _exchange_state()):
        for path in _leaf_paths(base):
            if path[0] in ("format", "version"):
                continue
            for v in GARBAGE:
                d = copy.deepcopy(base)
                x = d
                for k in path[:-1]:
                    x = x[k]
                x[path[-1]] = copy.deepcopy(v)
                try:
                    SpadesGame.from_dict(d)
                except ValueError:
                    refused += 1
                    continue
                _load_ok(d)
                loaded += 1
    assert refused > 1000 and loaded > 0


def test_from_json_refusals_are_value_errors_for_deep_or_odd_json():
    base = json.loads(SpadesGame(seed=1).to_json())
    for text in ("[" * 100_000, json.dumps({**base, "hands": [2 ** 80] * 4}),
                 json.dumps({**base, "rng": {**base["rng"], "bit_generator": "object"}})):
        with pytest.raises(ValueError):
            SpadesGame.from_json(text)


def _random_games():
    """Saved games at many points: a fresh deal, Blind Nil bidding and exchange, the play, a
    finished game; with their move logs and without."""
    import random
    out = []
    for seed, rules, n in ((0, Rules(), 0), (2, Rules.preset("house"), 9), (3, Rules(), 30),
                           (4, Rules(loss_threshold=-100, target_score=100), 400),
                           (5, Rules.preset("house"), 80),
                           (6, Rules(forced_spade_lead_breaks=True), 150)):
        r = random.Random(seed)
        g = SpadesGame(rules, seed=seed)
        for _ in range(n):
            if g.is_over:
                break
            la = g.legal_actions()
            g.apply(BLIND_NIL_ACTION if BLIND_NIL_ACTION in la and r.random() < .4
                    else r.choice(la))
        d = g.to_dict()
        out.append(d)
        e = copy.deepcopy(d)
        e["moves"], e["initial"] = [], {}
        out.append(e)
    return out


def test_random_edits_of_saved_games_are_refused_or_load_whole():
    """Second break-it pass (new inputs): 1 to 3 random edits (garbage values, off-by-one ints,
    deleted keys, extra list items) anywhere in saved games of every phase. Each load raises
    ValueError, or the game prints, saves, loads again and plays 20 more moves that save too."""
    import random
    rng = random.Random(11)
    bases = _random_games()
    for d in bases:
        _load_ok(copy.deepcopy(d))
    garbage = [None, "x", -1, 0, 1, 3, 13, 52, 10 ** 30, 1.5, float("nan"), True, [], {},
               [0] * 4, [[0, 1]]]
    refused = loaded = 0
    for _ in range(600):
        d = copy.deepcopy(rng.choice(bases))
        paths = list(_leaf_paths(d))
        for _ in range(rng.choice([1, 1, 2, 3])):
            path = rng.choice(paths)
            x = d
            try:
                for k in path[:-1]:
                    x = x[k]
                op = rng.random()
                if op < 0.6:
                    x[path[-1]] = copy.deepcopy(rng.choice(garbage))
                elif op < 0.8 and type(x[path[-1]]) is int:
                    x[path[-1]] += rng.choice([-1, 1, 13])
                elif op < 0.9:
                    del x[path[-1]]
                elif isinstance(x[path[-1]], list):
                    x[path[-1]].append(rng.choice(garbage))
            except (KeyError, IndexError, TypeError, AttributeError):
                pass
        try:
            g = SpadesGame.from_dict(d)
        except ValueError:
            refused += 1
            continue
        loaded += 1
        str(g)
        assert SpadesGame.from_json(g.to_json()).to_json() == g.to_json()
        for _ in range(20):
            if g.is_over:
                break
            g.apply(rng.choice(g.legal_actions()))
        assert SpadesGame.from_json(g.to_json()).to_json() == g.to_json()
    assert refused > 400 and loaded > 20


def test_a_saved_game_naming_a_base_class_generator_is_a_value_error():
    base = json.loads(SpadesGame(seed=0).to_json())
    for name in ("BitGenerator", "SeedSequence", "Generator", "RandomState", "__class__"):
        for where in ("rng", "initial"):
            d = json.loads(json.dumps(base))
            (d["rng"] if where == "rng" else d["initial"]["rng"])["bit_generator"] = name
            with pytest.raises(ValueError, match=f"unknown bit generator '{name}'"):
                SpadesGame.from_json(json.dumps(d))
    d = json.loads(json.dumps(base))
    d["rng"]["bit_generator"] = "MT19937"      # a real generator with a foreign state
    with pytest.raises(ValueError, match="bad MT19937 rng state"):
        SpadesGame.from_json(json.dumps(d))


def test_a_refusal_inside_the_starting_state_names_the_saved_game_once():
    import json
    from spades_env import SpadesGame
    g = SpadesGame(seed=1)
    g.apply(g.legal_actions()[0])
    d = g.to_dict()
    state = json.loads(json.dumps(d))
    state["initial"], state["moves"] = {}, []
    state["rules"]["failed_nil_tricks_count"] = "x"
    d = dict(d, moves=[], initial={"state": state})
    with pytest.raises(ValueError) as e:
        SpadesGame.from_dict(d)
    assert str(e.value) == ("corrupt spades_env saved game: bad initial state (rules: "
                            "Rules.failed_nil_tricks_count must be a bool, got 'x')")
