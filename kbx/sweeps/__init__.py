"""Optuna sweeps over kbx.run configurations (`python -m kbx.sweep SWEEP.yaml [overrides...]`).

spec: the sweep file and command-line overrides, validated before any trial starts.
compose: kbx.run configurations through Hydra's compose API (exactly what `python -m kbx.run` gets).
study: storage, sampler, pruner and the trial loop (one MLflow parent run per trial).
report: the study's summary (best trial or Pareto front, importances, plots) as MLflow artifacts.
"""
