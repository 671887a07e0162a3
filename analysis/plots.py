"""The report's figures as PNG files (matplotlib, Agg backend: no display needed).

Each function writes one file and returns its path. A figure whose data is absent (no timed
kernel on CPU, a single round) is still written, saying why it is empty, so report.md never
links a missing image.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

DPI = 110
FIGSIZE = (7.0, 4.2)
HIST_BINS = 30
EAGER = 1.0


def _pyplot():
    """pyplot on the Agg backend, chosen here rather than at import so importing analysis changes nothing."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(fig, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=DPI)
    _pyplot().close(fig)
    return path


def _empty(ax, message: str) -> None:
    ax.text(0.5, 0.5, message, ha="center", va="center", transform=ax.transAxes, wrap=True)
    ax.set_xticks([])
    ax.set_yticks([])


def trajectory(table: pd.DataFrame, path: Path, untimed: str) -> Path:
    """Best-so-far compile and correct rates per round (left) and mean speedup of correct kernels (right).

    One line per method, pooled over hardware (the per-hardware numbers are in the table).
    """
    plt = _pyplot()
    fig, (rates, speed) = plt.subplots(1, 2, figsize=(FIGSIZE[0] * 1.5, FIGSIZE[1]))
    if table.empty:
        _empty(rates, "no runs")
    for method, g in table.groupby("method", observed=True):
        line = rates.plot(g["round"], g["compile_rate"], "--o", label=f"{method} compiled")[0]
        rates.plot(g["round"], g["correct_rate"], "-o", color=line.get_color(), label=f"{method} correct")
        if g["mean_speedup"].notna().any():
            speed.plot(g["round"], g["mean_speedup"], "-o", label=str(method))
    rates.set(xlabel="round", ylabel="share of task runs", title="Iteration: best so far", ylim=(-0.02, 1.02))
    if not table.empty:
        rates.legend(fontsize="x-small")
        rates.set_xticks(sorted(table["round"].unique()))
    if table.empty or table["mean_speedup"].isna().all():
        _empty(speed, untimed)
    else:
        speed.axhline(EAGER, color="grey", lw=0.8)
        speed.set(xlabel="round", ylabel="mean speedup (x eager)", title="Speedup of correct kernels")
        speed.set_xticks(sorted(table["round"].unique()))
        speed.legend(fontsize="x-small")
    return _save(fig, path)


def category_correctness(long: pd.DataFrame, path: Path) -> Path:
    """Correct rate per category, one bar per method."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(FIGSIZE[0] * 1.4, FIGSIZE[1]))
    if long.empty:
        _empty(ax, "no runs")
        return _save(fig, path)
    grid = long.pivot(index="category", columns="method", values="correct_rate")
    width = 0.8 / max(1, grid.shape[1])
    x = np.arange(len(grid.index))
    for i, method in enumerate(grid.columns):
        ax.bar(x + i * width - 0.4 + width / 2, grid[method].fillna(0), width, label=str(method))
    ax.set_xticks(x, grid.index, rotation=45, ha="right")
    ax.set(ylabel="correct rate", title="Correctness per category", ylim=(0, 1.02))
    ax.legend(fontsize="x-small")
    return _save(fig, path)


def speedup_histogram(outcomes: pd.DataFrame, path: Path, untimed: str) -> Path:
    """Distribution of log speedups of correct, timed kernels per method; eager marked at 1x."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=FIGSIZE)
    timed = outcomes[(outcomes["correct"] > 0) & (outcomes["speedup"] > 0)]
    if timed.empty:
        _empty(ax, untimed)
        return _save(fig, path)
    bins = np.logspace(np.log10(timed["speedup"].min()), np.log10(timed["speedup"].max()) + 1e-9, HIST_BINS)
    for method, g in timed.groupby("method", observed=True):
        ax.hist(g["speedup"], bins=bins, alpha=0.5, label=str(method))
    ax.axvline(EAGER, color="black", lw=1)
    ax.set_xscale("log")
    ax.set(xlabel="speedup over eager (log scale)", ylabel="kernels", title="Speedups of correct kernels")
    ax.legend(fontsize="x-small")
    return _save(fig, path)


def fast_p_curves(curve: pd.DataFrame, path: Path) -> Path:
    """fast_p against p per method."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=FIGSIZE)
    if curve.empty:
        _empty(ax, "no timed kernels: fast_p for p > 0 is undefined on CPU")
        return _save(fig, path)
    for method, g in curve.groupby("method", observed=True):
        ax.plot(g["p"], g["fast_p"], label=str(method))
    ax.axvline(EAGER, color="grey", lw=0.8)
    ax.set(xlabel="p (speedup threshold)", ylabel="fast_p", title="fast_p curves", ylim=(-0.02, 1.02))
    ax.legend(fontsize="x-small")
    return _save(fig, path)
