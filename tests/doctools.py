"""Helpers the documentation and layer tests share: markdown tables and the import graph.

- ``tables(text)`` / ``table(text, *header)``: the pipe tables of a markdown text, so a test can
  check a doc's rows against the code.
- ``module_name(rel)`` / ``imports_of(rel)``: the dotted name of a source file and the modules
  it imports, read with ``ast`` (every ``import`` statement, lazy ones inside functions too;
  relative imports resolved; ``from pkg import name`` counts as ``pkg.name`` when that is a module
  of the checkout, else as ``pkg``).
"""

from __future__ import annotations

import ast
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

_PIPE = re.compile(r"(?<!\\)\|")
_RULE_ROW = re.compile(r"\|(\s*:?-{3,}:?\s*\|)+")


def _cells(line: str) -> list[str]:
    parts = _PIPE.split(line.strip())
    if len(parts) < 3 or parts[0] or parts[-1]:
        raise ValueError(f"not a table row: {line!r}")
    return [p.strip().replace("\\|", "|") for p in parts[1:-1]]


def tables(text: str) -> list[tuple[list[str], list[list[str]]]]:
    """Every markdown table of ``text`` as (header cells, rows of cells)."""
    lines = text.splitlines()
    out = []
    i = 0
    while i < len(lines):
        if lines[i].startswith("|") and i + 1 < len(lines) \
                and _RULE_ROW.fullmatch(lines[i + 1].strip()):
            header = _cells(lines[i])
            rows = []
            j = i + 2
            while j < len(lines) and lines[j].startswith("|"):
                rows.append(_cells(lines[j]))
                j += 1
            out.append((header, rows))
            i = j
        else:
            i += 1
    return out


def table(text: str, *header: str, doc: str = "the doc") -> list[dict]:
    """Rows (dicts by column name) of the one table whose header is exactly ``header``.

    Raises:
        AssertionError: no such table, more than one, or a row with another number of cells.
    """
    found = [rows for h, rows in tables(text) if tuple(h) == header]
    if len(found) != 1:
        raise AssertionError(f"{doc} needs exactly one table with the header {header}, "
                             f"found {len(found)}")
    for r in found[0]:
        if len(r) != len(header):
            raise AssertionError(f"row {r} has {len(r)} cells, the header {len(header)}")
    return [dict(zip(header, r)) for r in found[0]]


def module_name(rel: str) -> str:
    """``spades_env/bots/pimc.py`` -> ``spades_env.bots.pimc`` (a package's ``__init__.py`` ->
    the package). ``rel`` is relative to the checkout (or absolute inside it)."""
    rel = os.path.relpath(rel, ROOT) if os.path.isabs(rel) else rel
    name = rel[:-3].replace(os.sep, ".")
    return name[: -len(".__init__")] if name.endswith(".__init__") else name


def is_module(dotted: str) -> bool:
    """Whether ``dotted`` names a module or package file of the checkout."""
    path = os.path.join(ROOT, *dotted.split("."))
    return os.path.isfile(path + ".py") or os.path.isfile(os.path.join(path, "__init__.py"))


def imports_of(rel: str) -> set[str]:
    """Every module the file ``rel`` imports (dotted names, third-party ones included)."""
    me = module_name(rel)
    pkg = me if rel.endswith("__init__.py") else me.rpartition(".")[0]
    path = rel if os.path.isabs(rel) else os.path.join(ROOT, rel)
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), rel)
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = pkg.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1])
                target = f"{base}.{node.module}" if node.module else base
            else:
                target = node.module
            subs = [f"{target}.{a.name}" for a in node.names if is_module(f"{target}.{a.name}")]
            found.update(subs)
            if len(subs) < len(node.names):
                found.add(target)
    return found


def find_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The groups of modules that import each other, directly or through others (the strongly
    connected components of more than one module), each sorted."""
    index, low, on, stack, out = {}, {}, set(), [], []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                out.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(out)
