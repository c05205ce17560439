"""The label folders of search distillation (``spades_env.training.distill``): one labelling run
holds a folder, a chunk of another network's run is refused, the ``--labels`` and
``--also-labels`` folders are checked before any labelling, and no folder or chunk is read
twice."""

import os
import subprocess
import time

import pytest
import torch

from spades_env.agents.model import Agent
from spades_env.training.checkpoint import save_checkpoint
from tests.helpers import IS_ROOT, _run


def test_a_label_folder_is_held_by_one_labelling_run(tmp_path):
    from spades_env.training.labelling import lock_labels
    lock = lock_labels(str(tmp_path / "labels"))
    try:
        with pytest.raises(ValueError, match="is in use by another labelling run"):
            lock_labels(str(tmp_path / "labels"))
    finally:
        lock.release()
    lock_labels(str(tmp_path / "labels")).release()


def test_distill_uses_only_chunks_of_its_own_network(tiny, tmp_path, monkeypatch):
    """A chunk written into the label folder by a run of another network (the race of two runs
    on one folder) is refused when the labels are read, not trained on."""
    import spades_env.training.distill as D
    from spades_env.training.labelling import label_chunk
    from spades_env.training.labels import file_sha256, save_labels
    other = tmp_path / "other.pt"
    torch.manual_seed(1)
    save_checkpoint(str(other), {"config": {"name": "o"},
                                 "model": Agent(hidden=[32], head_hidden=16).state_dict(),
                                 "model_shape": {"hidden": [32], "head_hidden": 16},
                                 "progress": {"iteration": 0}, "eval": []})
    folder = tmp_path / "labels"
    rec = label_chunk(str(other), 1, seed=1, chunk=0, samples=2)
    save_labels(str(folder / "chunk_00000.npz"), rec, str(other), 2, 1, 0,
                file_sha256(str(other)))
    monkeypatch.setattr(D, "produce_labels", lambda *a, **k: [str(folder / "chunk_00000.npz")])
    with pytest.raises(ValueError, match=r"belongs to another labelling run: checkpoint \(SHA"):
        D.distill_checkpoint(tiny, str(tmp_path / "out.pt"), labels=str(folder), chunks=1,
                             chunk_hands=1, samples=2, seed=1, bid_deals=0, epochs=1, log=None)
    assert not os.path.exists(tmp_path / "out.pt")


def test_distill_checks_its_label_folder_before_any_labelling(tiny, tmp_path, monkeypatch):
    import spades_env.training.distill as D
    monkeypatch.setattr(D, "produce_labels", lambda *a, **k: pytest.fail("labelled first"))
    os.symlink(tmp_path, tmp_path / "labels")
    with pytest.raises(ValueError, match="label folder: .*symbolic link"):
        D.distill_checkpoint(tiny, str(tmp_path / "out.pt"), labels=str(tmp_path / "labels"),
                             log=None)


def test_distill_reads_also_labels_before_any_labelling(tiny, tmp_path, monkeypatch):
    import spades_env.training.distill as D
    monkeypatch.setattr(D, "produce_labels", lambda *a, **k: pytest.fail("labelled first"))
    earlier = tmp_path / "round [1]"         # a glob-like name is a plain name
    earlier.mkdir()
    os.mkfifo(earlier / "chunk_00000.npz")
    with pytest.raises(ValueError, match=r"chunk_00000.npz: not a regular file \(a FIFO\)"):
        D.distill_checkpoint(tiny, str(tmp_path / "out.pt"), also_labels=[str(earlier)],
                             log=None)


@pytest.mark.slow
@pytest.mark.skipif(not IS_ROOT, reason="chattr +i needs root")
def test_distill_refuses_an_unwritable_label_folder_at_once(tiny, tmp_path):
    labels = tmp_path / "labels"
    labels.mkdir()
    if subprocess.run(["chattr", "+i", str(labels)], capture_output=True).returncode != 0:
        pytest.skip("chattr +i not supported here")
    try:
        t = time.time()
        r = _run("-m", "spades_env.training.distill", tiny, "--out", str(tmp_path / "o.pt"),
                 "--labels", str(labels), "--chunks", "1", "--chunk-hands", "5", "--workers", "1")
        took = time.time() - t
    finally:
        subprocess.run(["chattr", "-i", str(labels)])
    assert r.returncode == 2
    assert f"label folder {labels}" in r.stderr and "chunk_00000" not in r.stderr
    assert took < 60


def test_distill_refuses_an_also_labels_folder_given_twice_or_its_own(tmp_path, tiny):
    from spades_env.training.distill import distill_checkpoint
    l1, own = tmp_path / "l1", tmp_path / "own"
    for f in (l1, own):
        f.mkdir()
        (f / "chunk_00000.npz").write_bytes(b"not read: refused before")
    os.symlink(l1, tmp_path / "alias")
    out = str(tmp_path / "out.pt")
    kw = dict(labels=str(own), minutes=0.1, chunks=1, chunk_hands=2, samples=2, workers=1)
    for twice, message in (
            ([str(l1), str(tmp_path / "alias")], r"alias' is the folder already given as "
                                                 r"--also-labels '.*l1'"),
            ([str(l1), f"{l1}/../l1"], r"l1/\.\./l1' is the folder already given"),
            ([str(own)], r"--labels .*own: it is the input .*own read by --also-labels "
                         r"\(the same folder\)")):
        with pytest.raises(ValueError, match=message):
            distill_checkpoint(tiny, out, also_labels=twice, **kw)
    (tmp_path / "l2").mkdir()  # a chunk by another name (a folder apart from --out)
    os.link(l1 / "chunk_00000.npz", tmp_path / "l2" / "chunk_00000.npz")
    with pytest.raises(ValueError, match=r"chunk_00000\.npz' is already read as '.*l1/chunk_"):
        distill_checkpoint(tiny, out, also_labels=[str(l1), str(tmp_path / "l2")], **kw)
    with pytest.raises(ValueError, match=r"--out .*out\.pt: it lies inside the folder of the "
                                         r"input .* read by --also-labels"):
        distill_checkpoint(tiny, out, also_labels=[str(l1), str(tmp_path)], **kw)


def test_an_interrupt_says_how_many_label_chunks_it_kept(tmp_path, monkeypatch, capsys):
    from spades_env.training import distill as D

    def interrupted(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(D, "distill_checkpoint", interrupted)
    out = tmp_path / "r.pt"
    assert D.main(["x.pt", "--out", str(out)]) == 130
    assert capsys.readouterr().err == "interrupted: no label chunk was written yet\n"
    folder = tmp_path / "r_labels"
    folder.mkdir()
    (folder / "chunk_00000.npz").write_bytes(b"")
    assert D.main(["x.pt", "--out", str(out)]) == 130
    assert capsys.readouterr().err == (f"interrupted: 1 label chunks kept in {folder}; run the "
                                       f"same command again to resume\n")
