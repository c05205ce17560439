"""Ray cluster helpers (``pip install -e '.[ray]'``): ship the package to the nodes, check it,
and play the arena's duplicate pairs as Ray tasks (``spades arena ... --ray ADDR``).

| name                | what                                                                  |
|---------------------|-----------------------------------------------------------------------|
| ``runtime_env``     | Ray ``runtime_env`` that ships ``spades_env`` and ``training`` (source folders, ``py_modules``) to every node; ``pip=True`` also installs the base dependencies there |
| ``check_cluster``   | imports the needed modules in a task on every alive node; a ``RuntimeError`` naming the node and the module where one is missing |
| ``map_on_ray`` | a function as one Ray task per call (the arena's pure pair runner ``arena.play_pair``: one task per duplicate pair); results in call order, so the match equals the one-process match |
"""

from __future__ import annotations

import os

__all__ = ["runtime_env", "check_cluster", "map_on_ray", "connect", "check_address"]


def _ray():
    try:
        import ray
    except ImportError:
        raise ValueError("Ray is not installed: pip install -e '.[ray]' (or '.[rllib]')") from None
    return ray


def runtime_env(pip: bool = False) -> dict:
    """Ray ``runtime_env`` shipping this package (``spades_env``, the trainer included, as a
    source folder: ``py_modules``) to every node. ``pip=True`` also pip-installs the base
    dependencies (``numpy``, ``gymnasium``, ``pettingzoo``, ``scipy``..., not torch) on the nodes,
    for nodes whose Python lacks them (they then need PyPI)."""
    import spades_env
    folders = [os.path.dirname(os.path.abspath(spades_env.__file__))]
    env: dict = {"py_modules": folders}
    if pip:
        from importlib.metadata import requires
        env["pip"] = [r for r in (requires("spades_env") or [])
                      if "extra ==" not in r and not r.startswith("torch")]
    return env


def check_address(address: str) -> None:
    """Before any work: Ray is installed, and a ``HOST:PORT`` address answers (``"auto"`` and
    ``ray://`` addresses are left to ``ray.init``).

    Raises:
        ValueError: Ray not installed, or the address cannot be reached (named).
    """
    _ray()
    host, sep, port = str(address).rpartition(":")
    if sep and host and port.isdigit() and "://" not in address:
        import socket
        try:  # fail fast (ray.init retries an unreachable address for a long time)
            socket.create_connection((host, int(port)), timeout=10).close()
        except OSError as e:
            raise ValueError(f"cannot connect to the Ray cluster at {address!r}: {e}") from None


def connect(address: str, ship: bool = True, pip: bool = False) -> bool:
    """``ray.init(address=address)`` with the package shipped (``runtime_env``) unless Ray is
    already initialised. Returns True when this call connected (the caller then shuts down).

    Raises:
        ValueError: Ray not installed, or the cluster cannot be reached (the message names the
            address).
    """
    ray = _ray()
    if ray.is_initialized():
        return False
    check_address(address)
    try:
        ray.init(address=address, runtime_env=runtime_env(pip) if ship else {},
                 log_to_driver=False)
    except (ConnectionError, RuntimeError) as e:
        auth = "" if os.environ.get("RAY_AUTH_MODE") else (
            " (a cluster with token authentication, the default of `ray start --head` since Ray "
            "2.60, also needs RAY_AUTH_MODE=token and the head's token as RAY_AUTH_TOKEN in this "
            "process's environment)")
        raise ValueError(f"cannot connect to the Ray cluster at {address!r}: {e}{auth}") \
            from None
    return True


