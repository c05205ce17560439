"""docs/bots.md is kept true: its copied result tables equal the results files they cite
(benchmarks/results/ladder.md, bot_speed.md and bot_speed.json), every bot level has its section,
its option tables list exactly each level's options with their real defaults, the tests it cites
exist, and its code example runs.

Each ``*_errors(text)`` function returns the mismatches of one kind (empty when the doc agrees);
``test_a_wrong_value_in_the_doc_is_caught`` shows each one fails on a copy of the doc with one
value changed.
"""

from __future__ import annotations

import ast
import inspect
import json
import os
import re

import pytest

from tests.doctools import table as doc_table
from tests.doctools import tables

from spades_env.bots import BOT_LEVELS, make_bot
from spades_env.bots.base import RandomBot
from spades_env.bots.heuristic import EasyBot, MediumBot
from spades_env.bots.pimc import HardBot, InsaneBot

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DOC = os.path.join(ROOT, "docs", "bots.md")
RESULTS = os.path.join(ROOT, "benchmarks", "results")
CHECKPOINT = "checkpoint:PATH"


def _read(path: str) -> str:
    with open(path, encoding="utf-8") as f:
        return f.read()


def table(text: str, *header: str) -> list[dict]:
    """Rows (dicts by column name) of the one table of docs/bots.md whose header is ``header``."""
    return doc_table(text, *header, doc="docs/bots.md")


def _code(cell: str) -> str:
    return cell.strip().strip("`")


# --------------------------------------------------------------------------- copied results
# the results tables the doc copies from; each doc table whose columns are all columns of one of
# these (same first column) is a copy, compared cell by cell
COPIED_FROM = ("ladder.md", "bot_speed.md")
# (results file, first column, a column only that table has): the copies the doc must hold
REQUIRED_COPIES = (("ladder.md", "upper vs lower", "point diff / hand [95% CI]"),
                   ("ladder.md", "habit switched off", "full medium wins"),
                   ("ladder.md", "level", "median ms / decision"),
                   ("bot_speed.md", "level", "card choice median ms"))


def copy_errors(text: str, results: dict) -> list[str]:
    """Cells of the doc's copied tables that differ from the results files (``results``: file
    name -> text), rows missing on either side, and copies the doc should hold but does not."""
    errors = []
    sources = [(name, h, rows) for name, t in results.items() for h, rows in tables(t)]
    matched = set()
    for header, rows in tables(text):
        for name, rh, rrows in sources:
            if rh[0] != header[0] or not set(header) <= set(rh):
                continue
            matched.add((name, rh[0], tuple(rh)))
            by_key = {r[0]: dict(zip(rh, r)) for r in rrows}
            if sorted(r[0] for r in rows) != sorted(by_key):
                errors.append(f"{name} table {rh[0]!r}: doc rows {[r[0] for r in rows]}, "
                              f"results rows {sorted(by_key)}")
            for r in rows:
                src = by_key.get(r[0])
                if src is None:
                    continue
                for col, cell in zip(header, r):
                    if cell != src[col]:
                        errors.append(f"{name}, {r[0]!r}, {col!r}: doc {cell!r}, results "
                                      f"{src[col]!r}")
    for name, first, marker in REQUIRED_COPIES:
        if not any(n == name and f == first and marker in h for n, f, h in matched):
            errors.append(f"the doc holds no copy of the {name} table with {marker!r}")
    return errors


def speed_md_errors(md: str, data: dict) -> list[str]:
    """bot_speed.md's table against bot_speed.json (the run it reports)."""
    errors = []
    rows = table(md, "level", "decisions", "median ms", "p90 ms", "max ms",
                 "card choice median ms", "bid median ms")
    if [r["level"] for r in rows] != list(data["levels"]):
        errors.append(f"levels {[r['level'] for r in rows]} != {list(data['levels'])}")
    for r in rows:
        d = data["levels"].get(r["level"], {})
        want = {"decisions": str(d.get("decisions")), "median ms": f"{d.get('median_ms', 0):.3f}",
                "p90 ms": f"{d.get('p90_ms', 0):.3f}", "max ms": f"{d.get('max_ms', 0):.2f}",
                "card choice median ms": f"{d.get('card_choice_median_ms', 0):.3f}",
                "bid median ms": f"{d.get('bid_median_ms', 0):.3f}"}
        for col, value in want.items():
            if r[col] != value:
                errors.append(f"bot_speed.md {r['level']} {col}: {r[col]!r}, json {value!r}")
    if f"--hands {data['hands']} --seed {data['seed']}" not in md:
        errors.append("bot_speed.md does not give the command of its run")
    return errors


