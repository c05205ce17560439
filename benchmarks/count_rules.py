"""Counts of how the code is organised, now and at an earlier commit, side by side: the places
that decide each card-play rule, the largest files, import cycles, private names imported
across modules and lines that write seat arithmetic inline.

A place that decides a rule is a function (counted with its file) (Python: ``def``; C: a function body) whose text holds
one of the rule's signature expressions below: the arithmetic that only code deciding that rule
writes (the non-spade mask of the lead rule, the "a spade beats another suit" test of the trick
winner...). Calls of the shared functions (``legal_cards_mask``, ``sp_legal_cards``...) are not
signatures, so a caller is not counted; the shared function itself is. Python files are read
under ``spades_env/`` (and ``training/`` in trees that still have it); C files under
``spades_env/_native/``.

Usage: ``python benchmarks/count_rules.py [--before REV]`` (default: the commit before the rules
moved into ``rules.py``, 2f4aaa7).
"""

from __future__ import annotations

import argparse
import ast
import os
import re
import subprocess
import sys
from collections import defaultdict

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)  # tests.doctools

# rule -> language -> signature regexes (any one marks the function)
SIGNATURES = {
    "legal cards (follow suit, spade lead)": {
        "python": [r"(?s)(?=.*broken)(?=.*(NON_SPADES_MASK|&\s*NS\b|suit\s*!=\s*3\)))"],
        "c": [r"SP_NON_SPADES", r"&\s*NS\b", r"any_ns"],
        "torch": [r"use_ns", r"\bns\s*="],
    },
    "trick winner": {
        "python": [r"==\s*Suit\.SPADES", r"cs\s*==\s*3\s+and\s+win\s*//\s*13\s*!=\s*3",
                   r"x\s*//\s*13\s*==\s*3\s+and\s+wc", r"card\s*>=\s*39\s*$",
                   r"return\s+card\s*>\s*winning"],
        "c": [r"cs\s*==\s*3\)\s*\*\s*32", r"cs\s*==\s*3\s*&&\s*win\s*/\s*13\s*!=\s*3",
              r"xs\s*==\s*3\s*&&\s*wc", r"card\s*>\s*winning\s*:"],
        "torch": [r"\*\s*32\b", r"is_spade.*\*"],
    },
    "spades broken": {
        "python": [r"broken\s*=\s*True", r"spades_broken\s*=\s*True", r"led_suit\s*!=\s*3\b"],
        "c": [r"broken\[i\]\s*=\s*1", r"broken\s*=\s*1;", r"brk\s*=\s*1", r"led\s*!=\s*3\s*;"],
        "torch": [r"_broken\.logical_or_"],
    },
    "hand scoring (contract made or set)": {
        "python": [r"10\s*\*\s*contract"],
        "c": [r"10\s*\*\s*contract"],
        "torch": [r"10\s*\*\s*contract"],
    },
    "voids a play shows": {
        "python": [r"\|=\s*0b0111", r"voids\[\w+\]\s*\|=\s*1\s*<<", r"return\s+0b0111",
                   r"1\s*<<\s*led\w*\s+if"],
        "c": [r"off\s*=\s*suit\s*!=\s*led", r"suit\s*==\s*3\s*&&\s*!e->broken", r"\?\s*7\s*:"],
        "torch": [r"_lead_voids\(", r"self\._voids\.scatter_"],
    },
}


def git_files(rev: str | None) -> dict[str, str]:
    """``{path: text}`` of the Python and C files of the package at ``rev`` (None: the work
    tree)."""
    if rev is None:
        out = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True,
                             check=True).stdout.split()
        paths = [p for p in out if os.path.isfile(os.path.join(ROOT, p))]
        read = lambda p: open(os.path.join(ROOT, p), encoding="utf-8").read()  # noqa: E731
    else:
        paths = subprocess.run(["git", "ls-tree", "-r", "--name-only", rev], cwd=ROOT,
                               capture_output=True, text=True, check=True).stdout.split()
        read = lambda p: subprocess.run(["git", "show", f"{rev}:{p}"], cwd=ROOT,  # noqa: E731
                                        capture_output=True, text=True, check=True).stdout
    keep = [p for p in paths if (p.startswith(("spades_env/", "training/"))
                                 and p.endswith((".py", ".c", ".h")))]
    return {p: read(p) for p in keep}


