"""The layers of the package, and that imports point down only (docs/architecture.md).

The import graph is read from the source (``tests.doctools.imports_of``: every ``import`` and
``from ... import`` statement, at module level or inside a function), so a lazy import counts as
much as a top-level one. A module may import its own layer or a lower one, never a higher one, and
nothing outside ``spades_env.training`` imports it. A second group of tests checks the base install: without
torch, the engine, the envs, the bots and the arena work, and the torch parts say what to install.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import textwrap

import pytest

from tests.doctools import find_cycles, imports_of, module_name

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# Layer of every module of the package, low to high (docs/architecture.md has the same table).
LAYERS = {
    0: ["spades_env.cards", "spades_env.deck", "spades_env.variants", "spades_env.scoring",
        "spades_env.rules", "spades_env.fileio", "spades_env.readers",
        "spades_env.locks", "spades_env.native",
        "spades_env.workers", "spades_env.options"],
    1: ["spades_env", "spades_env.engine", "spades_env.player_view", "spades_env.deal_check",
        "spades_env.render", "spades_env.render_image"],
    2: ["spades_env.observation", "spades_env.compact", "spades_env.records"],
    3: ["spades_env.bots", "spades_env.agents", "spades_env.devices"],
    4: ["spades_env.spades_v1", "spades_env.spades_v2", "spades_env.spades_v0", "spades_env.single_agent",
        "spades_env.aec_wrappers", "spades_env.aec_obs",
        "spades_env.bot_seats", "spades_env.state", "spades_env.vector"],
    5: ["spades_env.arena", "spades_env.arena_result", "spades_env.ray_cluster"],
    6: ["spades_env.integrations", "spades_env.play"],
    7: ["spades_env.training"],
    8: ["spades_env.cli", "spades_env.__main__"],
}


def layer_of(module: str) -> int:
    """The layer of ``module`` (a module inside a listed package takes the package's layer)."""
    best, rank = "", None
    for r, names in LAYERS.items():
        for name in names:
            if (module == name or module.startswith(name + ".")) and len(name) > len(best):
                best, rank = name, r
    if rank is None:
        raise KeyError(module)
    return rank


def package_modules() -> dict[str, str]:
    """``{module name: path}`` of every ``.py`` file under ``spades_env/``."""
    out = {}
    for folder, _, files in os.walk(os.path.join(ROOT, "spades_env")):
        for name in files:
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                out[module_name(path)] = path
    return out


def test_every_module_has_a_layer():
    missing = [m for m in package_modules() if not _has_layer(m)]
    assert not missing, f"modules with no layer in LAYERS (add them, and to docs/architecture.md): " \
                        f"{missing}"


def _has_layer(m: str) -> bool:
    try:
        layer_of(m)
    except KeyError:
        return False
    return True


def test_nothing_outside_the_trainer_imports_it():
    """The trainer (``spades_env.training``) is imported by nobody below it; the ``spades``
    command loads it by name. Nothing imports a top-level ``training`` (the 0.7 alias, removed
    in 0.9.0)."""
    bad = sorted(f"{m} imports {i}" for m, p in package_modules().items() for i in imports_of(p)
                 if i.split(".")[0] == "training" or (
                     i.startswith("spades_env.training") and not m.startswith(
                         "spades_env.training")))
    assert not bad, bad


def test_imports_point_down_only():
    up = []
    for m, p in sorted(package_modules().items()):
        for i in sorted(imports_of(p)):
            if i.startswith("spades_env") and layer_of(i) > layer_of(m):
                up.append(f"{m} (layer {layer_of(m)}) imports {i} (layer {layer_of(i)})")
    assert not up, "imports pointing up a layer:\n" + "\n".join(up)


def test_the_network_never_imports_the_bots_that_play_it():
    """``bots`` and ``agents`` share layer 3, but the arrow runs one way: the bots that play a
    network import ``agents``, never the reverse (``agents.bot`` and ``agents.expert``, the 0.6
    names that pointed back at ``bots``, were removed in 0.9.0)."""
    back = sorted(f"{m} imports {i}" for m, p in package_modules().items()
                  if m.startswith("spades_env.agents") for i in imports_of(p)
                  if i == "spades_env.bots" or i.startswith("spades_env.bots."))
    assert not back, back
    assert "spades_env.agents.model" in imports_of(
        os.path.join(ROOT, "spades_env", "bots", "checkpoint_bot.py"))


NETWORK_BOTS = ("spades_env.bots.checkpoint_bot", "spades_env.bots.expert")
"""the bots that play a trained network: they need torch (the extra ``[torch]``)."""


def test_the_engine_layers_need_no_framework():
    """cards, rules, engine, observation and the bots (but those that play a network) import no
    torch, pettingzoo or gymnasium."""
    heavy = ("torch", "pettingzoo", "gymnasium")
    bad = []
    for m, p in package_modules().items():
        if layer_of(m) <= 2 and m != "spades_env" or (m.startswith("spades_env.bots")
                                                     and m not in NETWORK_BOTS):
            bad += [f"{m} imports {i}" for i in imports_of(p) if i.split(".")[0] in heavy]
    assert not bad, bad


def test_the_checker_sees_an_upward_import(tmp_path):
    """The graph reader resolves relative and lazy imports (so the rule above can fail)."""
    src = tmp_path / "probe.py"
    src.write_text("def f():\n    from ..arena import play_match\n    from . import sampler\n")
    fake = os.path.join(ROOT, "spades_env", "bots", "probe.py")
    with open(src) as f:
        text = f.read()
    tree_imports = set()
    # read it as if it sat at spades_env/bots/probe.py
    pkg = "spades_env.bots"
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.ImportFrom):
            parts = pkg.split(".")
            base = ".".join(parts[: len(parts) - node.level + 1])
            tree_imports.add(f"{base}.{node.module}" if node.module else base)
    assert tree_imports == {"spades_env.arena", "spades_env.bots"}
    assert layer_of("spades_env.arena") > layer_of(module_name(fake))
    assert layer_of("spades_env.bots.checkpoint_bot") == layer_of("spades_env.bots.pimc") == 3
    assert "spades_env.bots.base" in imports_of(os.path.join(ROOT, "spades_env", "bots",
                                                             "checkpoint_bot.py"))


