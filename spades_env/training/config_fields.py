"""The checks of the training config's fields (``config.Args``): each field is declared with
``checked(default, FieldCheck(...))``; ``FieldCheck`` says its type, its range, what
``--resume`` may do with it and, for fields that name files, bots or devices, its start-up test.
The row builders (``ints``, ``floats``, ``flag``, ``choice``), the tests of strings
(``*_error``: an error phrase or None) and of a run's start (``*_ready``), and the coercion and
range checks that ``config.check_field`` applies (``coerce_one``, ``range_error``).
"""

from __future__ import annotations

import math
import re
import reprlib
from dataclasses import dataclass, field
from typing import Callable

__all__ = ["FieldCheck", "checked", "ints", "floats", "flag", "choice", "BOT_NAMES",
           "run_name_error", "path_error", "device_error", "device_ready", "bot_name_error",
           "teacher_error", "bots_ready", "init_ready", "records_ready", "rules_error",
           "rules_text", "rules_list_text", "type_name", "coerce_one", "short_repr",
           "range_error"]

NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
"""A run name: one folder name."""


@dataclass(frozen=True)
class FieldCheck:
    """How one config field is checked (a row of ``FIELD_CHECKS``).

    Attributes:
        kind: ``int``, ``float``, ``bool``, ``str``, ``list[int]`` or ``list[str]``. An ``int`` is
            never a bool (a float with an integral value is taken); a ``float`` must be finite.
        lo, hi: inclusive bounds of numbers (and of list elements); ``lo_open``: ``lo`` excluded.
        max_len: most characters of a string / elements of a list.
        check: extra test of a string (each element of a ``list[str]``): returns an error phrase,
            or None when the value is fine.
        ready: start-up test (``check_ready``) of the whole value: a file that must exist, a bot
            that must load, a device that must be present; returns an error phrase or None.
        normalize: the value as the field stores it, before any check (a YAML mapping as
            text); None keeps it.
        resume: ``"fixed"`` (a resumed run keeps the checkpoint's value; another is refused),
            ``"free"`` (``--resume`` may change it) or ``"process"`` (belongs to one process: never
            taken from a checkpoint).
        rule: the allowed values in words (messages and ``field_table``); by default made from
            the kind and bounds.
    """

    kind: str
    lo: float | None = None
    hi: float | None = None
    lo_open: bool = False
    max_len: int = 64
    check: Callable[[str], str | None] | None = None
    ready: Callable[[object], str | None] | None = None
    resume: str = "fixed"
    rule: str = ""
    normalize: Callable[[object], object] | None = None

    def describe(self) -> str:
        """The allowed values in words, e.g. ``an integer in [1, 1048576]``."""
        if self.rule:
            return self.rule
        if self.kind == "bool":
            return "true or false"
        if self.kind in ("int", "float", "list[int]"):
            lo = "(" if self.lo_open else "["
            rng = f"in {lo}{_fmt(self.lo)}, {_fmt(self.hi)}]"
            if self.kind == "list[int]":
                return f"a list of at most {self.max_len} integers {rng}"
            return f"{'an integer' if self.kind == 'int' else 'a finite number'} {rng}"
        return f"a string of at most {self.max_len} characters"


def _fmt(x) -> str:
    if isinstance(x, float):
        return str(int(x)) if x.is_integer() and abs(x) < 1e15 else f"{x:g}"
    return str(x)


def ints(lo, hi, resume="fixed") -> FieldCheck:
    """An integer in ``[lo, hi]``."""
    return FieldCheck("int", lo, hi, resume=resume)


def floats(lo, hi, lo_open=False, resume="fixed") -> FieldCheck:
    """A finite number in ``[lo, hi]`` (``(lo, hi]`` with ``lo_open``)."""
    return FieldCheck("float", float(lo), float(hi), lo_open, resume=resume)


def flag(resume="fixed") -> FieldCheck:
    """true or false."""
    return FieldCheck("bool", resume=resume)


def run_name_error(v: str) -> str | None:
    if not NAME_RE.fullmatch(v):
        return ("must be one folder name: 1-128 letters, digits, '.', '_' or '-', starting with a "
                "letter or digit (no '/', no '..')")
    return None


def path_error(v: str) -> str | None:
    if not v.strip():
        return "must not be empty"
    if "\0" in v:
        return "must not contain a NUL character"
    return None


def device_error(v: str) -> str | None:
    from spades_env.devices import check_device
    try:
        check_device(v, "device", present=False)
    except ValueError as e:
        return str(e)
    return None


def device_ready(v) -> str | None:
    from spades_env.devices import check_device
    try:
        check_device(v, "device")
    except ValueError as e:
        return str(e)
    return None


def bot_name_error(v: str) -> str | None:
    from spades_env.bots import BOT_LEVELS
    if v in BOT_LEVELS:
        return None
    if v.startswith("checkpoint:") and not path_error(v[len("checkpoint:"):]):
        return None
    return f"{v!r} is not a bot: choose one of {list(BOT_LEVELS)} or 'checkpoint:PATH'"


