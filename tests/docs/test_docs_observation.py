"""docs/observation.md is true: its generated tables are the code's, its sizes add up, and every
worked example plays as the page says.

The tables are regenerated with ``docs/gen_observation_tables.py`` and must appear in the doc
exactly; the offsets are then also read back from the doc's own text and summed, and version 1's
offsets are checked against a frozen copy (earlier pieces never move).
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import re

import gymnasium
import numpy as np
import pytest

from spades_env import (BLIND_NIL_ACTION, LOOK_ACTION, NUM_ACTIONS, Rules, SpadesGame,
                        SpadesSingleAgentEnv, action_str, bid_action, parse_card, spades_v1)
from spades_env.observation import OBS_SIZE, OBS_SIZE_V1, OBS_VERSION, OFFSETS, PIECES, encode
from spades_env.rules import score_hand
from spades_env.state import STATE_OFFSETS, STATE_SIZE, encode_state

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DOC = os.path.join(ROOT, "docs", "observation.md")


def _load_generator():
    spec = importlib.util.spec_from_file_location(
        "gen_observation_tables", os.path.join(ROOT, "docs", "gen_observation_tables.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


gen = _load_generator()


@pytest.fixture(scope="module")
def doc() -> str:
    with open(DOC, encoding="utf-8") as f:
        return f.read()


# ----------------------------------------------------------------------------- generated tables
@pytest.mark.parametrize("name", sorted(gen.TABLES))
def test_the_doc_holds_the_generated_table(doc, name):
    blocks = gen.doc_blocks(doc)
    assert name in blocks, f"docs/observation.md has no generated block {name!r}"
    assert blocks[name] == gen.block(name), (
        f"docs/observation.md's {name!r} table differs from the code: run "
        f"python docs/gen_observation_tables.py --write")


def test_the_doc_has_no_stray_generated_block(doc):
    assert sorted(gen.doc_blocks(doc)) == sorted(gen.TABLES)
    assert gen.rewrite(doc) == doc


def _doc_rows(doc: str, name: str) -> list[list[str]]:
    body = gen.doc_blocks(doc)[name].splitlines()[4:-2]  # marker, blank, header, rule ... blank, marker
    return [[c.strip() for c in line.strip("|").split("|")] for line in body]


def _span(index: str) -> tuple[int, int]:
    a, _, b = index.partition(" - ")
    return int(a), int(b or a) + 1


@pytest.mark.parametrize("name,size,extra", [("observation", OBS_SIZE, "`history`"),
                                             ("state", STATE_SIZE, None)])
def test_the_offsets_in_the_doc_add_up(doc, name, size, extra):
    rows = _doc_rows(doc, name)
    pos = 0
    for row in rows:
        if row[0] == extra:
            continue
        start, stop = _span(row[1])
        assert start == pos, f"{row[0]} starts at {start}, the pieces before end at {pos}"
        assert stop - start == int(row[3]), row
        pos = stop
    assert pos == size
    assert sum(int(r[3]) for r in rows if r[0] != extra) == size


def test_the_sizes_are_the_documented_ones():
    # worked out from the piece list by hand: 3+1+52+208+208+4+64+4+16+1+1+4+4+2+2+1 = 575, +104
    # = 679, +32 = 711
    assert (OBS_SIZE_V1, OBS_SIZE, OBS_VERSION, STATE_SIZE, NUM_ACTIONS) == (575, 711, 3, 735, 68)
    assert sum(s for _, s in PIECES[:-2]) == 575 and PIECES[-2:] == (("exchange", 104),
                                                                    ("rules", 32))
    assert spades_v1.HISTORY_OFFSET == 679 and spades_v1.HISTORY_SIZE == 52 * 56
    from spades_env import spades_v2
    assert spades_v2.HISTORY_OFFSET == 711


# Version 1's offsets, frozen: a later version may only append pieces.
VERSION_1 = {"phase": (0, 3), "looked": (3, 4), "hand": (4, 56), "played": (56, 264),
             "trick": (264, 472), "led_suit": (472, 476), "bids": (476, 540),
             "tricks_won": (540, 544), "voids": (544, 560), "spades_broken": (560, 561),
             "trick_number": (561, 562), "dealer": (562, 566), "to_act": (566, 570),
             "scores": (570, 572), "bags": (572, 574), "target": (574, 575)}


def test_version_1_pieces_never_moved():
    for name, span in VERSION_1.items():
        assert OFFSETS[name] == span, name
    assert [n for n, _ in PIECES][:len(VERSION_1)] == list(VERSION_1)
    assert all(OFFSETS[n][0] >= OBS_SIZE_V1 for n, _ in PIECES[len(VERSION_1):])


def test_every_piece_has_words_and_a_shape_of_its_size():
    assert set(gen.OBS_TEXT) == {n for n, _ in PIECES}
    assert set(gen.STATE_TEXT) == set(STATE_OFFSETS)
    with pytest.raises(KeyError, match="no words"):
        gen._text_of({}, "new_piece", 4, "observation")
    with pytest.raises(ValueError, match="not its size"):
        gen._text_of({"p": ("4 x 4", "flags", "x")}, "p", 15, "observation")


def test_the_check_mode_sees_a_stale_doc(tmp_path, monkeypatch):
    stale = tmp_path / "observation.md"
    with open(DOC, encoding="utf-8") as f:
        stale.write_text(f.read().replace("| `looked` | 3 |", "| `looked` | 4 |"))
    monkeypatch.setattr(gen, "DOC", str(stale))
    assert gen.main(["--check"]) == 1
    assert gen.main(["--write"]) == 0
    assert gen.main(["--check"]) == 0


# ----------------------------------------------------------------------------- worked examples
ONE_SUIT = [list(range(39, 52)), list(range(0, 13)), list(range(13, 26)), list(range(26, 39))]
BIDS = {0: 65, 1: 53, 2: 52, 3: 53}  # 13, 1, Nil, 1


def one_suit_game() -> SpadesGame:
    return SpadesGame.from_deal(ONE_SUIT, dealer=3)


def test_worked_example_one_trick():
    game = one_suit_game()
    assert game.current_player == 0
    for a in (65, 53, 52, 53):
        game.apply(a)
    assert game.legal_actions() == list(range(39, 52))
    game.apply(39)
    assert game.legal_actions() == list(range(0, 13))
    game.apply(0)
    obs = encode(game.view(2))
    ones = {522, 526, 494, 477, 407, 420, 475, 559, 552, 553, 554, 566, 563, 2}
    for i in ones:
        assert obs[i] == 1.0, i
    # nothing else is set in bids, trick, led_suit, voids, to_act, dealer, phase
    for name in ("bids", "trick", "led_suit", "voids", "to_act", "dealer", "phase"):
        a, b = OFFSETS[name]
        assert set(np.flatnonzero(obs[a:b]) + a) <= ones, name
    assert int(obs[OFFSETS["bids"][0]:OFFSETS["bids"][1]].sum()) == 4
    state = encode_state(game)
    a, b = STATE_OFFSETS["voids"]
    assert list(np.flatnonzero(state[a:b]) + a) == [719]
    a, b = STATE_OFFSETS["hands"]
    assert list(np.flatnonzero(state[a:a + 52]) + a) == list(range(52, 64))


def test_worked_example_action_ids():
    assert [parse_card(c) for c in ("2C", "10H", "AS")] == [0, 34, 51]
    assert [bid_action(b) for b in (0, 4, 13)] == [52, 56, 65]
    assert (BLIND_NIL_ACTION, LOOK_ACTION) == (66, 67)
    assert action_str(56) == "bid 4"


def test_worked_example_masks():
    env = spades_v1.env()
    env.reset(options={"game": one_suit_game()})
    mask = env.observe("player_0")["action_mask"]
    assert mask.dtype == np.int8 and list(np.flatnonzero(mask)) == list(range(52, 66))
    assert not env.observe("player_1")["action_mask"].any()  # not to act
    blind = SpadesGame(Rules(blind_nil=True), seed=1)
    assert blind.current_player == 2 and blind.legal_actions() == [66, 67]
    single = SpadesSingleAgentEnv(seat=0, hands_per_episode=1)
    single.reset(options={"game": one_suit_game()})
    assert single.action_masks().dtype == bool
    assert list(np.flatnonzero(single.action_masks())) == list(range(52, 66))


def _play_one_suit(**env_kwargs) -> dict:
    """Play the one-suit deal's first hand in the AEC env; the rewards after its last move."""
    env = spades_v1.env(**env_kwargs)
    env.reset(options={"game": one_suit_game()})
    raw = env.unwrapped
    while raw.game.hand_number == 0 and not any(raw.terminations.values()):
        agent = env.agent_selection
        legal = np.flatnonzero(env.observe(agent)["action_mask"])
        env.step(BIDS[int(agent[-1])] if legal[0] >= 52 else int(legal[0]))
    return dict(raw.rewards), raw