# ----------------------------------------------------------------------------- the base install
_NO_TORCH = textwrap.dedent("""
    import importlib.abc, sys
    class _NoTorch(importlib.abc.MetaPathFinder):
        # the base install: torch (and the trainer's packages) are not there
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in ("torch", "tensorboard", "matplotlib", "yaml"):
                raise ModuleNotFoundError(f"No module named {name!r}", name=name)
    sys.meta_path.insert(0, _NoTorch())
""")


def _run_without_torch(body: str) -> subprocess.CompletedProcess:
    code = _NO_TORCH + textwrap.dedent(body)
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                          timeout=300)


def test_engine_envs_bots_and_arena_work_without_torch():
    r = _run_without_torch("""
        import numpy as np
        from spades_env import SpadesGame, Rules
        from spades_env import spades_v1, SpadesSingleAgentEnv
        from spades_env.bots import make_bot
        from spades_env.arena import play_match
        env = spades_v1.env()
        env.reset(seed=3)
        steps = 0
        for agent in env.agent_iter():
            obs, rew, term, trunc, info = env.last()
            act = None if term or trunc else int(np.flatnonzero(obs["action_mask"])[0])
            env.step(act)
            steps += 1
        single = SpadesSingleAgentEnv(hands_per_episode=1)
        single.reset(seed=1)
        bots = [make_bot(n, seed=1) for n in ("random", "easy", "medium", "hard")]
        res = play_match("easy", "random", games=2, seed=5)
        print("OK", steps, res.games, "torch" in sys.modules)
    """)
    assert r.returncode == 0, r.stderr[-2000:]
    ok, steps, games, torch_loaded = r.stdout.split()
    assert ok == "OK" and int(steps) > 56 and int(games) == 2 and torch_loaded == "False"


