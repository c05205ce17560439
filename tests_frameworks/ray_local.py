"""A local Ray cluster for tests and benchmarks: a head node on a loopback address plus worker nodes,
each a ``ray start --block`` process in its own session (stopped by signalling only those)."""

from __future__ import annotations

import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LocalRayCluster:
    """``with LocalRayCluster(workers=1) as address: ...``: head + ``workers`` worker nodes,
    ``cpus_per_node`` CPUs each, all on the loopback address ``ip``; ``address`` is
    ``"IP:PORT"``."""

    def __init__(self, workers: int = 1, cpus_per_node: int = 1, log_dir: str | None = None,
                 ip: str = "127.0.0.2"):
        self.workers = workers
        self.cpus = cpus_per_node
        self.port = free_port()
        # Ray replaces exactly "127.0.0.1" by the machine's network address; another loopback
        # address (127.0.0.2) is kept, so every connection stays on the loopback interface.
        self.ip = ip
        self.address = f"{ip}:{self.port}"
        self.procs: list[subprocess.Popen] = []
        self.log_dir = Path(log_dir or "/tmp")
        self.ray = str(Path(sys.executable).parent / "ray")
        # token authentication (Ray's default for `ray start --head`) with a fresh token, given
        # to every node and driver through the environment (this process's and its children's).
        self.env = {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": secrets.token_hex(32),
                    "RAY_USAGE_STATS_ENABLED": "0"}
        self._saved_env: dict = {}

    def _start(self, args, name):
        log = open(self.log_dir / f"ray-{name}-{self.port}.log", "w")
        env = {**os.environ, **self.env}
        p = subprocess.Popen([self.ray, "start", *args, f"--node-ip-address={self.ip}",
                              f"--num-cpus={self.cpus}", "--object-store-memory=100000000",
                              "--block"], stdout=log, stderr=subprocess.STDOUT, env=env,
                             start_new_session=True)
        self.procs.append(p)
        return p

    def _wait_nodes(self, n: int, timeout: float = 120) -> None:
        code = ("import ray; ray.init(address=%r, log_to_driver=False); "
                "print(sum(1 for x in ray.nodes() if x['Alive']))" % self.address)
        t0 = time.time()
        while time.time() - t0 < timeout:
            r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
            if r.returncode == 0 and r.stdout.strip().splitlines()[-1:] == [str(n)]:
                return
            time.sleep(2)
        raise RuntimeError(f"the local Ray cluster did not reach {n} nodes in {timeout} s")

    def __enter__(self) -> str:
        self._saved_env = {k: os.environ.get(k) for k in self.env}
        os.environ.update(self.env)
        try:
            self._start(["--head", f"--port={self.port}", "--include-dashboard=false",
                         "--disable-usage-stats"], "head")
            time.sleep(3)
            for k in range(self.workers):
                self._start([f"--address={self.address}"], f"worker{k}")
            self._wait_nodes(1 + self.workers)
        except BaseException:
            self.stop()
            raise
        return self.address

    def stop(self) -> None:
        for p in reversed(self.procs):  # workers first, then the head
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGTERM)
        for p in self.procs:  # gcs_server and raylet share their `ray start` process group;
            try:                # the Ray workers exit with their raylet
                p.wait(timeout=10)  # skip most of Ray's 30 s drain: the work is done
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
        self.procs = []
        # `ray start --head` records its address for later `ray.init()` calls; drop the record
        # of this (now stopped) cluster, as `ray stop` does
        record = Path("/tmp/ray/ray_current_cluster")
        try:
            if record.read_text().strip() == self.address:
                record.unlink()
        except OSError:
            pass
        for k, v in self._saved_env.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        self._saved_env = {}

    def __exit__(self, *exc) -> None:
        self.stop()