def python_functions(text: str):
    """``(name, source)`` of every function (methods and nested ones included)."""
    tree = ast.parse(text)
    lines = text.splitlines()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            body = "\n".join(lines[node.lineno - 1:node.end_lineno])
            # a nested function's text is also its parent's: count the innermost only
            inner = [n for n in ast.walk(node) if n is not node
                     and isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
            for n in inner:
                body = body.replace("\n".join(lines[n.lineno - 1:n.end_lineno]), "")
            yield node.name, body


def c_functions(text: str):
    """``(name, body)`` of every top-level C function (a line ending in ``{`` after a
    signature, up to the matching closing brace at column 0)."""
    for m in re.finditer(r"^[\w][\w\s\*]*?\b(\w+)\s*\([^;{]*\)\s*\{\s*$", text, re.M):
        end = text.find("\n}", m.end())
        yield m.group(1), text[m.start():end]


def language(path: str) -> str:
    if path.endswith((".c", ".h")):
        return "c"
    batched = path == "spades_env/vector.py" or path.startswith("spades_env/vector/")
    return "torch" if batched else "python"


def rule_places(files: dict[str, str]) -> dict[str, dict[str, list[str]]]:
    """``{rule: {language: ["path:function", ...]}}``."""
    out: dict = {rule: defaultdict(list) for rule in SIGNATURES}
    for path, text in sorted(files.items()):
        lang = language(path)
        funcs = c_functions(text) if lang == "c" else python_functions(text)
        for name, body in funcs:
            for rule, by_lang in SIGNATURES.items():
                pats = list(by_lang.get(lang, []))
                if lang == "torch":  # the batched engine's numpy/python helpers count too
                    pats += by_lang["python"]
                if any(re.search(p, body, re.M) for p in pats):
                    out[rule][lang].append(f"{path}:{name}")
    return out


def module_of(path: str) -> str:
    mod = path[:-3].replace("/", ".")
    return mod[: -len(".__init__")] if mod.endswith(".__init__") else mod


def imports(files: dict[str, str]) -> tuple[dict[str, set], list[str]]:
    """The import graph of the Python modules (every import statement, lazy ones included) and
    the private names (``_x``) imported from another module."""
    mods = {module_of(p): p for p in files if p.endswith(".py")}
    graph: dict = defaultdict(set)
    private = []
    for mod, path in mods.items():
        pkg = mod if path.endswith("__init__.py") else mod.rpartition(".")[0]
        for node in ast.walk(ast.parse(files[path])):
            targets = []
            if isinstance(node, ast.Import):
                targets = [(a.name, None) for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = pkg.split(".")
                    root = ".".join(parts[: len(parts) - node.level + 1])
                    base = f"{root}.{base}" if base else root
                for a in node.names:
                    sub = f"{base}.{a.name}"
                    targets.append((sub if sub in mods else base, a.name))
            for target, name in targets:
                if target in mods and target != mod:
                    graph[mod].add(target)
                    if name and name.startswith("_") and not name.startswith("__") \
                            and f"{target}.{name}" not in mods:
                        private.append(f"{mod} imports {target}.{name}")
    return graph, sorted(set(private))


def cycles(graph: dict[str, set]) -> list[list[str]]:
    """The groups of modules that import each other (``tests.doctools.find_cycles``)."""
    from tests.doctools import find_cycles
    return find_cycles(graph)


# seat arithmetic written inline (the tables NEXT_SEAT, PARTNER, TEAM... in cards.py hold it once):
# (x + 1|2|3) & 3 or % 4, x ^ 2, and a seat-named x & 1 or % 2
SEAT_ARITHMETIC = re.compile(
    r"\(\s*[\w.\[\]]+\s*\+\s*[123]\s*\)\s*(?:&\s*3|%\s*4)\b"
    r"|\b(?:p|s|me|seat|dealer|ws|wseat|leader|first|cur|who|mover)\s*\^\s*2\b"
    r"|\b(?:p|s|me|seat|dealer|ws|wseat|leader|first|cur|who|mover)\s*(?:&\s*1|%\s*2)\b")


def seat_arithmetic(files: dict[str, str]) -> list[str]:
    """``path:line`` of each Python line outside ``cards.py`` that writes seat arithmetic
    inline (comments and docstring lines that only mention it count too: few)."""
    out = []
    for path, text in files.items():
        if language(path) != "python" or path.endswith("/cards.py"):
            continue
        for i, line in enumerate(text.splitlines(), 1):
            if SEAT_ARITHMETIC.search(line.split("#")[0]):
                out.append(f"{path}:{i}")
    return out


def report(files: dict[str, str]) -> dict:
    """Every count for one tree."""
    graph, private = imports(files)
    sizes = sorted(((len(t.splitlines()), p) for p, t in files.items()), reverse=True)[:6]
    return {"rules": rule_places(files), "largest": sizes, "cycles": cycles(graph),
            "private": private, "seats": seat_arithmetic(files)}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--before", default="2f4aaa7", help="the earlier commit (default 2f4aaa7)")
    p.add_argument("--verbose", action="store_true", help="list every place, cycle and import")
    args = p.parse_args(argv)
    before, after = report(git_files(args.before)), report(git_files(None))
    print(f"| rule | language | files (functions) at {args.before} | files (functions) now |")
    print("|---|---|---|---|")
    for rule in SIGNATURES:
        for lang in ("python", "c", "torch"):
            b, a = before["rules"][rule].get(lang, []), after["rules"][rule].get(lang, [])
            nb, na = (len({x.split(":")[0] for x in v}) for v in (b, a))
            print(f"| {rule} | {lang} | {nb} ({len(b)}) | {na} ({len(a)}) |")
    print()
    print(f"| | at {args.before} | now |")
    print("|---|---|---|")
    print(f"| import cycles | {len(before['cycles'])} | {len(after['cycles'])} |")
    print(f"| private names imported across modules | {len(before['private'])} | "
          f"{len(after['private'])} |")
    print(f"| lines with seat arithmetic inline (Python) | {len(before['seats'])} | "
          f"{len(after['seats'])} |")
    for i in range(6):
        (bn, bp), (an, ap) = before["largest"][i], after["largest"][i]
        print(f"| largest file {i + 1} | {bp} ({bn} lines) | {ap} ({an} lines) |")
    if args.verbose:
        for name, rep in (("before", before), ("now", after)):
            print(f"\n## {name}")
            for rule, by in rep["rules"].items():
                for lang, places in by.items():
                    print(f"{rule} [{lang}]: {', '.join(places)}")
            print("cycles:", *[" <-> ".join(c) for c in rep["cycles"]], sep="\n  ")
            print("private imports:", *rep["private"], sep="\n  ")
            print("seat arithmetic:", *rep["seats"], sep="\n  ")
    return 0


if __name__ == "__main__":
    sys.exit(main())
