"""Every value a label chunk or a teacher-records file carries is checked against what the rules
allow at its decision (replayed with the engine) before it is used: a value on a card the seat
cannot play, an illegal move, a regret that is not the policy's is refused with one error naming
the file, the hand, the decision and the card."""

import os

import numpy as np
import pytest

from spades_env import Rules, SpadesGame
from spades_env.cards import TEAM, card_str
from spades_env.training.labels import load_labels, save_labels
from tests.helpers import ROOT


@pytest.fixture(scope="module")
def rec(tiny):
    from spades_env.training.labelling import label_chunk
    return label_chunk(tiny, 2, seed=11, chunk=0, samples=2)


def _copy(rec) -> dict:
    return {k: v.copy() for k, v in rec.items()}


def _walk(rec, h):
    """(seat, legal action ids) of every decision of hand ``h``, replayed."""
    g = SpadesGame(Rules(), seed=int(rec["seed"][h]))
    g.scores = [int(x) for x in rec["scores"][h]]
    g.bags = [int(x) for x in rec["bags"][h]]
    out = []
    for k in range(56):
        out.append((g.current_player, g.legal_actions()))
        g.apply(int(rec["moves"][h, k]))
    return out


def _save(tmp_path, rec, name="chunk_00000.npz") -> str:
    p = str(tmp_path / name)
    save_labels(p, rec, "tiny.pt", 2, seed=11, chunk=0)
    return p


def _valued_decision(rec, h, with_illegal=True):
    """The first card decision of hand ``h`` with more than one value and an illegal card."""
    walk = _walk(rec, h)
    for k in range(4, 56):
        if (~np.isnan(rec["values"][h, k])).sum() > 1:
            illegal = [c for c in range(52) if c not in walk[k][1]]
            if illegal or not with_illegal:
                return k, walk[k][0], illegal
    raise AssertionError("no valued card decision")


def test_a_genuine_chunk_loads_with_its_values(rec, tmp_path):
    back = load_labels(_save(tmp_path, rec))
    np.testing.assert_array_equal(back["values"], rec["values"])
    np.testing.assert_array_equal(back["regret"], rec["regret"])
    assert int((~np.isnan(rec["regret"])).sum()) > 0  # the regret checks below have work
    from spades_env.training.labels import check_legal
    check_legal(rec, "here")  # nothing raised


def test_a_value_on_a_card_the_seat_cannot_play_refuses_the_file(rec, tmp_path):
    bad = _copy(rec)
    k, seat, illegal = _valued_decision(bad, 1)
    c = illegal[0]
    bad["values"][1, k, c] = np.nanmax(bad["values"][1, k]) + 300  # the "best" card
    p = _save(tmp_path, bad)
    with pytest.raises(ValueError) as e:
        load_labels(p)
    msg = str(e.value)
    assert msg.startswith(f"{p}: hand 1, decision {k} (seat {seat}): field 'values' holds a value "
                          f"on card {card_str(c)} (card {c}), which that seat cannot play there")
    np.testing.assert_array_equal(bad["values"][0], rec["values"][0])  # nothing else changed


def test_an_illegal_move_refuses_the_file(rec, tmp_path):
    bad = _copy(rec)
    seat, legal = _walk(bad, 0)[5]  # the second card: a seat that cannot follow may not
    c = next(c for c in range(52) if c not in legal)  # play a card it does not hold
    bad["moves"][0, 5] = c
    with pytest.raises(ValueError) as e:
        load_labels(_save(tmp_path, bad))
    assert str(e.value).endswith(f": hand 0, decision 5 (seat {seat}): field 'moves': "
                                 f"{card_str(c)} (action {c}) is illegal there (legal: "
                                 f"{', '.join(card_str(x) for x in legal)})")


def _regret_decisions(rec, h):
    walk = _walk(rec, h)
    known = [k for k in range(4, 56) if not np.isnan(rec["regret"][h, k])]
    valued = [k for k in range(4, 56) if (~np.isnan(rec["values"][h, k])).sum() > 1]
    return walk, known, valued


def test_a_regret_on_the_search_teams_decision_refuses_the_file(rec, tmp_path):
    bad = _copy(rec)
    walk, known, valued = _regret_decisions(bad, 0)
    team = int(bad["agent_team"][0])
    k = next(k for k in valued if TEAM[walk[k][0]] != team)
    bad["regret"][0, k] = 0.0  # within the values' spread: the old checks let it through
    with pytest.raises(ValueError, match=rf"hand 0, decision {k} \(seat {walk[k][0]}\): field "
                                         r"'regret' holds a value on a decision of the search "
                                         r"team"):
        load_labels(_save(tmp_path, bad))


def test_a_regret_the_values_do_not_give_refuses_the_file(rec, tmp_path):
    bad = _copy(rec)
    for h in range(2):
        walk, known, _ = _regret_decisions(bad, h)
        for k in known:
            v = bad["values"][h, k].astype(np.float32)
            spread = float(np.nanmax(v) - np.nanmin(v))
            if spread >= 1.0:
                break
        else:
            continue
        break
    else:
        pytest.skip("no known regret with a spread of at least a point")
    r = float(bad["regret"][h, k])
    forged = r + 0.5 if r + 0.5 <= spread else r - 0.5  # still within the spread
    bad["regret"][h, k] = forged
    stored = float(np.float16(forged))
    with pytest.raises(ValueError, match=rf"hand {h}, decision {k} \(seat {walk[k][0]}\): field "
                                         rf"'regret' is {stored:g} but the values give {r:g}"):
        load_labels(_save(tmp_path, bad))