@pytest.mark.parametrize("body,what", [
    ("import spades_env.vector", "spades_env.vector (the batched engine) needs PyTorch"),
    ("import spades_env.agents.model", "spades_env.agents (trained policies, checkpoint bots)"),
    ("import spades_env.bots.checkpoint_bot", "spades_env.agents (trained policies, checkpoint bots)"),
    ("from spades_env.bots import make_bot\nmake_bot('checkpoint:checkpoints/shipped/agent.pt')",
     "bot 'checkpoint:checkpoints/shipped/agent.pt' needs PyTorch"),
    ("import spades_env.training.ppo_selfplay", "training needs torch"),
])
def test_torch_parts_say_what_to_install(body, what):
    r = _run_without_torch(body)
    assert r.returncode == 1
    last = r.stderr.strip().splitlines()[-1]
    assert last.startswith("ImportError: ") and what in last, last
    assert "spades_env[torch]" in last or "spades_env[train]" in last


def test_arena_cli_with_a_checkpoint_bot_and_no_torch_is_one_error_line():
    r = _run_without_torch("""
        from spades_env.arena import main
        sys.exit(main(["--team0", "checkpoint:checkpoints/shipped/agent.pt", "--team1", "medium",
                       "--games", "2"]))
    """)
    assert r.returncode == 2, r.stderr[-1000:]
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: bot 'checkpoint:")
    assert "needs PyTorch" in lines[0] and "spades_env[torch]" in lines[0]


def test_an_uninstalled_framework_names_its_extra():
    r = subprocess.run([sys.executable, "-c", "import spades_env.integrations.rllib"], cwd=ROOT,
                       capture_output=True, text=True, timeout=120)
    try:
        import ray  # noqa: F401
    except ImportError:
        assert r.returncode == 1
        assert r.stderr.strip().splitlines()[-1] == (
            "ImportError: spades_env.integrations.rllib needs RLlib (ray is not installed): "
            "pip install 'spades_env[rllib]'")
    else:
        pytest.fail("this test runs where Ray is not installed (the main suite's environment)")


# ----------------------------------------------------------------------------- cycles, privacy
def import_graph() -> dict[str, set[str]]:
    """``{module: the package modules it imports}``; importing ``a.b.c`` also imports the
    packages ``a.b`` and ``a`` (their ``__init__`` runs first), so those count as imported."""
    mods = package_modules()
    graph = {}
    for m, p in mods.items():
        out = set()
        for i in imports_of(p):
            parts = i.split(".")
            for k in range(1, len(parts) + 1):
                name = ".".join(parts[:k])
                if name in mods and name != m and not m.startswith(name + "."):
                    out.add(name)
        graph[m] = out
    return graph


def test_no_import_cycles():
    """No two modules import each other, not even lazily (inside a function)."""
    cycles = find_cycles(import_graph())
    assert not cycles, "modules that import each other:\n" + "\n".join(
        " <-> ".join(c) for c in cycles)


def test_the_cycle_finder_finds_a_cycle():
    assert find_cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert find_cycles({"a": {"b"}, "b": set()}) == []


def private_imports() -> list[str]:
    """``module imports other._name``: a private name (one underscore) of another module."""
    bad = []
    mods = package_modules()
    for m, p in sorted(mods.items()):
        pkg = m if p.endswith("__init__.py") else m.rpartition(".")[0]
        with open(p, encoding="utf-8") as f:
            tree = ast.parse(f.read(), p)
        for node in ast.walk(tree):
            if not isinstance(node, ast.ImportFrom):
                continue
            base = node.module or ""
            if node.level:
                parts = pkg.split(".")
                root = ".".join(parts[: len(parts) - node.level + 1])
                base = f"{root}.{base}" if base else root
            for a in node.names:
                if a.name.startswith("_") and not a.name.startswith("__") and base != m \
                        and f"{base}.{a.name}" not in mods:
                    bad.append(f"{m} imports {base}.{a.name}")
    return bad


def test_no_private_names_imported_across_modules():
    bad = private_imports()
    assert not bad, "private names imported from another module (make them public):\n" + \
        "\n".join(bad)
