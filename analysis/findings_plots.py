"""The figures of docs/FINDINGS.md: kbx's value per GPU with its interval, the paper's value beside it.

PNG files without a timestamp or version stamp, so `make findings` over the same records writes
the same bytes. A figure with nothing to show is still written, saying why.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from analysis.findings import Figure
from analysis.plots import DPI, FIGSIZE, _empty, _pyplot

PAPER_STYLE = {"marker": "*", "color": "black", "markersize": 12, "linestyle": "none"}
NO_METADATA = {"Software": None}  # matplotlib stamps its version otherwise


def save(fig, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=DPI, metadata=NO_METADATA)
    _pyplot().close(fig)
    return path


def bars(figures: list[Figure], path: Path, title: str, ylabel: str, label) -> Path:
    """One bar per figure (kbx's value, interval as an error bar) and the paper's value as a star; `label(figure)`
    names the bar."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(max(FIGSIZE[0], 1.1 * len(figures) + 2), FIGSIZE[1]))
    shown = [f for f in figures if f.value is not None]
    if not shown:
        _empty(ax, "not computable from these records: " + (figures[0].why_missing if figures else "no figures"))
        return save(fig, path)
    x = np.arange(len(shown))
    values = np.array([f.value for f in shown])
    low = np.clip([f.value - f.interval[0] if f.interval else 0.0 for f in shown], 0, None)  # a percentile interval
    # need not contain the point estimate (skewed resamples); the bar then shows only the side it reaches
    high = np.clip([f.interval[1] - f.value if f.interval else 0.0 for f in shown], 0, None)
    ax.bar(x, values, yerr=np.vstack([low, high]), capsize=4, color="tab:blue", alpha=0.8, label="kbx (95% interval)")
    papers = [(i, f.paper) for i, f in enumerate(shown) if f.paper is not None]
    if papers:
        ax.plot([i for i, _ in papers], [p for _, p in papers], **PAPER_STYLE, label="paper")
    ax.set_xticks(x, [label(f) for f in shown], fontsize="x-small")
    ax.set(ylabel=ylabel, title=title)
    ax.legend(fontsize="x-small")
    return save(fig, path)


def rounds(figures: list[Figure], path: Path) -> Path:
    """GEAK per round, one line per GPU: compile rate (best so far and own attempts) and mean speedup."""
    plt = _pyplot()
    fig, (rate, speed) = plt.subplots(1, 2, figsize=(FIGSIZE[0] * 1.5, FIGSIZE[1]))
    frame = pd.DataFrame([{"kind": f.key.rsplit("_r", 1)[0], "round": int(f.key.rsplit("_r", 1)[1]), "gpu": f.hardware,
                           "value": f.value, "low": f.interval[0] if f.interval else np.nan,
                           "high": f.interval[1] if f.interval else np.nan, "paper": f.paper}
                          for f in figures if f.value is not None])  # fmt: skip
    if frame.empty:
        _empty(rate, "not computable from these records: no method ran more than one round")
        _empty(speed, "")
        return save(fig, path)
    for ax, kinds, ylabel in ((rate, ("geak_compile_best", "geak_compile_own"), "compile rate"),
                              (speed, ("geak_speedup",), "mean speedup of correct kernels (x eager)")):  # fmt: skip
        for (kind, gpu), g in frame[frame["kind"].isin(kinds)].groupby(["kind", "gpu"]):
            g = g.sort_values("round")
            err = np.clip(np.vstack([g["value"] - g["low"].fillna(g["value"]), g["high"].fillna(g["value"]) - g["value"]]),
                          0, None)  # a percentile interval need not contain its point estimate
            ax.errorbar(g["round"], g["value"], yerr=err, marker="o", capsize=3,
                        label=f"{gpu} {kind.removeprefix('geak_').replace('_', ' ')}")  # fmt: skip
        paper = frame[frame["kind"] == kinds[0]].dropna(subset=["paper"]).drop_duplicates("round")
        if len(paper):
            ax.plot(paper["round"], paper["paper"], **PAPER_STYLE, label="paper")
        ax.set(xlabel="round", ylabel=ylabel)
        ax.set_xticks(sorted(frame["round"].unique()))
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize="x-small")
    rate.set(title="GEAK compile rate by round", ylim=(-0.02, 1.02))
    speed.set(title="GEAK speedup by round")
    return save(fig, path)


def cross_gpu(outcomes: pd.DataFrame, gpus: list[str], path: Path) -> Path:
    """Each kernel's speedup on the first GPU against the second (log-log); the diagonal is no spread."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(FIGSIZE[1] * 1.3, FIGSIZE[1] * 1.3))
    timed = outcomes[(outcomes["correct"] > 0) & (outcomes["speedup"] > 0)]
    logs = timed.assign(log=np.log(timed["speedup"])).groupby(["method", "task", "hardware"])["log"].mean()
    grid = np.exp(logs).unstack("hardware").reindex(columns=gpus[:2]).dropna() if len(gpus) >= 2 else pd.DataFrame()
    if grid.empty:
        _empty(ax, f"one GPU in the records ({', '.join(gpus)}): no cross-GPU spread" if len(gpus) < 2
               else "no kernel was correct and timed on two GPUs")  # fmt: skip
        return save(fig, path)
    first, second = gpus[0], gpus[1]
    for method, g in grid.groupby(level="method"):
        ax.scatter(g[first], g[second], s=12, alpha=0.7, label=str(method))
    ends = [grid.min().min() * 0.8, grid.max().max() * 1.25]
    ax.plot(ends, ends, color="grey", lw=0.8)
    ax.set(xscale="log", yscale="log", xlabel=f"speedup on {first}", ylabel=f"speedup on {second}",
           title="Same kernel, two GPUs")  # fmt: skip
    ax.legend(fontsize="x-small")
    return save(fig, path)