def test_build_dataset_refuses_values_on_an_illegal_card(rec, tiny):
    from spades_env.agents.checkpoint import build_agent, load_checkpoint
    from spades_env.training.distill_targets import build_dataset
    bad = _copy(rec)
    k, seat, illegal = _valued_decision(bad, 0)
    bad["values"][0, k, illegal[0]] = 5.0
    net = build_agent(load_checkpoint(tiny), "cpu")
    with pytest.raises(ValueError, match=rf"labels: hand 0, decision {k}: field 'values' holds a "
                                         rf"value on card {card_str(illegal[0])} "):
        build_dataset(bad, net, temperature=3.0)
    assert len(build_dataset(rec, net, temperature=3.0)["obs"]) > 0  # the genuine one builds


def test_teacher_records_replay_names_the_file_hand_decision_and_card(tmp_path):
    from spades_env.training.teacher_records import load_records, replay, save_records
    shipped = load_records(os.path.join(ROOT, "checkpoints", "records", "hard_records.npz"))
    rec = {k: shipped[k][:2].copy() for k in ("seed", "scores", "bags", "moves")}
    seat, legal = _walk(rec, 1)[5]
    c = next(c for c in range(52) if c not in legal)
    rec["moves"][1, 5] = c
    p = str(tmp_path / "bad.npz")
    save_records(p, rec, "hard")
    back = load_records(p)
    with pytest.raises(ValueError) as e:
        replay(back, where=p)
    assert str(e.value) == (f"{p}: hand 1, decision 5 (seat {seat}): field 'moves': "
                            f"{card_str(c)} (action {c}) is illegal there (legal: "
                            f"{', '.join(card_str(x) for x in legal)})")
    assert replay(back, limit=1)["action"].shape == (56,)  # the hand before it replays


def _one_by_one(rec, where):
    """The check decision by decision, as ``check_legal`` did before it checked the values and
    regrets of all decisions at once: the oracle of the test below."""
    from spades_env.cards import BID_OFFSET, action_str
    from spades_env.training.labels import _check_regret

    def names(xs):
        return ", ".join(action_str(int(a)) for a in xs)

    values, valued = rec["values"], ~np.isnan(rec["values"])
    for h in range(len(rec["seed"])):
        g = SpadesGame(Rules(), seed=int(rec["seed"][h]))
        g.scores = [int(x) for x in rec["scores"][h]]
        g.bags = [int(x) for x in rec["bags"][h]]
        for k in range(56):
            p, legal = g.current_player, g.legal_actions()
            at = f"{where}: hand {h}, decision {k} (seat {p})"
            a = int(rec["moves"][h, k])
            if a not in legal:
                raise ValueError(f"{at}: field 'moves': {action_str(a)} (action {a}) is illegal "
                                 f"there (legal: {names(legal)})")
            if k < 4:
                bad = [BID_OFFSET + int(b) for b in np.flatnonzero(~np.isnan(
                    rec["bid_values"][h, k])) if BID_OFFSET + int(b) not in legal]
                if bad:
                    raise ValueError(f"{at}: field 'bid_values' holds a value on "
                                     f"{action_str(bad[0])}, which that seat cannot bid there "
                                     f"(legal: {names(legal)})")
            else:
                bad = [int(c) for c in np.flatnonzero(valued[h, k]) if int(c) not in legal]
                if bad:
                    raise ValueError(f"{at}: field 'values' holds a value on card "
                                     f"{action_str(bad[0])} (card {bad[0]}), which that seat "
                                     f"cannot play there (legal: {names(legal)})")
                if not np.isnan(rec["regret"][h, k]):
                    _check_regret(values[h, k], valued[h, k], float(rec["regret"][h, k]), a,
                                  TEAM[p] == int(rec["agent_team"][h]), at)
            g.apply(a)


def _error(check, rec):
    try:
        check(rec, "f")
    except ValueError as e:
        return str(e)
    return None


def test_the_checks_at_once_refuse_what_the_checks_one_by_one_refuse_with_the_same_words(rec):
    # 300 random corruptions, one to four each (a move, a card or bid value, a regret), some in
    # both hands: check_legal gives the first error the decision-by-decision check gives, or
    # none where it gives none
    from spades_env.training.labels import check_legal
    from spades_env.training.labels import NUM_BIDS
    rng = np.random.default_rng(7)
    assert _error(check_legal, rec) is None and _error(_one_by_one, rec) is None
    refused = 0
    for trial in range(300):
        bad = _copy(rec)
        for _ in range(int(rng.integers(1, 5))):
            h, k = int(rng.integers(2)), int(rng.integers(4, 56))
            kind = int(rng.integers(5))
            if kind == 0:
                bad["moves"][h, k] = int(rng.integers(52))
            elif kind == 1:
                bad["values"][h, k, int(rng.integers(52))] = float(rng.normal(0, 20))
            elif kind == 2:
                bad["regret"][h, k] = float(rng.normal(0, 5))
            elif kind == 3:
                known = np.flatnonzero(~np.isnan(bad["regret"][h]))
                if len(known):  # a small forgery of a known regret
                    j = int(rng.choice(known))
                    bad["regret"][h, j] = bad["regret"][h, j] + float(rng.choice([0.02, 0.3]))
            else:
                bad["bid_values"][h, int(rng.integers(4)), int(rng.integers(NUM_BIDS))] = 1.0
        want = _error(_one_by_one, bad)
        assert _error(check_legal, bad) == want, trial
        refused += want is not None
    assert refused > 200  # most corruptions are refused, so the words were compared