def test_worked_example_rewards_aec():
    t0, t1 = score_hand((13, 1, 0, 1), (13, 0, 0, 0), (0, 0))
    assert (t0.contract_points, t0.nil_points, t0.hand_points) == (130, 100, 230)
    assert (t1.contract, t1.made, t1.hand_points) == (2, False, -20)
    rewards, raw = _play_one_suit()
    assert raw.game.hand_results[0].tricks == (13, 0, 0, 0)
    assert rewards == {"player_0": 2.5, "player_1": -2.5, "player_2": 2.5, "player_3": -2.5}
    assert raw.infos["player_3"]["hand_result"]["teams"][0]["hand_points"] == 230
    rewards, raw = _play_one_suit(reward="game", hands_per_episode=1)
    assert rewards == {"player_0": 1.0, "player_1": -1.0, "player_2": 1.0, "player_3": -1.0}
    assert all(raw.terminations.values())
    rewards, raw = _play_one_suit(reward="game")
    assert rewards == dict.fromkeys(spades_v1.AGENTS, 0.0)
    assert tuple(raw.game.scores) == (230, -20) and raw.game.hand_number == 1
    assert not any(raw.terminations.values())


def test_an_illegal_action_ends_the_aec_episode_with_minus_one():
    env = spades_v1.env()
    env.reset(options={"game": one_suit_game()})
    env.step(BLIND_NIL_ACTION)  # player_0: Blind Nil is off
    raw = env.unwrapped
    assert raw.rewards == {"player_0": -1, "player_1": 0, "player_2": 0, "player_3": 0}
    assert all(raw.terminations.values())


