"""The documentation holds together: the README stays short, and every link in it and in docs/ leads
to a file that exists, as does every docs/ or docs/bench file they name in backticks."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
README_MAX_LINES = 250  # what a newcomer reads in ten minutes
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")  # [text](target), images included
# a docs file named in the prose (not one a command is told to write: `--out docs/X.md`)
NAMED = re.compile(r"(?<!--out )(?<![\w/.-])(docs/[\w./-]+\.(?:md|json|png|csv))")
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
# The guides the README must lead to.
GUIDES = ("RUNNING", "METHODS", "LLM", "EVALUATION", "SECURITY", "TRACKING", "SWEEPS", "ANALYSIS", "SCALING",
          "BENCHMARKS", "ARCHITECTURE")  # fmt: skip


def links(page: Path) -> list[str]:
    """Every local link target of a markdown page (web addresses and in-page anchors left out)."""
    targets = [m.group(1) for m in LINK.finditer(page.read_text(encoding="utf-8"))]
    return [t.split("#", 1)[0] for t in targets if not re.match(r"[a-z]+:", t) and not t.startswith("#")]


def test_the_readme_is_short():
    lines = (REPO / "README.md").read_text(encoding="utf-8").count("\n")
    assert lines <= README_MAX_LINES, f"README.md has {lines} lines; at most {README_MAX_LINES}: move detail into docs/"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(REPO).as_posix())
def test_every_link_leads_to_a_file_that_exists(page):
    missing = [t for t in links(page) if not (page.parent / t).exists()]
    assert not missing, f"{page.relative_to(REPO)} links to missing files: {missing}"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(REPO).as_posix())
def test_every_docs_file_named_exists(page):
    """`docs/X.md` and `docs/bench/...json` named in the text, relative to the repository's root; the
    benchmark summaries and records also relative to docs/bench/ (`eval-...json`, `results/...json`)."""
    text = page.read_text(encoding="utf-8")
    in_bench = re.findall(r"`((?:results/|eval-|overhead-)[\w.-]+\.json)`", text)
    named = set(NAMED.findall(text)) | {f"docs/bench/{m}" for m in in_bench}
    missing = sorted(n for n in named if "DATE" not in n and not (REPO / n.rstrip(".")).exists())
    assert not missing, f"{page.relative_to(REPO)} names missing files: {missing}"


def test_the_readme_leads_to_every_guide():
    targets = set(links(REPO / "README.md"))
    assert {f"docs/{g}.md" for g in GUIDES} <= targets, sorted({f"docs/{g}.md" for g in GUIDES} - targets)


def test_every_benchmark_file_is_cited_by_a_figure():
    """A summary or record no document names is a superseded figure's: its history is git's."""
    text = "\n".join(p.read_text(encoding="utf-8") for p in PAGES)
    files = sorted((REPO / "docs" / "bench").rglob("*.json"))
    uncited = [f.relative_to(REPO).as_posix() for f in files if f.name not in text]
    assert files and not uncited, f"no document cites {uncited}"
