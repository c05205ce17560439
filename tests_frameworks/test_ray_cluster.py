"""Ray beyond one machine, tested on a local cluster the test starts (a head and a worker node on
a loopback address): the arena's duplicate pairs as Ray tasks give the one-process result, the
RLlib example trains with env runners on the cluster, and a node without the package gives a
clear error naming it."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time

import pytest
from conftest import ROOT, run_example
from ray_local import LocalRayCluster

from spades_env.arena import play_match


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with LocalRayCluster(workers=1, cpus_per_node=1,
                         log_dir=str(tmp_path_factory.mktemp("ray"))) as address:
        yield address


def test_arena_on_ray_equals_one_process(cluster, tmp_path):
    out, recs = tmp_path / "ray.json", tmp_path / "ray.jsonl"
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "spades_env", "arena", "--team0", "medium",
                           "--team1", "easy", "--hands", "40", "--seed", "5", "--ray", cluster,
                           "--quiet", "--out", str(out), "--records", str(recs)],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    ray_s = time.perf_counter() - t0
    assert proc.returncode == 0, proc.stderr[-3000:]
    on_ray = json.loads(out.read_text())
    t0 = time.perf_counter()
    local_result = play_match("medium", "easy", hands=40, seed=5, keep_records=True)
    local = local_result.to_dict()
    print(f"arena 40 duplicate hands: Ray cluster (2 nodes x 1 CPU) {ray_s:.1f} s incl. start-up,"
          f" one process {time.perf_counter() - t0:.1f} s")
    assert on_ray["pair_diffs"] == local["pair_diffs"]
    assert on_ray["pair_seeds"] == local["pair_seeds"]
    for a, b in zip(on_ray["sides"], local["sides"]):
        for k in ("hands", "points", "contracts_set", "nil_bids", "nil_made", "bags"):
            assert a[k] == b[k], k
    # --records: the games played on the nodes, in pair order, are the one-process games
    assert [json.loads(line) for line in recs.read_text().splitlines()] == local_result.records


def test_arena_ray_needs_named_bots_and_a_reachable_cluster():
    with pytest.raises(ValueError, match="make_bot name"):
        play_match(lambda seed: None, "easy", hands=4, ray_address="127.0.0.2:1")
    proc = subprocess.run([sys.executable, "-m", "spades_env", "arena", "--team0", "easy",
                           "--team1", "easy", "--hands", "4", "--ray", "127.0.0.2:1",
                           "--quiet"], cwd=ROOT, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 2 and "127.0.0.2:1" in proc.stderr


_CHECK = """
import json, sys, ray
from spades_env.ray_cluster import check_cluster, runtime_env
ray.init(address=sys.argv[1], runtime_env=runtime_env(), log_to_driver=False)
nodes = check_cluster()
try:
    check_cluster(("spades_env", "no_such_module_xyz"))
    err = None
except RuntimeError as e:
    err = str(e)
print(json.dumps({"nodes": nodes, "error": err}))
"""


def test_check_cluster_names_the_node_missing_a_module(cluster):
    # in a fresh process: Ray reads the token-authentication settings once per process
    proc = subprocess.run([sys.executable, "-c", _CHECK, cluster], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert len(out["nodes"]) == 2 and all(n["spades_env"] for n in out["nodes"])
    assert re.search(r"node 127\.0\.0\.2 .* cannot import no_such_module_xyz .*runtime_env",
                     out["error"])
    # the package was shipped: the hint is about the missing dependency, not about shipping
    assert "was shipped" in out["error"] and "Ship the package" not in out["error"]
    assert "pip=True" in out["error"] and "virtualenv" in out["error"]


_SETUP_FAILS = """
import sys, ray
from spades_env.ray_cluster import check_cluster, runtime_env
env = {**runtime_env(), "pip": ["no-such-package-spades-env-test==0.0.1"]}
ray.init(address=sys.argv[1], runtime_env=env, log_to_driver=False)
try:
    check_cluster()
except RuntimeError as e:
    print("ERROR:", e)