def teacher_error(v: str) -> str | None:
    return None if v == "" else bot_name_error(v)


def bots_ready(value) -> str | None:
    """Each ``checkpoint:PATH`` bot must load (levels are checked by ``bot_name_error``)."""
    names = value if isinstance(value, list) else [value]
    for n in names:
        if isinstance(n, str) and n.startswith("checkpoint:"):
            from spades_env.bots import make_bot
            try:
                make_bot(n, seed=0)
            except (ValueError, OSError) as e:
                return str(e)
    return None


def init_ready(v: str) -> str | None:
    if not v:
        return None
    from spades_env.agents.checkpoint import check_model, load_checkpoint
    try:
        check_model(load_checkpoint(v), v)
    except (ValueError, FileNotFoundError) as e:
        return str(e)
    return None


def records_ready(v: str) -> str | None:
    if not v:
        return None
    from .teacher_records import load_records
    try:
        load_records(v)
    except ValueError as e:
        return str(e)
    return None


def rules_error(v: str) -> str | None:
    from spades_env import Rules
    try:
        Rules.parse(v)
    except (ValueError, KeyError) as e:
        return str(e)
    return None


def rules_text(v):
    """A rules mapping of a YAML config (``{preset: house, min_team_bid: 4}``) as the text
    ``Rules.parse`` reads (``house,min_team_bid=4``); anything else as it is."""
    if isinstance(v, dict):
        return ",".join(f"{k}={x}" for k, x in v.items())
    return v


def rules_list_text(v):
    """``rules_text`` of each element of a list (a list of rules mappings); anything else as it
    is."""
    if isinstance(v, list):
        return [rules_text(x) for x in v]
    return v


def choice(*options, resume="fixed") -> FieldCheck:
    """One of the strings ``options``."""
    def check(v):
        return None if v in options else f"must be one of {list(options)}"
    return FieldCheck("str", check=check, resume=resume, rule=" | ".join(options))


BOT_NAMES = "random easy medium hard insane checkpoint:PATH"
"""The bots a field may name, in words (its ``rule``)."""


def checked(default, check: FieldCheck):
    """A field of ``Args``: its ``default`` (a list is copied for each instance) and its ``check``
    (``metadata["check"]``, collected into ``FIELD_CHECKS``)."""
    if isinstance(default, list):
        return field(default_factory=lambda: list(default), metadata={"check": check})
    return field(default=default, metadata={"check": check})


def type_name(kind: str) -> str:
    """A field's ``kind`` in words (``an integer``...)."""
    return {"int": "an integer", "float": "a number", "bool": "true/false", "str": "a string",
            "list[int]": "a list of integers", "list[str]": "a list of strings"}[kind]


def coerce_one(kind: str, value):
    """``value`` as ``kind`` (``int``/``float``/``bool``/``str``), or raise TypeError."""
    if kind == "bool":
        if isinstance(value, bool):
            return value
    elif kind == "int":
        if isinstance(value, int) and not isinstance(value, bool):
            return int(value)
        if isinstance(value, float) and math.isfinite(value) and value.is_integer():
            return int(value)
    elif kind == "float":
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
    elif kind == "str":
        if isinstance(value, str):
            return value
    raise TypeError(kind)


_REPR = reprlib.Repr()
_REPR.maxlevel, _REPR.maxlist, _REPR.maxtuple, _REPR.maxdict = 3, 8, 8, 8
_REPR.maxstring, _REPR.maxother, _REPR.maxlong = 80, 80, 40


def short_repr(value) -> str:
    """At most 80 characters of ``repr(value)``, made without expanding large or deeply nested
    (shared) values."""
    text = _REPR.repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def range_error(row: FieldCheck, value) -> str | None:
    """Why ``value`` (already of ``row.kind``) is outside ``row``, or None."""
    def number(x):
        if row.kind == "float" and not math.isfinite(x):
            return "is not finite"
        if row.lo is not None and (x < row.lo or (row.lo_open and x == row.lo)):
            return "is too small"
        if row.hi is not None and x > row.hi:
            return "is too large"
        return None
    if row.kind in ("int", "float"):
        return number(value)
    if row.kind == "str":
        if len(value) > row.max_len:
            return f"is longer than {row.max_len} characters"
        return row.check(value) if row.check else None
    if row.kind.startswith("list["):
        if len(value) > row.max_len:
            return f"has more than {row.max_len} elements"
        for i, v in enumerate(value):
            why = number(v) if row.kind == "list[int]" else (
                "is longer than 4096 characters" if len(v) > 4096 else
                (row.check(v) if row.check else None))
            if why:
                return f"element {i} ({short_repr(v)}) {why}" if row.kind == "list[int]" else \
                    f"element {i}: {why}"
    return None


