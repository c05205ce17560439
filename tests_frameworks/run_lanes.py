"""Run the nox framework sessions in parallel lanes (``make test``'s framework part).

Usage::

    python tests_frameworks/run_lanes.py        # lanes "rllib,core,notorch,wheel", "sb3,tianshou,sdist"
    python tests_frameworks/run_lanes.py rllib sb3 tianshou # three lanes
    python tests_frameworks/run_lanes.py --nox-args=-R      # reuse the environments as they are

Each lane is one ``nox -s SESSION[ SESSION...]`` process (its sessions one after another); the
lanes run at the same time. Each session trains on one thread (the examples call
``torch.set_num_threads(1)``), and the rllib session waits on Ray much of the time, so two lanes
on a 2-core machine take about as long as the longer lane rather than the sum. A lane's output
goes to ``.nox/logs/LANE.log`` and is printed whole when the lane ends (no interleaving), with
its wall time and CPU time (user + system, of the lane's processes that were waited for: the
Ray worker processes the tests start are among them). ``TORCH_SPEC`` in the environment reaches
the sessions (``noxfile.py``).

Exit status: 0 when every lane passed, 1 otherwise (the failing lanes are named last).
"""

from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_LANES = ("rllib,core,notorch,wheel", "sb3,tianshou,sdist")


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("lanes", nargs="*", default=list(DEFAULT_LANES),
                   help="one lane per argument: nox sessions separated by commas "
                        f"(default: {' '.join(DEFAULT_LANES)})")
    p.add_argument("--nox-args", default="", help="more nox arguments for every lane, e.g. -R")
    p.add_argument("--log-dir", default=str(ROOT / ".nox" / "logs"))
    args = p.parse_args(argv)
    for lane in args.lanes:
        names = lane.split(",")
        if not all(n.strip() and n.strip().isidentifier() for n in names):
            p.error(f"lane {lane!r}: give nox session names separated by commas, e.g. sb3,tianshou")
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    nox = Path(sys.executable).with_name("nox")
    if not nox.exists():
        print(f"error: {nox} not found (pip install nox, or make venv)", file=sys.stderr)
        return 2
    log_dir = Path(args.log_dir)
    log_dir.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    running = {}
    t0 = time.perf_counter()
    for lane in args.lanes:
        sessions = [s.strip() for s in lane.split(",")]
        name = "+".join(sessions)
        log_path = log_dir / f"{name}.log"
        log = open(log_path, "w")
        cmd = [str(nox), "-s", *sessions, *shlex.split(args.nox_args)]
        print(f"lane {name}: {' '.join(cmd)} (output: {log_path})", flush=True)
        proc = subprocess.Popen(cmd, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, env=env)
        running[name] = (proc, log, log_path)
    failed = []
    try:
        while running:
            for name, (proc, log, log_path) in list(running.items()):
                pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
                if pid == 0:
                    continue
                proc.returncode = rc = os.waitstatus_to_exitcode(status)
                log.close()
                del running[name]
                wall = time.perf_counter() - t0
                sys.stdout.write(f"\n===== lane {name} =====\n{log_path.read_text()}")
                print(f"===== lane {name}: {'passed' if rc == 0 else 'FAILED'} (exit {rc}) "
                      f"after {wall:.0f} s wall, {usage.ru_utime + usage.ru_stime:.0f} s CPU "
                      f"=====", flush=True)
                if rc != 0:
                    failed.append(name)
            time.sleep(1)
    except KeyboardInterrupt:
        for proc, _, _ in running.values():
            proc.terminate()
        for proc, _, _ in running.values():
            proc.wait()
        raise
    print(f"framework lanes: {len(args.lanes) - len(failed)} of {len(args.lanes)} passed in "
          f"{time.perf_counter() - t0:.0f} s"
          + (f"; failed: {', '.join(failed)}" if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
