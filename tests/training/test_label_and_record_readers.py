"""The checked readers of the data files: teacher records and labels (``.npz``), game records
(``.json``, ``.jsonl``) and their JSON. An archive's members, sizes and fields are checked from its
directory and headers before any data is inflated, the values are checked against the rules,
special files are refused without blocking, and every refusal is a ``ValueError`` naming the
file."""

import io
import json
import os
import time
import zipfile

import numpy as np
import pytest

from spades_env import SpadesGame
import spades_env.readers as readers
import spades_env.records as records
from tests.helpers import ROOT
from tests.training._records import _teacher_fields


def _zip(path, members: dict):
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in members.items():
            z.writestr(name, data)


def _npy(a) -> bytes:
    b = io.BytesIO()
    np.save(b, a)
    return b.getvalue()


def test_npz_with_an_unknown_member_is_refused_before_it_is_inflated(tmp_path):
    p = tmp_path / "bomb.npz"
    with zipfile.ZipFile(p, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as z:
        for k, v in _teacher_fields().items():
            z.writestr(k + ".npy", _npy(v))
        with z.open("junk.npy", "w", force_zip64=True) as f:
            h = io.BytesIO()
            np.lib.format.write_array_header_1_0(
                h, {"descr": "|u1", "fortran_order": False, "shape": (64 << 20,)})
            f.write(h.getvalue())
            for _ in range(4):
                f.write(bytes(16 << 20))
    assert os.path.getsize(p) < 1 << 20
    t = time.time()
    with pytest.raises(ValueError, match=f"{p}: not a teacher-records file: unknown field 'junk'"):
        records.load_hand_records(str(p))
    assert time.time() - t < 1.0


def test_npz_sizes_are_bounded_from_the_directory(tmp_path):
    p = tmp_path / "big.npz"
    np.savez(p, **_teacher_fields(n=1000))
    with pytest.raises(ValueError, match="declare .* bytes uncompressed; a x holds at most 1000"):
        readers.read_npz(str(p), "x", lambda h: ({}, {}), max_bytes=1000)
    # a header that declares more data than the member holds
    good = _npy(np.zeros(10, np.int64))
    forged = good.replace(b"(10,)", b"(99,)")
    _zip(tmp_path / "forged.npz", {"seed.npy": forged})
    with pytest.raises(ValueError, match="field 'seed' declares 792 bytes of data, the member "
                                         "holds 80"):
        readers.read_npz(str(tmp_path / "forged.npz"), "x",
                     lambda h: ({}, {"seed": ((99,), np.int64)}))
    # object arrays are never unpickled
    h = io.BytesIO()
    np.lib.format.write_array_header_1_0(h, {"descr": "|O", "fortran_order": False,
                                             "shape": (2,)})
    _zip(tmp_path / "obj.npz", {"seed.npy": h.getvalue() + bytes(16)})
    with pytest.raises(ValueError, match="field 'seed' holds Python objects"):
        readers.read_npz(str(tmp_path / "obj.npz"), "x", lambda h: ({}, {}))
    # too many members: refused from the directory
    _zip(tmp_path / "many.npz", {f"f{i}.npy": b"" for i in range(readers.MAX_NPZ_MEMBERS + 1)})
    with pytest.raises(ValueError, match=f"{readers.MAX_NPZ_MEMBERS + 1} members; at most"):
        readers.read_npz(str(tmp_path / "many.npz"), "x", lambda h: ({}, {}))
    # members that are not .npy, or named twice
    _zip(tmp_path / "odd.npz", {"notes.txt": b"hi"})
    with pytest.raises(ValueError, match="unexpected member 'notes.txt'"):
        readers.read_npz(str(tmp_path / "odd.npz"), "x", lambda h: ({}, {}))


def test_an_npz_with_a_huge_directory_is_refused_before_zipfile_reads_it(tmp_path, monkeypatch):
    # regression: the member count was checked after zipfile had parsed the whole central
    # directory (a million empty members: 10 s); now the end-of-directory record is read first,
    # also its zip64 form (more than 65,535 members)
    import zipfile
    for n in (readers.MAX_NPZ_MEMBERS + 1, 70_000):
        path = tmp_path / f"many{n}.npz"
        with zipfile.ZipFile(path, "w") as z:
            for i in range(n):
                z.writestr(f"f{i}.npy", b"")

        def parsed(*a, **k):
            raise AssertionError("zipfile parsed the directory")
        with monkeypatch.context() as m:
            m.setattr(zipfile, "ZipFile", parsed)
            with pytest.raises(ValueError, match=f"{n} members; at most {readers.MAX_NPZ_MEMBERS}") \
                    as e:
                readers.read_npz(str(path), "x", lambda h: ({}, {}))
        assert str(path) in str(e.value)


def test_the_npz_fields_are_checked_before_the_data_is_read(tmp_path):
    """A 'values' array declared for more hands than 'seed' says is refused from its header."""
    from spades_env.training.labels import load_labels
    n = 2
    fields = {"format": np.array("spades_env.pimc_labels"), "version": np.array(1),
              "seed": np.arange(n, dtype=np.int64), "scores": np.zeros((n, 2), np.int16),
              "bags": np.zeros((n, 2), np.int8), "moves": np.zeros((n, 56), np.uint8),
              "agent_team": np.zeros(n, np.int8),
              "values": np.full((n + 1, 56, 52), np.nan, np.float16)}
    np.savez(tmp_path / "l.npz", **fields)
    with pytest.raises(ValueError, match=r"l.npz: field 'values' missing or not float16\[2, 56, "
                                         r"52\]"):
        load_labels(str(tmp_path / "l.npz"))
    fields["values"] = np.full((n, 56, 52), np.nan, np.float16)
    fields["seed"] = np.arange(200_001, dtype=np.int64)
    np.savez(tmp_path / "m.npz", **fields)
    with pytest.raises(ValueError, match="field 'seed' declares 200001 records; at most 100000"):
        load_labels(str(tmp_path / "m.npz"))


@pytest.mark.parametrize("case,match", [
    ("no_teacher", "field 'teacher' missing"),
    ("no_rules", "field 'rules' missing"),
    ("version_pair", r"field 'version' must be a single value \(an integer\)"),
    ("version_text", r"field 'version' must be a single value \(an integer\)"),
    ("no_moves", r"field 'moves' missing or not uint8\[2, 56\]"),
    ("bad_move", "field 'moves' holds an action id >= 68"),
    ("negative_bags", "field 'bags' holds a negative bag count"),
    ("blind_nil_rules", "field 'rules': 'house' exchanges cards after the bids"),
    ("unknown_rules", "field 'rules': unknown rules preset 'bogus'"),
])
def test_teacher_records_missing_or_odd_fields_are_value_errors_naming_the_file(tmp_path, case,
                                                                                match):
    over = {"no_teacher": {"teacher": None}, "no_rules": {"rules": None},
            "version_pair": {"version": np.array([1, 1])},
            "version_text": {"version": np.array("one")}, "no_moves": {"moves": None},
            "bad_move": {"moves": np.full((2, 56), 99, np.uint8)},
            "negative_bags": {"bags": np.full((2, 2), -1, np.int8)},
            "blind_nil_rules": {"rules": np.array("house")},
            "unknown_rules": {"rules": np.array("bogus")}}[case]
    p = tmp_path / f"{case}.npz"
    np.savez(p, **_teacher_fields(**over))
    with pytest.raises(ValueError, match=f"^{p}: {match}"):
        records.load_hand_records(str(p))


@pytest.mark.parametrize("field, value, message", [
    ("bags", np.full((2, 2), 50, np.int8), r"field 'bags' holds a bag count of 50; the rules' "
                                          r"bag_limit is 10"),
    ("bags", np.full((2, 2), 10, np.int8), r"field 'bags' holds a bag count of 10"),
    ("seed", np.array([3, -1], np.int64), r"field 'seed' holds a negative seed \(-1\)")])
def test_teacher_records_and_labels_refuse_bags_at_the_limit_and_negative_seeds(
        tmp_path, field, value, message):
    p = tmp_path / "r.npz"
    np.savez(p, **_teacher_fields(**{field: value}))
    with pytest.raises(ValueError, match=r"r\.npz: " + message):
        records.load_hand_records(str(p))
    d = {k: v for k, v in _teacher_fields(**{field: value}).items()
         if k in ("seed", "bags", "moves")}
    with pytest.raises(ValueError, match=r"labels\.npz: " + message):  # the label files' check
        records.check_hand_values(d, "labels.npz")


def test_the_shipped_records_still_load():
    r = records.load_hand_records(os.path.join(ROOT, "checkpoints", "records",
                                               "hard_records.npz"))
    assert r["teacher"] == "hard" and r["moves"].shape == (len(r["seed"]), 56)


def test_special_files_are_refused_without_blocking(tmp_path):
    from spades_env.training.config import load_yaml
    from spades_env.training.labels import load_labels
    fifo = tmp_path / "pipe.npz"
    os.mkfifo(fifo)
    t = time.time()
    for fn in (records.load_hand_records, load_labels, load_yaml,
               records.read_game_record_file, readers.read_regular):
        with pytest.raises(ValueError, match=f"{fifo}: not a regular file \\(a FIFO\\)"):
            fn(str(fifo))
    with pytest.raises(ValueError, match=r"not a regular file \(a folder\)"):
        records.load_hand_records(str(tmp_path))
    with pytest.raises(ValueError, match="no such"):
        records.load_hand_records(str(tmp_path / "missing.npz"))
    assert time.time() - t < 5


def test_a_deeply_nested_jsonl_line_is_a_value_error(tmp_path):
    p = tmp_path / "deep.jsonl"
    good = json.dumps({"format": "x"})
    p.write_text(good + "\n" + "[" * 200_000 + "]" * 200_000 + "\n")
    with pytest.raises(ValueError, match=f"{p}: line 2: invalid JSON \\(nested too deeply\\)"):
        records.read_game_record_file(str(p))
    pytest.importorskip("fastapi")
    from spades_env.play.replay import load_record_file
    # the replay view keeps such a line as one refused game: none loads here, so the file is
    # refused with its first game's reason; beside a game that loads, the file opens
    with pytest.raises(ValueError, match=f"{p}: line 1: not a spades_env game record"):
        load_record_file(str(p))
    p.write_text(SpadesGame(seed=0).to_json() + "\n" + "[" * 200_000 + "]" * 200_000 + "\n")
    src = load_record_file(str(p))
    assert src.count == 2 and list(src.refused) == [1]
    assert "line 2: invalid JSON (nested too deeply)" in src.refused[1]


def test_parse_json_names_the_file_and_line_of_a_number_too_long():
    with pytest.raises(ValueError, match=r"^games\.jsonl: line 1: invalid JSON \(Exceeds the "
                                         r"limit \(4300 digits\)"):
        readers.parse_json('{"version": ' + "1" * 5000 + "}", "games.jsonl: line 1")


def test_a_game_record_is_written_atomically_and_read_back(tmp_path):
    g = SpadesGame(seed=1)
    records.write_game_record(str(tmp_path / "a.json"), g, ["A", "B", "C", "D"])
    [(d, where)] = records.read_game_record_file(str(tmp_path / "a.json"))
    assert d["players"] == ["A", "B", "C", "D"] and SpadesGame.from_dict(d["game"]).hands == g.hands
    (tmp_path / "b.json").mkdir()
    with pytest.raises(OSError, match=f"could not write {tmp_path / 'b.json'}: Is a directory"):
        records.write_game_record(str(tmp_path / "b.json"), g)
    assert sorted(os.listdir(tmp_path)) == ["a.json", "b.json"]
