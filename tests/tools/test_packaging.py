"""What can be checked here of the packaging that runs elsewhere: the cibuildwheel settings and
the wheels workflow (GitHub's runners: Linux, macOS, Windows) agree with the build (``setup.py``:
a cp310 limited-API extension) and name tests that exist. The Linux wheel and the sdist
themselves are built and tested by the nox sessions ``wheel`` and ``sdist``."""

import ast
import os
import re
import shlex

import pytest
import yaml

tomllib = pytest.importorskip("tomllib", reason="tomllib: Python >= 3.11")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _read(*parts) -> str:
    with open(os.path.join(ROOT, *parts), encoding="utf-8") as f:
        return f.read()


def test_one_abi3_wheel_per_platform_from_cpython_3_10():
    project = tomllib.loads(_read("pyproject.toml"))
    assert project["project"]["requires-python"] == ">=3.10"
    assert project["tool"]["cibuildwheel"]["build"] == "cp310-*"
    setup = _read("setup.py")
    assert '"py_limited_api": "cp310"' in setup and '("Py_LIMITED_API", "0x030A0000")' in setup
    assert "py_limited_api=True" in setup


def test_the_cibuildwheel_test_command_runs_existing_tests():
    cfg = tomllib.loads(_read("pyproject.toml"))["tool"]["cibuildwheel"]
    args = shlex.split(cfg["test-command"])
    path = args[-1].replace("{project}", ROOT)
    assert os.path.isfile(path)
    tests = [n.name for n in ast.parse(_read(path)).body
             if isinstance(n, ast.FunctionDef) and n.name.startswith("test_")]
    expr = args[args.index("-k") + 1]
    left_out = re.findall(r"not (\w+)", expr)
    assert left_out == ["without_a_compiler", "home", "checkout_install"]
    for word in left_out:  # each leaves out exactly the lane-only test it names
        assert sum(word in t for t in tests) == 1, (word, tests)
    kept = [t for t in tests if not any(w in t for w in left_out)]
    assert len(kept) == len(tests) - 3 >= 4
    assert set(cfg["test-extras"]) == {"torch", "play"}
    assert cfg["linux"]["environment"] == {"SPADES_ENV_OPENMP": "1"}


def test_the_workflow_builds_on_linux_macos_and_windows():
    wf = yaml.safe_load(_read(".github", "workflows", "wheels.yml"))
    job = wf["jobs"]["wheels"]
    oses = job["strategy"]["matrix"]["os"]
    assert any(o.startswith("ubuntu") for o in oses) and any(o.startswith("macos") for o in oses)
    assert any(o.startswith("windows") for o in oses)
    assert any(step.get("uses", "").startswith("pypa/cibuildwheel@") for step in job["steps"])
    sdist = " ".join(step.get("run", "") for step in wf["jobs"]["sdist"]["steps"])
    assert "python -m build --sdist" in sdist


def test_the_sdist_carries_the_shipped_agent():
    manifest = _read("MANIFEST.in")
    assert "include checkpoints/shipped/agent.pt" in manifest
    assert os.path.isfile(os.path.join(ROOT, "checkpoints", "shipped", "agent.pt"))