def _bot(bid: int):
    return lambda view: bid_action(bid) if view.legal_actions[0] >= 52 else view.legal_actions[0]


def test_worked_example_rewards_single_agent():
    env = SpadesSingleAgentEnv(seat=0, partner=_bot(0), opponents=_bot(1), hands_per_episode=1)
    env.reset(options={"game": one_suit_game()})
    rewards, term = [], False
    while not term:
        legal = np.flatnonzero(env.action_masks())
        _, r, term, trunc, info = env.step(65 if legal[0] >= 52 else int(legal[0]))
        rewards.append(r)
        assert not trunc
    assert rewards == [0.0] * 13 + [2.5]
    assert info["hand_result"]["teams"][1]["hand_points"] == -20
    env.reset(options={"game": one_suit_game()})
    _, r, term, trunc, info = env.step(BLIND_NIL_ACTION)
    assert (r, term, trunc) == (-1.0, True, False) and info["illegal_action"]


def test_versions_as_documented():
    with pytest.warns(FutureWarning, match="spades_v1"):
        import spades_env.spades_v0 as v0
        importlib.reload(v0)
    assert v0.raw_env is spades_v1.raw_env
    assert "Spades-v1" in gymnasium.registry and "SpadesHand-v1" in gymnasium.registry
    assert "Spades-v0" not in gymnasium.registry


def test_every_number_of_the_prose_examples_is_in_the_doc(doc):
    """The worked-example table's indices are the sums written beside them."""
    sums = re.findall(r"\| ([\d +*]+) = (\d+) \|", doc)
    assert len(sums) >= 10
    for expr, value in sums:
        total = sum(int(np.prod([int(f) for f in term.split("*")])) for term in expr.split("+"))
        assert total == int(value), expr
