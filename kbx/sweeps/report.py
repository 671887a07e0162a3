"""The study's summary as one MLflow run (tags kbx.role=sweep, kbx.study): best trial (single objective)
or Pareto front (several), parameter importances (from 2 complete trials on), optimisation history
plots, and every trial as CSV. Rerunning or resuming a study updates the same run."""

from __future__ import annotations

import json
import logging
import math
import tempfile
import warnings
from pathlib import Path

from kbx.core.secrets import redact

log = logging.getLogger("kbx.sweep")


def log_summary(study, spec, tracker, storage: str) -> str:
    from optuna.trial import TrialState

    client = tracker.client
    trials = study.get_trials(deepcopy=False)
    complete = [t for t in trials if t.state == TrialState.COMPLETE]
    metrics = [o.metric for o in spec.objectives]
    counts = {f"n_{s.name.lower()}": float(sum(t.state == s for t in trials))
              for s in (TrialState.COMPLETE, TrialState.PRUNED, TrialState.FAIL)}  # fmt: skip
    front = [_trial(t, metrics) for t in (study.best_trials if complete else [])]
    best = {"study": study.study_name, "storage": storage, "objectives": [vars(o) for o in spec.objectives],
            "counts": counts}  # fmt: skip
    if len(metrics) == 1:
        best["best_trial"] = front[0] if front else None
    else:
        best["pareto_front"] = front
    values = dict(counts)
    if len(metrics) == 1 and front:
        values[f"best_{metrics[0]}"] = front[0]["values"][metrics[0]]
    values["pareto_size"] = float(len(front))

    run_id = _summary_run(client, tracker.experiment_id, study.study_name, storage)
    client.log_batch(run_id, params=[], metrics=_metrics(values))
    text = lambda body, path: client.log_text(run_id, redact(body, tracker.secrets), path)  # noqa: E731
    text(json.dumps(best, indent=1, default=str), "sweep/best.json" if len(metrics) == 1 else "sweep/pareto_front.json")
    text(json.dumps(spec.summary(), indent=1, default=str), "sweep/sweep.json")
    importances = _importances(study, metrics, len(complete))
    if importances:
        text(json.dumps(importances, indent=1), "sweep/param_importances.json")
    try:
        text(study.trials_dataframe().to_csv(index=False), "sweep/trials.csv")
    except Exception as exc:  # noqa: BLE001 - a summary must not fail the sweep
        log.warning("trials.csv not written: %s", exc)
    with tempfile.TemporaryDirectory() as tmp:
        for path in _plots(study, metrics, Path(tmp)):
            client.log_artifact(run_id, str(path), "sweep")
    client.set_terminated(run_id, "FINISHED")
    log.info("study summary in MLflow run %s", run_id)
    return run_id


def _summary_run(client, experiment_id: str, study: str, storage: str) -> str:
    found = client.search_runs([experiment_id], filter_string=f"tags.`kbx.role` = 'sweep' and tags.`kbx.study` = "
                               f"'{_quote(study)}' and tags.`kbx.optuna_storage` = '{_quote(storage)}'",
                               max_results=1)  # fmt: skip
    if found:
        return found[0].info.run_id
    tags = {"kbx.role": "sweep", "kbx.study": study, "kbx.optuna_storage": storage}
    return client.create_run(experiment_id, run_name=f"sweep-{study}", tags=tags).info.run_id


def _trial(t, metrics: list[str]) -> dict:
    return {"number": t.number, "values": dict(zip(metrics, t.values, strict=True)), "params": t.params,
            "mlflow_run_id": t.user_attrs.get("mlflow_run_id"),
            "overrides": t.user_attrs.get("kbx.overrides")}  # fmt: skip


def _importances(study, metrics: list[str], n_complete: int) -> dict:
    import optuna

    if n_complete < 2:
        return {}
    out = {}
    for i, name in enumerate(metrics):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                out[name] = optuna.importance.get_param_importances(study, target=lambda t, i=i: t.values[i])
        except Exception as exc:  # noqa: BLE001 - e.g. every complete trial has the same parameters
            log.info("no parameter importances for %s: %s", name, exc)
    return out


def _plots(study, metrics: list[str], folder: Path) -> list[Path]:
    import importlib.util

    if importlib.util.find_spec("matplotlib") is None:  # a GPU node's install leaves it out
        log.info("no sweep plots: matplotlib is not installed (pip install -e '.[analysis]')")
        return []
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from optuna.visualization import matplotlib as ovm

    paths = []
    jobs = [(f"history_{m}.png", lambda i=i, m=m: ovm.plot_optimization_history(
        study, target=lambda t, i=i: t.values[i], target_name=m)) for i, m in enumerate(metrics)]  # fmt: skip
    if len(metrics) in (2, 3):
        jobs.append(("pareto_front.png", lambda: ovm.plot_pareto_front(study, target_names=metrics)))
    for name, draw in jobs:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                ax = draw()
                figure = ax.figure if hasattr(ax, "figure") else ax.flat[0].figure
                figure.savefig(folder / name, dpi=100, bbox_inches="tight")
                plt.close(figure)
            paths.append(folder / name)
        except Exception as exc:  # noqa: BLE001 - a plot must not fail the sweep
            log.info("plot %s not drawn: %s", name, exc)
    return paths


def _metrics(values: dict) -> list:
    import time

    from mlflow.entities import Metric

    now = int(time.time() * 1000)
    return [Metric(k, float(v), now, 0) for k, v in values.items() if isinstance(v, int | float) and math.isfinite(v)]


def _quote(text: str) -> str:
    return text.replace("'", "\\'")
