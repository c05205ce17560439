"""The repository stands alone: no text file points outside it, and none cites internal issue
numbers (a reader of the repository has neither; the docs under ``docs/`` say what is meant).

The files scanned are the ones git tracks (a fresh clone holds exactly these), read as text;
binary files (images, checkpoints, ``.npz``) are skipped.
"""

from __future__ import annotations

import os
import re
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# a path leaving the repository, or a spec file that exists only beside it
OUTSIDE = re.compile(r"\.\./shared|(?<![\w.-])shared/(?:RULES|BOTS|STYLE|repros)|"
                     r"\b(?:RULES|BOTS|STYLE)\.md\b|/work/|\.library/")
# "issue 4", "issues 10", "issue #13", "(task 7)": numbers that mean something only to the team
ISSUE = re.compile(r"\b(?:issue|issues|task)\s*#?\d+\b", re.IGNORECASE)
MD_LINK = re.compile(r"\]\(([^)\s#]+)(?:#[^)]*)?\)")


def tracked_text_files() -> list[str]:
    """Paths (relative to the root) of the tracked files that decode as UTF-8 text."""
    out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True)
    files = []
    for rel in out.stdout.decode().split("\0"):
        if not rel:
            continue
        path = os.path.join(ROOT, rel)
        if not os.path.isfile(path):  # deleted in the work tree, not yet committed
            continue
        with open(path, "rb") as f:
            data = f.read()
        if b"\0" in data:
            continue
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            continue
        files.append(rel)
    return files


def _hits(pattern: re.Pattern, files: list[str]) -> list[str]:
    hits = []
    for rel in files:
        if rel == "tests/docs/test_self_contained.py":  # the patterns themselves
            continue
        with open(os.path.join(ROOT, rel), encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                if pattern.search(line):
                    hits.append(f"{rel}:{n}: {line.strip()[:120]}")
    return hits


@pytest.fixture(scope="module")
def files():
    try:
        found = tracked_text_files()
    except (OSError, subprocess.CalledProcessError) as e:
        pytest.fail(f"this test needs the git checkout (git ls-files failed: {e})")
    assert "README.md" in found and "spades_env/engine.py" in found
    return found


def test_patterns_catch_what_they_are_for():
    assert OUTSIDE.search("as ../shared/RULES.md says") and OUTSIDE.search("(BOTS.md, Play)")
    assert OUTSIDE.search("see shared/STYLE.md") and OUTSIDE.search("/work/main/x")
    assert not OUTSIDE.search("docs/rules.md, Play") and not OUTSIDE.search("shared trunk")
    assert ISSUE.search("(issue 4: medium < 1 ms)") and ISSUE.search("Issue #13, kind 5")
    assert ISSUE.search("issues 10 and 11")
    assert not ISSUE.search("a known issue with ray") and not ISSUE.search("tissue 4")


def test_no_reference_outside_the_repository(files):
    hits = _hits(OUTSIDE, files)
    assert not hits, "references to files outside the repository:\n" + "\n".join(hits)


def test_no_internal_issue_numbers(files):
    hits = _hits(ISSUE, files)
    assert not hits, "internal issue numbers (say what the thing is instead):\n" + "\n".join(hits)


def test_markdown_links_resolve_inside_the_repository(files):
    bad = []
    root = os.path.realpath(ROOT)
    for rel in files:
        if not rel.endswith(".md"):
            continue
        with open(os.path.join(ROOT, rel), encoding="utf-8") as f:
            text = f.read()
        for target in MD_LINK.findall(text):
            if re.match(r"[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
                continue
            path = os.path.realpath(os.path.join(ROOT, os.path.dirname(rel), target))
            if not path.startswith(root + os.sep) or not os.path.exists(path):
                bad.append(f"{rel}: ({target})")
    assert not bad, "markdown links to nothing inside the repository:\n" + "\n".join(bad)