# --------------------------------------------------------------------------- levels and options
def section_errors(text: str, results=None) -> list[str]:
    heads = [line[4:].strip() for line in text.splitlines() if line.startswith("### ")]
    errors = [f"no section '### {lv}'" for lv in (*BOT_LEVELS, CHECKPOINT) if lv not in heads]
    glance = [_code(r["level"]) for r in table(text, "level", "bidding", "card play",
                                                "median decision")]
    if glance != [*BOT_LEVELS, CHECKPOINT]:
        errors.append(f"the levels-at-a-glance table lists {glance}")
    return errors


def constructor_options(cls) -> list[str]:
    """Keyword options of a bot class: its ``__init__`` parameters except ``seed``, following
    ``**kw`` into the base classes."""
    out: list[str] = []
    for c in cls.__mro__:
        if "__init__" not in c.__dict__:
            continue
        params = inspect.signature(c.__init__).parameters.values()
        for p in params:
            if p.name not in ("self", "seed") and p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL) \
                    and p.name not in out:
                out.append(p.name)
        if not any(p.kind == p.VAR_KEYWORD for p in params):
            break
    return out


def init_defaults(module: str, class_name: str) -> dict:
    """``class_name.__init__``'s options (but ``seed``) and defaults, read from the source of
    ``spades_env/bots/<module>.py`` (no torch needed)."""
    tree = ast.parse(_read(os.path.join(ROOT, "spades_env", "bots", module + ".py")))
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == class_name)
    init = next(n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "__init__")
    args = init.args.args
    defaults = dict(zip([a.arg for a in args[len(args) - len(init.args.defaults):]],
                        [ast.literal_eval(d) for d in init.args.defaults]))
    return {k: v for k, v in defaults.items() if k != "seed"}


def checkpoint_defaults() -> dict:
    """``CheckpointBot.__init__``'s options and defaults."""
    return init_defaults("checkpoint_bot", "CheckpointBot")


def _same(a, b) -> bool:
    return a == b and type(a) is type(b)


def option_errors(text: str, results=None) -> list[str]:
    errors = []
    rows = table(text, "level", "option", "default", "meaning")
    doc: dict = {}
    for r in rows:
        doc.setdefault(r["level"], {})[_code(r["option"])] = ast.literal_eval(_code(r["default"]))
    classes = {"easy": EasyBot, "medium": MediumBot}
    if constructor_options(RandomBot) or "random" in doc:
        errors.append("random takes no option and has no row")
    for level, cls in classes.items():
        want = constructor_options(cls)
        if sorted(doc.get(level, {})) != sorted(want):
            errors.append(f"{level}: doc options {sorted(doc.get(level, {}))}, class "
                          f"{sorted(want)}")
        bot = make_bot(level, seed=0)
        for opt, value in doc.get(level, {}).items():
            if not _same(getattr(bot, opt, object()), value):
                errors.append(f"{level}.{opt}: doc default {value!r}, bot "
                              f"{getattr(bot, opt, None)!r}")
    if doc.get(CHECKPOINT) != checkpoint_defaults():
        errors.append(f"checkpoint options: doc {doc.get(CHECKPOINT)}, CheckpointBot "
                      f"{checkpoint_defaults()}")
    if set(doc) - set(classes) - {CHECKPOINT}:
        errors.append(f"unexpected levels in the options table: {sorted(set(doc) - set(classes))}")
    pimc = table(text, "option", "hard", "insane", "meaning")
    names = [_code(r["option"]) for r in pimc]
    for cls in (HardBot, InsaneBot):
        if sorted(names) != sorted(constructor_options(cls)):
            errors.append(f"{cls.__name__}: doc options {sorted(names)}, class "
                          f"{sorted(constructor_options(cls))}")
    bots = {"hard": make_bot("hard", seed=0), "insane": make_bot("insane", seed=0)}
    for r in pimc:
        for level, bot in bots.items():
            value = ast.literal_eval(_code(r[level]))
            if not _same(getattr(bot, _code(r["option"]), object()), value):
                errors.append(f"{level}.{_code(r['option'])}: doc default {value!r}, bot "
                              f"{getattr(bot, _code(r['option']), None)!r}")
    errors += expert_option_errors(text)
    return errors


