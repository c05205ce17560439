"""docs/architecture.md is true: its module table names every module file, each row's imports are
the ones the code makes, the layers it gives let imports point down only, and its ``needs`` column
says which modules work without torch.

The module files are those git tracks (a fresh clone holds exactly these). The imports are read
from the source with ``ast`` (every ``import`` and ``from ... import``, at module level or inside a
function; relative imports resolved), so a lazy import counts as much as a top-level one.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap

import pytest

from tests.doctools import imports_of, module_name

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DOC = os.path.join(ROOT, "docs", "architecture.md")
PACKAGES = ("spades_env",)
NEEDS = ("-", "[torch]", "[train]", "[play]", "[ray]", "[rllib]", "[tianshou]")


def module_files() -> list[str]:
    """Repository-relative paths of every module file git tracks (what a fresh clone holds):
    ``.py`` (and the C kernel's ``.c``) under ``spades_env/``, present on disk."""
    try:
        out = subprocess.run(["git", "ls-files", "-z", "--", *PACKAGES], cwd=ROOT,
                             capture_output=True, check=True).stdout.decode()
    except (OSError, subprocess.CalledProcessError) as e:
        pytest.fail(f"this test needs the git checkout (git ls-files failed: {e})")
    return sorted(p for p in out.split("\0") if p.endswith((".py", ".c"))
                  and os.path.isfile(os.path.join(ROOT, p)))


def short(name: str) -> str:
    """How the doc names a module: without the ``spades_env.`` prefix."""
    return name[len("spades_env."):] if name.startswith("spades_env.") else name


def project_imports(rel: str) -> set[str]:
    """The project modules ``rel`` imports, as the doc names them (``tests.doctools.imports_of``
    keeps only the modules of ``spades_env``, shortened)."""
    me = module_name(rel)
    return {short(m) for m in imports_of(rel) if m.split(".")[0] in PACKAGES and m != me}


def file_of(name: str) -> str:
    """Repository-relative file of a module the doc names (``bots`` -> its ``__init__.py``)."""
    dotted = name if name.split(".")[0] in PACKAGES else f"spades_env.{name}"
    path = dotted.replace(".", "/")
    return path + ".py" if os.path.isfile(os.path.join(ROOT, path + ".py")) \
        else path + "/__init__.py"


@pytest.fixture(scope="module")
def rows() -> dict[str, dict]:
    """``{path: {"layer", "owns", "imports", "needs"}}`` from the doc's module table: the rows whose
    first cell is a path in backticks."""
    with open(DOC, encoding="utf-8") as f:
        text = f.read()
    out = {}
    for line in text.splitlines():
        m = re.match(r"\|\s*`((?:spades_env|training)/[^`]*)`\s*\|(.*)\|\s*$", line)
        if not m:
            continue
        cells = [c.strip() for c in m.group(2).split("|")]
        assert len(cells) == 4, f"module table row needs 5 cells: {line}"
        layer, owns, imports, needs = cells
        assert m.group(1) not in out, f"{m.group(1)} has two rows"
        out[m.group(1)] = {"layer": int(layer), "owns": owns, "needs": needs,
                           "imports": set() if imports == "-" else
                           set(re.findall(r"`([\w.]+)`", imports))}
    assert len(out) > 30, "the module table of docs/architecture.md was not found"
    return out


def test_every_module_file_is_in_the_table(rows):
    missing = [p for p in module_files() if p not in rows]
    assert not missing, f"docs/architecture.md's module table misses {missing}"


def test_every_row_names_a_file_that_exists(rows):
    stale = [p for p in rows if not os.path.exists(os.path.join(ROOT, p))]
    assert not stale, f"docs/architecture.md lists files that do not exist: {stale}"


def test_every_row_says_what_it_owns_and_needs(rows):
    for path, row in rows.items():
        assert len(row["owns"]) > 10, path
        assert row["needs"] in NEEDS, f"{path}: needs {row['needs']!r}, not one of {NEEDS}"
        assert (row["layer"] == 7) == path.startswith("spades_env/training/"), path
        assert (row["layer"] == 8) == (path in ("spades_env/cli.py", "spades_env/__main__.py")), \
            path


def test_the_imports_column_is_the_code(rows):
    wrong = []
    for path, row in sorted(rows.items()):
        if not path.endswith(".py"):
            continue
        real = project_imports(path)
        if row["imports"] != real:
            cell = ", ".join(f"`{m}`" for m in sorted(real)) or "-"
            wrong.append(f"{path}: the doc says {sorted(row['imports'])}, the code imports "
                         f"{sorted(real)}; the cell should read: {cell}")
    assert not wrong, "\n".join(wrong)


def test_imports_point_down_only(rows):
    """By the doc's own layer column: a module imports its own layer or lower ones."""
    up = []
    for path, row in rows.items():
        for name in row["imports"]:
            target = file_of(name)
            if not path.startswith("spades_env/training/") \
                    and target.startswith("spades_env/training/"):
                up.append(f"{path} imports {name}: nothing outside spades_env/training/ "
                          f"imports it")
            elif target not in rows:
                up.append(f"{path} imports {name}, which has no row")
            elif rows[target]["layer"] > row["layer"]:
                up.append(f"{path} (layer {row['layer']}) imports {name} "
                          f"(layer {rows[target]['layer']})")
    assert not up, "\n".join(up)


def test_the_import_reader_resolves_what_it_must(tmp_path):
    """Relative, lazy and ``from pkg import module`` imports are all seen (so the tests above can
    fail)."""
    assert project_imports("spades_env/bots/checkpoint_bot.py") >= {"bots.base", "observation"}
    assert "ray_cluster" in project_imports("spades_env/arena.py")  # imported inside a function
    assert "spades_v1" in project_imports("spades_env/integrations/tianshou.py")  # from .. import
    assert "spades_env" not in project_imports("spades_env/integrations/tianshou.py")
    assert file_of("bots") == "spades_env/bots/__init__.py"
    assert file_of("training.config") == "spades_env/training/config.py"


_NO_TORCH = textwrap.dedent("""
    import importlib, importlib.abc, json, sys, warnings
    warnings.simplefilter("ignore")
    class _NoTorch(importlib.abc.MetaPathFinder):
        # the base install: torch and the trainer's packages are not there
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in ("torch", "tensorboard", "matplotlib", "yaml"):
                raise ModuleNotFoundError(f"No module named {name!r}", name=name)
    sys.meta_path.insert(0, _NoTorch())
    out = {}
    for name in json.loads(sys.argv[1]):
        try:
            importlib.import_module(name)
            out[name] = "ok"
        except ImportError as e:
            out[name] = "ImportError: " + str(e)
    print(json.dumps(out))
""")


@pytest.mark.slow
def test_the_needs_column_says_what_works_without_torch(rows):
    """Modules marked ``-``, ``[play]``, ``[ray]`` or ``[tianshou]`` import without torch (the
    frameworks are imported when called); those marked ``[torch]`` or ``[train]`` refuse with an
    ``ImportError``. ``[rllib]`` modules import ray at the top, which the test install lacks; for
    them the source must import ray."""
    mods = {module_name(p): row["needs"] for p, row in rows.items()
            if p.endswith(".py") and row["needs"] != "[rllib]"}
    order = sorted(mods, key=lambda m: mods[m] in ("[torch]", "[train]"))  # base ones first
    r = subprocess.run([sys.executable, "-c", _NO_TORCH, json.dumps(order)], cwd=ROOT,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    got = json.loads(r.stdout.strip().splitlines()[-1])
    wrong = []
    for m, needs in mods.items():
        want_ok = needs not in ("[torch]", "[train]")
        if (got[m] == "ok") != want_ok:
            wrong.append(f"{m} (needs {needs}): {got[m]}")
    assert not wrong, "without torch:\n" + "\n".join(wrong)
    for p, row in rows.items():
        if row["needs"] == "[rllib]":
            with open(os.path.join(ROOT, p), encoding="utf-8") as f:
                assert re.search(r"^\s*from ray\b|^\s*import ray\b", f.read(), re.M), p