"""


def test_a_runtime_env_ray_cannot_set_up_is_a_one_line_error(cluster):
    # what --ship-deps gives on nodes without virtualenv or PyPI: Ray's RuntimeEnvSetupError
    # (a long traceback) becomes one line saying what the nodes need
    proc = subprocess.run([sys.executable, "-c", _SETUP_FAILS, cluster], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    line = [ln for ln in proc.stdout.splitlines() if ln.startswith("ERROR:")]
    assert len(line) == 1 and "could not set up the runtime_env" in line[0]
    assert "virtualenv" in line[0] and "Traceback" not in line[0]


def test_rllib_example_on_the_cluster(cluster, tmp_path):
    # no --env-runners: with --address the sampling runs on the cluster (2 CPUs: 1 runner beside
    # the driver), not in the driver (the old default of 0 runners)
    r = run_example("rllib_ppo.py", "--address", cluster,
                    "--iterations", "2", "--train-batch", "400", "--eval-hands", "10",
                    "--init-hands", "0", tmp_path=tmp_path)
    assert r["env_runners"] == 1
    assert r["env_steps"] >= 800
    assert r["arena"]["pairs"] == 10 and r["vs_init"] is None


def _tiny_checkpoint(path):
    import torch

    from spades_env.agents.model import Agent
    from spades_env.training.checkpoint import save_checkpoint
    torch.manual_seed(0)
    agent = Agent(hidden=[32], head_hidden=16)
    save_checkpoint(str(path), {"config": {"name": "t"}, "model": agent.state_dict(),
                                "model_shape": {"hidden": [32], "head_hidden": 16},
                                "progress": {"iteration": 0}, "eval": []})
    return str(path)


def test_labels_on_ray_are_the_local_chunks_and_survive_a_killed_worker(cluster, tmp_path):
    # a labelling round by the growing teacher (expert on the round's own network, bids
    # labelled) sent to the cluster as tasks: the chunks the driver writes are, bit for bit, the
    # ones labelled in this process; a worker killed in the middle of a chunk costs that chunk
    # (run again), not the round
    import os
    import signal

    import numpy as np

    from spades_env.training.labelling import label_chunk
    from spades_env.training.labels import load_labels
    tiny = _tiny_checkpoint(tmp_path / "tiny.pt")
    out, labels = tmp_path / "r1.pt", tmp_path / "labels"
    args = [tiny, "--out", str(out), "--labels", str(labels), "--chunks", "4",
            "--chunk-hands", "2", "--samples", "3", "--teacher", "expert", "--bid-samples", "3",
            "--epochs", "1", "--bid-deals", "0", "--seed", "11"]
    proc = subprocess.Popen([sys.executable, "-m", "spades_env.training.distill", *args, "--ray", cluster],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)
    killed = None
    t0 = time.time()
    while proc.poll() is None and killed is None and time.time() - t0 < 300:
        found = subprocess.run(["pgrep", "-f", "ray::_ray_chunk"], capture_output=True,
                               text=True).stdout.split()
        if found:
            killed = int(found[0])
            time.sleep(1.0)  # inside the chunk
            os.kill(killed, signal.SIGKILL)
        time.sleep(0.2)
    text, _ = proc.communicate(timeout=600)
    assert proc.returncode == 0, text[-3000:]
    assert killed is not None, "no labelling task was seen running"
    lines = [ln for ln in text.splitlines() if ln.startswith("chunk_")]
    assert len(lines) == 4 and all("+ 8 bid labels" in ln for ln in lines), text[-3000:]
    for c in range(4):
        got = load_labels(str(labels / f"chunk_{c:05d}.npz"))
        want = label_chunk(tiny, 2, seed=11, chunk=c, samples=3, teacher="expert", bid_samples=3)
        for k in want:
            assert np.array_equal(got[k], want[k], equal_nan=True), (c, k)
        assert got["teacher"] == "expert" and got["bid_samples"] == 3
    from spades_env.training.checkpoint import load_checkpoint
    d = load_checkpoint(str(out))["distill"]
    assert d["ray"] and d["own_hands"] == 8 and d["teacher"] == "expert"


_EVAL = """
import json, sys
import torch
from spades_env.agents.model import Agent
from spades_env.training.evaluate import NetPlayer, duplicate_match
torch.manual_seed(0)
torch.set_num_threads(1)
net = NetPlayer(Agent(hidden=[32], head_hidden=16).eval())
here = duplicate_match(net, "easy", deals=6, seed=4, batch=2)
there = duplicate_match(net, "easy", deals=6, seed=4, batch=2, ray_address=sys.argv[1])
print(json.dumps({"here": here, "there": there}))
"""


def test_training_evaluation_on_ray_equals_the_local_one(cluster):
    # the trainer's duplicate-deal evaluation (run_eval) with ray_address: one task per block of
    # deals, the network's weights shipped; the same figures as in one process
    proc = subprocess.run([sys.executable, "-c", _EVAL, cluster], cwd=ROOT, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["here"] == out["there"]
    assert out["here"]["deals"] == 6 and out["here"]["opponent"] == "easy"