def expert_option_errors(text: str) -> list[str]:
    """The ``| option | expert | meaning |`` table: every option ``ExpertBot`` adds to or
    changes from ``PIMCBot`` (read from its source, no torch needed), with its default."""
    defaults = init_defaults("expert", "ExpertBot")
    pimc = {_code(r["option"]) for r in table(text, "option", "hard", "insane", "meaning")}
    insane = make_bot("insane", seed=0)
    want = {k: v for k, v in defaults.items()
            if k not in pimc or not _same(getattr(insane, k, object()), v)}
    doc = {_code(r["option"]): ast.literal_eval(_code(r["expert"]))
           for r in table(text, "option", "expert", "meaning")}
    errors = []
    for k in sorted(set(want) | set(doc)):
        if k not in doc or k not in want or not _same(doc[k], want[k]):
            errors.append(f"expert.{k}: doc {doc.get(k, 'missing')!r}, ExpertBot "
                          f"{want.get(k, 'missing')!r}")
    return errors


def cited_test_errors(text: str, results=None) -> list[str]:
    errors = []
    cited = re.findall(r"`(tests/[\w/]+\.py)::(\w+)`", text)
    if len(cited) < 7:
        errors.append(f"only {len(cited)} tests cited")
    for path, name in cited:
        full = os.path.join(ROOT, path)
        if not os.path.isfile(full) or not re.search(rf"^def {name}\(", _read(full), re.M):
            errors.append(f"{path}::{name} does not exist")
    return errors


# --------------------------------------------------------------------------- tests
@pytest.fixture(scope="module")
def doc() -> str:
    return _read(DOC)


@pytest.fixture(scope="module")
def results() -> dict:
    return {name: _read(os.path.join(RESULTS, name)) for name in COPIED_FROM}


def test_copied_tables_equal_the_results_files(doc, results):
    assert copy_errors(doc, results) == []


def test_bot_speed_md_reports_its_json(results):
    data = json.loads(_read(os.path.join(RESULTS, "bot_speed.json")))
    assert list(data["levels"]) == list(BOT_LEVELS)
    assert speed_md_errors(results["bot_speed.md"], data) == []


def test_every_level_has_a_section(doc):
    assert section_errors(doc) == []


def test_options_tables_match_the_bot_classes(doc):
    assert option_errors(doc) == []


def test_cited_tests_exist(doc):
    assert cited_test_errors(doc) == []


def test_code_examples_run(doc, capsys):
    blocks = re.findall(r"```python\n(.*?)```", doc, re.S)
    assert blocks
    for code in blocks:
        exec(compile(code, "docs/bots.md", "exec"), {})
    out = capsys.readouterr().out
    assert str(BOT_LEVELS) in out


MUTATIONS = [
    (copy_errors, "| +16.4 [+13.3, +19.5] |", "| +16.5 [+13.3, +19.5] |"),
    (copy_errors, "| 192-8 |", "| 190-10 |"),
    (copy_errors, "| +4.86 [+3.99, +5.72] |", "| +4.86 [+3.90, +5.72] |"),
    (copy_errors, "| insane | 39.882 |", "| insane | 38.882 |"),
    (copy_errors, "| 43.601 |", "| 43.602 |"),
    (copy_errors, "| insane vs hard | 200 (100) |", "| insane vs hardd | 200 (100) |"),
    (section_errors, "### insane\n", "### Insane\n"),
    (option_errors, "| easy | `careless` | `0.25` |", "| easy | `careless` | `0.2` |"),
    (option_errors, "| `samples` | `100` | `400` |", "| `samples` | `100` | `300` |"),
    (option_errors,
     "| medium | `duck` | `True` | play under the tricks the contract no longer needs |\n", ""),
    (option_errors, "| checkpoint:PATH | `device` | `'cpu'` |",
     "| checkpoint:PATH | `device` | `'cuda'` |"),
    (option_errors, "| `temper` | `1.0` |", "| `temper` | `0.5` |"),
    (option_errors, "| `min_ess` | `0.25` |", "| `min_ess` | `0.2` |"),
    (section_errors, "### expert\n", "### Expert\n"),
    (cited_test_errors, "::test_hand_hidden_before_looking`",
     "::test_hand_hidden_before_peeking`"),
]


@pytest.mark.parametrize("i", range(len(MUTATIONS)))
def test_a_wrong_value_in_the_doc_is_caught(doc, results, i):
    check, right, wrong = MUTATIONS[i]
    assert doc.count(right) == 1, f"the doc no longer holds {right!r}: update this mutation"
    assert check(doc.replace(right, wrong), results) != []
