"""``benchmarks/bench_expert.py`` never serves a shard cached under an older ``expert`` default.

Regression: ``expert``'s default ``bid_prior`` changed from 0 to 1 in 0.8.0 while the result
caches keyed the default bot by its given options alone (``{}``), so ``--variant expert`` would
have read the 0.7.0 bot's shards as the new bot's.
"""

from __future__ import annotations

import importlib.util
import inspect
import json
import os

import pytest

pytest.importorskip("torch")

from spades_env.bots.expert import ExpertBot  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _bench(monkeypatch):
    monkeypatch.syspath_prepend(os.path.join(ROOT, "benchmarks"))  # as when run as a script
    path = os.path.join(ROOT, "benchmarks", "bench_expert.py")
    spec = importlib.util.spec_from_file_location("bench_expert_under_test", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_cache_keys_write_out_the_changed_defaults(monkeypatch):
    bench = _bench(monkeypatch)
    default = inspect.signature(ExpertBot).parameters["bid_prior"].default
    assert bench.KEY_DEFAULTS == {"bid_prior": default} == {"bid_prior": 1.0}
    assert bench.cache_options("expert", {}) == {"bid_prior": 1.0}
    assert bench.cache_options("expert", {"bid_prior": 1}) == {"bid_prior": 1.0}
    assert bench.cache_options("expert", {"temper": 0.5, "bid_prior": 0}) == \
        {"temper": 0.5, "bid_prior": 0.0}
    assert bench.cache_options("insane", {}) == {}
    # parse_variant's options go through unchanged otherwise
    assert bench.parse_variant("t05:temper=0.5,bid_prior=0") == \
        ("t05", "expert", {"temper": 0.5, "bid_prior": 0})


@pytest.mark.parametrize("name", ["expert_vs_insane", "expert_vs_hard", "expert_vs_network",
                                  "expert_leaf", "expert_temper", "expert_ablations"])
def test_stored_shards_of_the_old_default_say_so(name):
    """Every cached ``expert`` shard names its ``bid_prior``; the 0.7.0 runs' say 0. The caches
    are out of git (benchmarks/results/README.md): their keys are kept in
    ``shard_keys_expert.json``, and a cache present here must have exactly those keys."""
    with open(os.path.join(ROOT, "benchmarks", "results", "shard_keys_expert.json")) as f:
        raw = json.load(f)[name]
    cache = os.path.join(ROOT, "benchmarks", "results", name + ".json")
    if os.path.exists(cache):
        with open(cache) as f:
            assert sorted(json.load(f)) == raw
    keys = [json.loads(k) for k in raw]
    experts = [k for k in keys if k[0] == "expert"]
    assert experts and all(k[1].get("bid_prior") == 0.0 for k in experts)
