"""analysis.deviance and analysis.tables against numbers computed by hand, and their degenerate cases."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from analysis import deviance, tables

LN2 = math.log(2)
H34 = -(0.75 * math.log(0.75) + 0.25 * math.log(0.25))  # binary entropy of 3/4, in nats


def design_2x2() -> pd.DataFrame:
    """Category A: 3 of 4 correct, B: 1 of 4; methods m1 and m2 both 2 of 4, so method explains nothing.

    By hand: null deviance 8·2·ln2 = 16 ln 2; the category model fits each cell its mean, deviance
    16·H(3/4); method's margins are already matched by the category fit, so the full model equals
    the category model.
    """
    rows = [("A", "m1", 1), ("A", "m1", 1), ("A", "m2", 1), ("A", "m2", 0),
            ("B", "m1", 0), ("B", "m1", 0), ("B", "m2", 1), ("B", "m2", 0)]  # fmt: skip
    return pd.DataFrame([{"task": f"t{i}", "category": c, "method": m, "correct": float(y)}
                         for i, (c, m, y) in enumerate(rows)])  # fmt: skip


def test_2x2_deviances_match_the_hand_computation():
    dev = deviance.analyse(design_2x2(), replicates=50)
    null, cat = 16 * LN2, 16 * H34
    assert dev["null_deviance"] == pytest.approx(null)
    assert dev["models"]["category"]["deviance"] == pytest.approx(cat)
    assert dev["category"]["explained_deviance"] == pytest.approx(1 - H34 / LN2)  # 0.18872
    assert dev["category"]["explained_deviance"] == pytest.approx(0.188722, abs=1e-6)
    assert dev["method"]["explained_deviance"] == pytest.approx(0.0, abs=1e-9)
    assert dev["category"]["lr_test"]["chi2"] == pytest.approx(null - cat)
    assert dev["category"]["lr_test"]["p"] == pytest.approx(math.erfc(math.sqrt((null - cat) / 2)))  # chi2, 1 df
    assert dev["method"]["lr_test"]["p"] == pytest.approx(1.0)
    assert dev["category"]["drop_from_full"]["deviance"] == pytest.approx(null - cat, abs=1e-6)
    assert dev["method"]["drop_from_full"]["deviance"] == pytest.approx(0.0, abs=1e-6)
    assert dev["category"]["aic"] == pytest.approx(cat + 2 * 2)  # Bernoulli: saturated log-likelihood is 0
    assert dev["category"]["mcfadden_r2"] == pytest.approx(1 - H34 / LN2)
    assert dev["category"]["mcfadden_r2_adjusted"] == pytest.approx(1 - (-cat / 2 - 1) / (-null / 2))
    assert dev["category"]["explained_above_chance"] == pytest.approx((null - cat - 1) / null)
    assert dev["category"]["deviance_per_df"] == pytest.approx(null - cat)
    assert dev["ratio"]["category_over_method"] is None  # method explains nothing: no ratio


def test_closed_form_matches_the_glm_including_separated_levels():
    rng = np.random.default_rng(1)
    n = 400
    data = pd.DataFrame({"task": [f"t{i % 80}" for i in range(n)], "method": rng.choice(["a", "b", "c"], n)})
    data["category"] = data["task"].map(lambda t: ["X", "Y", "Z", "W"][int(t[1:]) % 4])
    data["correct"] = (rng.random(n) < data["category"].map({"X": 0.2, "Y": 0.5, "Z": 0.8, "W": 0.0})).astype(float)
    dev = deviance.analyse(data, replicates=100)
    assert dev["category"]["explained_deviance"] == pytest.approx(deviance.one_factor_explained(data, "category"), abs=1e-7)
    assert dev["method"]["explained_deviance"] == pytest.approx(deviance.one_factor_explained(data, "method"), abs=1e-7)
    assert dev["separated"]["category"] == ["W"]
    assert any("every run passes or every run fails" in note for note in dev["notes"])
    lo, hi = dev["ratio"]["ci"]
    assert lo <= dev["ratio"]["category_over_method"] <= hi
    assert dev["ratio"]["per_df"] == pytest.approx(
        (dev["category"]["deviance_per_df"]) / dev["method"]["deviance_per_df"])  # fmt: skip


def test_bootstrap_is_reproducible_and_resamples_tasks():
    data = design_2x2()
    data.loc[data.index[:2], "method"] = "m2"  # give method some effect so that ratios exist
    a = deviance.bootstrap_ratio(data, 200, seed=3)
    b = deviance.bootstrap_ratio(data, 200, seed=3)
    assert a == b
    assert a["replicates"] == 200


@pytest.mark.parametrize("factor", ["method", "category"])
def test_a_single_level_explains_nothing_and_is_reported(factor):
    data = design_2x2().assign(**{factor: "only"})
    dev = deviance.analyse(data, replicates=20)
    assert dev[factor]["explained_deviance"] == pytest.approx(0.0, abs=1e-12)
    assert dev[factor]["df"] == 0 and dev[factor]["lr_test"]["p"] is None
    assert any(f"{factor} has a single level" in note for note in dev["notes"])
    assert dev["ratio"]["ci"] is None and any("bootstrap skipped" in note for note in dev["notes"])


@pytest.mark.parametrize("value", [0.0, 1.0])
def test_an_outcome_that_never_varies_is_reported_not_fitted(value):
    dev = deviance.analyse(design_2x2().assign(correct=value))
    assert dev["category"]["explained_deviance"] is None and dev["method"]["explained_deviance"] is None
    assert "nothing to explain" in dev["notes"][0]


def test_no_rows_at_all():
    empty = design_2x2().iloc[:0]
    assert deviance.analyse(empty)["n"] == 0


def test_empty_cells_still_fit():
    extra = pd.DataFrame([{"task": "t9", "category": "C", "method": "m1", "correct": 1.0},
                          {"task": "t10", "category": "C", "method": "m1", "correct": 0.0}])  # fmt: skip
    data = pd.concat([design_2x2(), extra])
    dev = deviance.analyse(data, replicates=20)  # (C, m2) was never run
    assert dev["category"]["df"] == 2 and dev["models"]["full"]["df_model"] == 3


def outcomes(rows: list[tuple]) -> pd.DataFrame:
    cols = ["method", "hardware", "task", "category", "correct", "compiled", "speedup"]
    frame = pd.DataFrame(rows, columns=cols)
    return frame.assign(run_id=[f"r{i}" for i in range(len(frame))], job_run_id="j", seed="0")


def test_fast_p_and_speedup_distribution_by_hand():
    o = outcomes([("m", "h100", "A/a", "A", 1, 1, 0.5), ("m", "h100", "A/b", "A", 1, 1, 2.0),
                  ("m", "h100", "A/c", "A", 1, 1, 4.0), ("m", "h100", "A/d", "A", 0, 1, np.nan)])  # fmt: skip
    fp = tables.fast_p(o).iloc[0]
    assert fp["fast_0"] == 0.75 and fp["fast_1"] == 0.5 and fp["fast_1.5"] == 0.5 and fp["fast_2"] == 0.25
    dist = tables.speedup_distribution(o).iloc[0]
    assert dist["geomean"] == pytest.approx(2 ** (2 / 3)) and dist["slower_than_eager"] == pytest.approx(1 / 3)


def test_untimed_runs_give_nan_not_zero():
    o = outcomes([("m", "cpu", "A/a", "A", 1, 1, np.nan), ("m", "cpu", "A/b", "A", 0, 0, np.nan)])
    fp = tables.fast_p(o).iloc[0]
    assert fp["fast_0"] == 0.5 and math.isnan(fp["fast_1"])
    assert math.isnan(tables.speedup_distribution(o).iloc[0]["geomean"])
    assert tables.cross_hardware(o).empty and tables.fast_p_curve(o, np.array([1.0])).empty


def test_cross_hardware_spread_pools_seeds_by_geometric_mean():
    o = outcomes([("m", "h100", "A/a", "A", 1, 1, 2.0), ("m", "h100", "A/a", "A", 1, 1, 8.0),
                  ("m", "a100", "A/a", "A", 1, 1, 0.5), ("m", "a100", "A/b", "A", 1, 1, 3.0)])  # fmt: skip
    spread = tables.cross_hardware(o)
    assert len(spread) == 1  # A/b ran on one GPU only
    row = spread.iloc[0]
    assert row["ratio"] == pytest.approx(4.0 / 0.5) and row["fastest_on"] == "h100" and row["slowest_on"] == "a100"


def test_category_tables_flag_failing_everywhere_and_empty_cells():
    o = outcomes([("m1", "cpu", "F/a", "Fusion", 0, 1, np.nan), ("m2", "cpu", "F/a", "Fusion", 0, 0, np.nan),
                  ("m1", "cpu", "F/b", "Fusion", 1, 1, np.nan),
                  ("m1", "cpu", "Q/a", "Quantization", 0, 0, np.nan)])  # fmt: skip
    fail = tables.failing_everywhere(o).set_index("category")
    assert fail.loc["Fusion", "share_failing_all_methods"] == 0.5 and fail.loc["Quantization", "all_fail"]
    grid = tables.category_method_wide(tables.category_method(o), "correct_rate")
    assert math.isnan(grid.loc["Quantization", "m2"])  # never run: an empty cell, not a zero
    q = tables.quantization(o)
    assert q.iloc[0]["correct_of_total"] == "0/1"
    assert "–" in tables.to_markdown(grid.reset_index(), percent=("*",))


def per_round(rows: list[tuple]) -> pd.DataFrame:
    """(run, round, correct, speedup) rows (best so far) for one method on one GPU."""
    frame = pd.DataFrame(rows, columns=["run_id", "round", "correct", "speedup"])
    return frame.assign(method="m", hardware="h100", compiled=1.0, attempts=1.0, round_compiled=1.0,
                        round_correct=frame["correct"])  # fmt: skip


def test_trajectory_and_rescued_versus_persistent():
    f = per_round([("a", 0, 1, 2.0), ("a", 1, 1, 2.0), ("b", 0, 0, np.nan), ("b", 1, 1, 1.0),
                   ("c", 0, 0, np.nan), ("c", 1, 0, np.nan)])  # fmt: skip
    traj = tables.trajectory(f).set_index("round")
    assert traj.loc[0, "correct_rate"] == pytest.approx(1 / 3) and traj.loc[1, "correct_rate"] == pytest.approx(2 / 3)
    assert traj.loc[0, "mean_speedup"] == 2.0 and traj.loc[1, "mean_speedup"] == 1.5  # the rescued kernel is slower
    t = tables.transitions(f).iloc[0]
    assert t["transition"] == "0->1" and t["rescued"] == 1 and t["persistent"] == 1
    assert t["rescued_mean_speedup"] == 1.0 and t["persistent_mean_speedup"] == 2.0


def late_start_frame() -> pd.DataFrame:
    """Five task runs of one iterating method, rounds 0-2; None marks a round with no attempt.

    a: correct at 0, a wrong attempt at 1; b: wrong at 0, correct at 1 (rescued after a failure);
    c: first tried at 1 (wrong), correct at 2; d: first tried at 1, correct there (rescued with no
    attempt before); e: fails to compile at 0 and 2.
    """
    plan = {"a": [(1, 1), (1, 0), None], "b": [(1, 0), (1, 1), None], "c": [None, (1, 0), (1, 1)],
            "d": [None, (1, 1), None], "e": [(0, 0), None, (0, 0)]}  # fmt: skip
    rows = []
    for run, rounds in plan.items():
        best = [0.0, 0.0]
        for k, attempt in enumerate(rounds):
            if attempt:
                best = [max(best[0], attempt[0]), max(best[1], attempt[1])]
            compiled, correct = attempt or (np.nan, np.nan)
            rows.append({"run_id": run, "job_run_id": "job1", "method": "geak", "hardware": "cpu", "round": k,
                         "attempts": 1.0 if attempt else 0.0, "round_compiled": compiled, "round_correct": correct,
                         "compiled": best[0], "correct": best[1], "speedup": np.nan})  # fmt: skip
    return pd.DataFrame(rows)


def test_rescues_without_an_earlier_attempt_are_counted_apart():
    t = tables.transitions(late_start_frame()).set_index("round")
    assert t.loc[1, ["rescued", "rescued_untried_before", "persistent"]].tolist() == [2, 1, 1]  # b and d; a
    assert t.loc[2, ["rescued", "rescued_untried_before", "persistent"]].tolist() == [1, 0, 3]  # c; a, b, d


def test_headline_compile_rates_are_best_so_far_and_own_round_with_their_runs():
    from analysis import headline

    rows = {r["claim"]: r for r in headline._iteration(late_start_frame())}
    best0, best2 = (rows[f"GEAK compile rate, {r} round, best so far (geak)"] for r in ("first", "last"))
    own0, own2 = (rows[f"GEAK compile rate, {r} round's own attempts (geak)"] for r in ("first", "last"))
    assert (best0["paper"], best2["paper"]) == (own0["paper"], own2["paper"]) == headline.PAPER_GEAK_COMPILE
    assert best0["kbx"] == pytest.approx(2 / 5) and best2["kbx"] == pytest.approx(4 / 5)  # untried runs count as failing
    assert own0["kbx"] == pytest.approx(2 / 3) and own2["kbx"] == pytest.approx(1 / 2)  # only the runs tried that round
    assert [r["source"]["task_runs"] for r in (best0, best2, own0, own2)] == [5, 5, 3, 2]
    assert all(r["source"]["jobs"] == ["job1"] for r in rows.values())
    assert "3 of 5 tried round 0" in best0["source"]["subset"]
    rescued = rows["GEAK mean speedup of kernels rescued by a later round (geak)"]
    assert rescued["kbx"] is None and rescued["source"]["task_runs"] == 3  # b, c, d
    assert "(0->1: 2, 1->2: 1), 1 of them with no attempt before" in rescued["source"]["subset"]
    persistent = rows["GEAK mean speedup of kernels correct since the round before (geak)"]
    assert persistent["source"]["task_runs"] == 3  # a, b, d


def test_report_notes_task_runs_with_no_round_0_attempt():
    from analysis.report import late_starts

    assert late_starts(late_start_frame()) == [
        "geak: 2 of 5 task runs have no round-0 attempt; best-so-far rates count them as failing until their first "
        "attempt (the trajectory's `attempted` column; `rescued_untried_before` in the transitions)"]  # fmt: skip
    single = late_start_frame().query("round == 0")
    assert late_starts(single) == []  # a method that never iterates has no trajectory to qualify


def test_outcomes_leave_out_task_runs_without_a_verdict():
    """harness_error and quarantined task runs are kbx's failures, not the method's: no row."""
    from analysis.load import outcomes as final_outcomes

    statuses = ["ok", "mismatch", "harness_error", "quarantined"]
    frame = pd.DataFrame({
        "experiment": "e", "job_run_id": "j", "run_id": [f"r{i}" for i in range(4)], "method": "m",
        "task": [f"A/t{i}" for i in range(4)], "category": "A", "hardware": "h100", "gpu_name": "H100", "seed": 0,
        "round": 0, "final": True, "status": statuses, "compiled": [1.0, 1.0, 0.0, 0.0],
        "correct": [1.0, 0.0, 0.0, 0.0], "speedup": [1.2, np.nan, np.nan, np.nan],
    })  # fmt: skip
    out = final_outcomes(frame)
    assert list(out["task"]) == ["A/t0", "A/t1"] and list(out["correct"]) == [1.0, 0.0]
