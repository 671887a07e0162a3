"""`python -m kbx.fidelity [LABEL=]RESULTS.json ... --corpus CORPUS.jsonl --out docs/FIDELITY.md`

Compares kbx's verdicts (`python -m kbx.evaluate CORPUS --json RESULTS.json`, one file per GPU;
LABEL names the GPU, by default the file's stem) with the upstream verdicts on each corpus line,
writes the report and prints the agreement per GPU. Exit status 1 when a disagreement is unexplained.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from pathlib import Path

from kbx.core.errors import USER_ERRORS, ConfigError

PROG = "kbx.fidelity"
EXIT_UNEXPLAINED = 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=f"python -m {PROG}", description=__doc__)
    parser.add_argument("results", nargs="+", help="kbx.evaluate --json files, one per GPU, optionally LABEL=PATH")
    parser.add_argument("--corpus", default="../shared/corpus/geak_rounds.jsonl", help="the corpus the results judged")
    parser.add_argument("--out", default="", help="write the markdown report here (e.g. docs/FIDELITY.md)")
    args = parser.parse_args(argv)
    try:
        comparisons, text = build(args.results, args.corpus, _command(argv))
        if args.out:
            _write(args.out, text)
    except USER_ERRORS as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2
    unexplained = 0
    for c in comparisons:
        rest = sum(r.cause.name == "unexplained" for r in c.disagreements)
        unexplained += rest
        print(f"{c.label}: {c.agree} of {len(c.judged)} judged lines agree with upstream; "
              f"{len(c.disagreements)} disagree ({c.upstream_defective} upstream defects, {rest} unexplained); "
              f"{len(c.no_verdict)} without a kbx verdict; {len(c.missing)} not in the results")  # fmt: skip
    return EXIT_UNEXPLAINED if unexplained else 0


def build(results: list[str], corpus_path: str, command: str):
    from kbx.fidelity.report import render
    from kbx.fidelity.verdicts import compare_results, read_corpus
    from kbx.tasks.registry import discover

    corpus = read_corpus(corpus_path)
    tasks = discover()
    labelled = [_label(r) for r in results]
    labels = [label for label, _ in labelled]
    if len(set(labels)) != len(labels):
        raise ConfigError(f"two results files have the same label ({', '.join(labels)}): name them LABEL=PATH")
    comparisons = [compare_results(label, path, corpus, tasks) for label, path in labelled]
    return comparisons, render(comparisons, corpus_path, command)


def _label(arg: str) -> tuple[str, str]:
    label, sep, path = arg.partition("=")
    if not sep:
        return Path(arg).stem, arg
    if not label or not path:
        raise ConfigError(f"results argument {arg!r}: expected LABEL=PATH or PATH")
    return label, path


def _command(argv: list[str] | None) -> str:
    args = sys.argv[1:] if argv is None else argv
    return " ".join(["python -m", PROG, *map(shlex.quote, args)])


def _write(path: str, text: str) -> None:
    """Atomically: a failed run never leaves a half-written report."""
    target = Path(path)
    if not target.parent.is_dir():
        raise ConfigError(f"--out {path}: directory {target.parent} does not exist")
    tmp = target.with_name(target.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, target)


if __name__ == "__main__":
    sys.exit(main())