def check_cluster(modules=("spades_env", "pettingzoo", "gymnasium", "scipy")) -> list[dict]:
    """Import ``modules`` in a task on every alive Ray node (the current job's ``runtime_env``
    applies). Returns one dict per node: ``node_id``, ``ip``, ``cpus``, ``spades_env`` version.

    Raises:
        RuntimeError: a node cannot import one of them (the message names the node and the
            module and says how to ship the package, or, when it was shipped, its
            dependencies); or Ray could not set up the ``runtime_env`` on a node (one line: a
            ``pip`` runtime_env needs ``virtualenv`` on the nodes).
    """
    ray = _ray()
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    @ray.remote(num_cpus=0)
    def probe(mods):
        import importlib
        missing = []
        for m in mods:
            try:
                importlib.import_module(m)
            except Exception as e:  # noqa: BLE001 (reported to the driver)
                missing.append(f"{m} ({type(e).__name__}: {e})")
        ver = None
        if not missing and "spades_env" in mods:
            ver = importlib.import_module("spades_env").__version__
        return ray.util.get_node_ip_address(), missing, ver

    nodes = [n for n in ray.nodes() if n.get("Alive")]
    refs = [probe.options(scheduling_strategy=NodeAffinitySchedulingStrategy(
        n["NodeID"], soft=False)).remote(tuple(modules)) for n in nodes]
    try:
        answers = ray.get(refs)
    except ray.exceptions.RuntimeEnvSetupError as e:
        lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
        reason = lines[-1][:300] if lines else type(e).__name__
        raise RuntimeError(
            f"Ray could not set up the runtime_env on the nodes ({reason}). With pip=True (the "
            f"example's --ship-deps) every node builds a virtual environment: it needs the "
            f"virtualenv package (pip install virtualenv on each node) and PyPI; or install "
            f"spades_env's dependencies on the nodes and do without pip=True.") from None
    shipped = _shipped(ray)
    out, bad = [], []
    for n, (ip, missing, ver) in zip(nodes, answers):
        out.append({"node_id": n["NodeID"], "ip": ip, "spades_env": ver,
                    "cpus": n.get("Resources", {}).get("CPU", 0)})
        if missing:
            bad.append(f"node {ip} ({n['NodeID'][:8]}) cannot import {', '.join(missing)}")
    if bad and shipped:
        raise RuntimeError(
            "the Ray cluster cannot run spades_env: " + "; ".join(bad) + ". The package was "
            "shipped (runtime_env py_modules), so the node lacks a dependency: install the "
            "dependencies on every node, or ship them too with runtime_env(pip=True) (the "
            "example's --ship-deps; the nodes need the virtualenv package and PyPI).")
    if bad:
        raise RuntimeError(
            "the Ray cluster cannot run spades_env: " + "; ".join(bad) + ". Ship the package "
            "with ray.init(address=..., runtime_env=spades_env.ray_cluster.runtime_env()) (what "
            "the arena's --ray and examples/rllib_ppo.py --address do; pip=True also installs its "
            "dependencies), or install spades_env and its dependencies on every node.")
    return out


def _shipped(ray) -> bool:
    """Whether this job's ``runtime_env`` ships Python modules (``py_modules``)."""
    try:
        env = ray.get_runtime_context().runtime_env or {}
        return bool(env.get("py_modules"))
    except Exception:  # noqa: BLE001 (an older Ray without it: say what helps in general)
        return False


def map_on_ray(address: str, fn, calls, on_result=None, check=("spades_env", "scipy")) -> list:
    """Run ``fn(*args)`` for every ``args`` of ``calls`` as Ray tasks (one CPU each) on the
    cluster at ``address``; returns the results in the order of ``calls`` (so a match equals the
    one-process match). The arena runs its duplicate pairs through this (``arena.play_pair``).

    Args:
        fn: a module-level function (Ray ships it by reference to the package on the nodes).
        calls: a list of argument tuples.
        on_result: called with each result as it arrives (a progress bar's update).
        check: modules every node must import (``check_cluster``).
    Raises:
        ValueError: Ray missing or the cluster unreachable.
        RuntimeError: a node cannot import the package (``check_cluster``).
    """
    ray = _ray()
    started = connect(address)
    try:
        check_cluster(check)
        task = ray.remote(num_cpus=1, max_retries=0)(fn)
        refs = [task.remote(*args) for args in calls]
        index = {r: i for i, r in enumerate(refs)}
        results: list = [None] * len(refs)
        pending = list(refs)
        try:
            while pending:
                done, pending = ray.wait(pending, num_returns=1)
                for r in done:
                    results[index[r]] = ray.get(r)
                    if on_result is not None:
                        on_result(results[index[r]])
        except BaseException:
            for r in pending:
                ray.cancel(r, force=True)
            raise
        return results
    finally:
        if started:
            ray.shutdown()
