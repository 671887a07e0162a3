"""`python -m analysis report|export|findings|trajectories|bench`: the command line; the work is in the modules of the
same names (analysis.report, analysis.export, analysis.findings_doc, analysis.trajectories, analysis.bench)."""

from __future__ import annotations

import argparse
import importlib.util
import json
import logging
import sys
from pathlib import Path

BENCH_RUNS = 10_000
EXIT_USAGE = 2
EXIT_STALE = 1  # findings --check: the committed document is not what the records give
NEEDED = ("pandas", "statsmodels", "matplotlib")  # kbx's [analysis] extra, left out of a GPU node's install


def main(argv: list[str] | None = None) -> int:
    missing = [name for name in NEEDED if importlib.util.find_spec(name) is None]
    if missing:
        print(f"analysis: error: {', '.join(missing)} not installed: pip install -e '.[analysis]'", file=sys.stderr)
        return EXIT_USAGE
    from analysis.load import AnalysisError

    args = _parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    try:
        summary = COMMANDS[args.command](args)
    except AnalysisError as exc:
        print(f"analysis: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if summary is None:  # findings --check found the committed files stale (said on stderr)
        return EXIT_STALE
    print(json.dumps(summary, indent=1, default=str))
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m analysis", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    rep = sub.add_parser("report", help="tables, plots, deviance model and report.md from kbx runs in MLflow")
    rep.add_argument("--experiment", required=True, help="MLflow experiment name (kbx's experiment=...)")
    rep.add_argument("--filter", default="", help="MLflow filter string, e.g. \"params.hardware = 'h100'\"")
    rep.add_argument("--tracking-uri", default=None, help="default: $MLFLOW_TRACKING_URI, else sqlite:///mlruns/mlflow.db")
    rep.add_argument("--out", required=True, type=Path, help="output directory")
    rep.add_argument("--no-log", action="store_true", help="do not log the output as an MLflow analysis run")
    exp = sub.add_parser("export", help="per-round task records of MLflow stores -> one CSV (the input of findings)")
    exp.add_argument("stores", nargs="+", help="mlruns/ directories (kbx's layout), sqlite files or tracking URIs")
    exp.add_argument("--experiment", action="append", help="experiment name (repeatable; default: kbx)")
    exp.add_argument("--label", action="append", default=[], metavar="METHOD=NAME",
                     help="rename a method, e.g. predictions=geak (stored GEAK kernels run as method=predictions)")
    exp.add_argument("--filter", default="", help="MLflow filter string selecting task runs or their jobs")
    exp.add_argument("--out", type=Path, default=Path("docs/findings/records.csv"), help="the CSV to write")
    exp.add_argument("--append", action="store_true",
                     help="add to the records already in --out (and its jobs.csv); a record already there is kept")
    fin = sub.add_parser("findings", help="docs/FINDINGS.md and its plots from a records CSV (no GPU, no MLflow)")
    fin.add_argument("--records", type=Path, default=Path("docs/findings/records.csv"))
    fin.add_argument("--out", type=Path, default=Path("docs/FINDINGS.md"))
    fin.add_argument("--check", action="store_true", help="write nothing; exit 1 if the committed files are stale")
    tra = sub.add_parser("trajectories", help="one JSON line per LLM-written kernel: its conversation, verdict and "
                         "reward (docs/TRAJECTORIES.md)")  # fmt: skip
    tra.add_argument("stores", nargs="+", help="mlruns/ directories (kbx's layout), sqlite files or tracking URIs")
    tra.add_argument("--experiment", required=True, help="experiment name (kbx's experiment=...)")
    tra.add_argument("--out", required=True, type=Path, help="the JSON lines file to write")
    ben = sub.add_parser("bench", help="time the report over a synthetic sqlite store")
    ben.add_argument("--runs", type=int, default=BENCH_RUNS, help="task runs in the synthetic store")
    ben.add_argument("--dir", type=Path, default=Path("outputs/analysis-bench"), help="where the store and report go")
    ben.add_argument("--via-client", action="store_true", help="fill through MlflowClient.log_batch (slow)")
    return parser


def _report(args) -> dict:
    from analysis.load import default_tracking_uri
    from analysis.report import report

    return report(args.tracking_uri or default_tracking_uri(), args.experiment, args.filter, args.out,
                  log_to_mlflow=not args.no_log)  # fmt: skip


def _export(args) -> dict:
    from analysis.export import DEFAULT_EXPERIMENT, export, parse_labels

    return export(args.stores, args.experiment or [DEFAULT_EXPERIMENT], args.out, parse_labels(args.label), args.filter,
                  args.append)


def _findings(args) -> dict | None:
    """The document and its plots; with --check, None where the committed ones are stale."""
    if not args.check:
        from analysis.findings_doc import generate

        return generate(args.records, args.out)
    from analysis.findings_doc import stale

    differ = stale(args.records, args.out)
    if differ:
        print(f"analysis: not what `make findings` writes from {args.records}: {', '.join(differ)}", file=sys.stderr)
        return None
    return {"up_to_date": True, "records": str(args.records)}


def _trajectories(args) -> dict:
    from analysis.trajectories import export as export_trajectories

    return export_trajectories(args.stores, args.experiment, args.out)


def _bench(args) -> dict:
    from analysis.bench import run_bench

    return run_bench(args.runs, args.dir, via_client=args.via_client)


COMMANDS = {"report": _report, "export": _export, "findings": _findings, "trajectories": _trajectories,
            "bench": _bench}  # fmt: skip


if __name__ == "__main__":
    sys.exit(main())
