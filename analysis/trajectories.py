"""`python -m analysis trajectories STORE... --experiment NAME --out FILE.jsonl`: one line per task attempt.

Each line is a kernel an LLM wrote and kbx judged: the conversation that produced it in the chat format
fine-tuning tools read (`messages`: the prompt's system and user turns, earlier assistant turns and
fed-back verdicts, then the answer as the last assistant turn), the kernel judged, its verdict record,
and a reward (analysis.reward). The schema is docs/TRAJECTORIES.md; `read` reads a file back.

The source is what every task run of an LLM method carries, traces on or off: `llm/*.json` (each call's
messages and answer, with the label of the attempt made from it) and `attempts/*.json` and `.py` (each
attempt's record and code). An attempt without the call that made it (a method without an LLM, a run of
a kbx older than the label) gives no line; the summary counts them.
"""

from __future__ import annotations

import dataclasses
import json
import re
import tempfile
from pathlib import Path

from analysis import reward as rewards
from analysis.load import AnalysisError
from kbx.core.record import Status
from kbx.tracking.ui_links import tasks_experiment

SCHEMA = "kbx.trajectory/1"
ROUND_LABEL = re.compile(r"^round(\d+)/(.+)$")  # an attempt's label: round<k>/<the method's own label>


@dataclasses.dataclass(frozen=True)
class Trajectory:
    """One line of the file (docs/TRAJECTORIES.md says what each field holds)."""

    schema: str
    experiment: str
    job_run_id: str
    task_run_id: str
    method: str
    model: str
    config_hash: str
    hardware: str
    task: str
    category: str
    round: int
    label: str
    role: str
    sample: int
    messages: list
    kernel: str
    verdict: dict
    reward: float | None
    scored: bool
    reward_reason: str


def export(stores: list[str], experiment: str, out: Path) -> dict:
    """Write the trajectories of `experiment` in every store to `out` (JSON lines); returns counts."""
    from kbx.tracking.sync import SyncError, store_uri

    lines, skipped, runs = [], 0, 0
    for place in stores:
        try:
            uri = store_uri(place)
        except SyncError as exc:
            raise AnalysisError(str(exc)) from exc
        found, missing, n_runs = collect(uri, experiment)
        lines += found
        skipped += missing
        runs += n_runs
    if not runs:
        raise AnalysisError(f"no finished task runs of experiment {experiment!r} in {', '.join(stores)}")
    write(lines, out)
    return {"out": str(out), "lines": len(lines), "task_runs": runs, "scored": sum(t.scored for t in lines),
            "attempts_without_their_llm_call": skipped}  # fmt: skip


def collect(uri: str, experiment: str) -> tuple[list[Trajectory], int, int]:
    """(lines, attempts without their call, finished task runs) of one store's experiment."""
    from mlflow.tracking import MlflowClient

    from kbx.tracking.sync import all_runs

    client = MlflowClient(tracking_uri=uri)
    jobs_experiment = client.get_experiment_by_name(experiment)
    companion = client.get_experiment_by_name(tasks_experiment(experiment))
    if jobs_experiment is None or companion is None:
        return [], 0, 0
    jobs = {r.info.run_id: r for r in all_runs(client, jobs_experiment.experiment_id, "tags.`kbx.role` = 'job'")}
    tasks = all_runs(client, companion.experiment_id, "tags.`kbx.role` = 'task' and attributes.status = 'FINISHED'")
    lines, skipped, runs = [], 0, 0
    for run in sorted(tasks, key=lambda r: (r.info.start_time, r.info.run_id)):
        job = jobs.get(run.data.tags.get("mlflow.parentRunId", ""))
        if job is None:
            continue
        found, missing = task_lines(client, experiment, job, run)
        lines += found
        skipped += missing
        runs += 1
    return lines, skipped, runs


def task_lines(client, experiment: str, job, run) -> tuple[list[Trajectory], int]:
    """The lines of one task run, in the order its attempts were judged; and how many attempts had no call."""
    with tempfile.TemporaryDirectory(prefix="kbx-trajectories-") as tmp:
        root = Path(client.download_artifacts(run.info.run_id, "", tmp))
        calls = [json.loads(p.read_text()) for p in sorted((root / "llm").glob("*.json"))]
        records = sorted((root / "attempts").glob("*.json"))
        attempts = [(json.loads(p.read_text()), _read(p.with_suffix(".py"))) for p in records]
    made = {(c["round"], c["proposal"]): c for c in calls if c.get("proposal")}
    params = {**job.data.params, **run.data.params}
    lines, skipped = [], 0
    for record, code in attempts:
        label = ROUND_LABEL.match(record.get("label", ""))
        call = made.get((int(label.group(1)), label.group(2))) if label else None
        if call is None:
            skipped += 1
            continue
        value, why = rewards.reward(Status(record["status"]), _number(record.get("speedup")))
        lines.append(Trajectory(
            SCHEMA, experiment, job.info.run_id, run.info.run_id, params.get("method", ""), call.get("model") or
            params.get("llm_model", ""), params.get("config_hash", ""), params.get("hardware", ""), record["task"],
            params.get("category", ""), int(label.group(1)), record["label"], call["role"], int(call["sample"]),
            [*call["messages"], {"role": "assistant", "content": call["response"]}], code, record, value,
            value is not None, why,
        ))  # fmt: skip
    lines.sort(key=lambda t: (t.round, t.label))
    return lines, skipped


def write(lines: list[Trajectory], out: Path) -> None:
    """JSON lines, written whole or not at all (a half-written file never stands in for a good one)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = out.with_name(out.name + ".partial")
    with open(partial, "w", encoding="utf-8") as f:
        for line in lines:
            f.write(json.dumps(dataclasses.asdict(line), ensure_ascii=False) + "\n")
    partial.replace(out)


def read(path: Path) -> list[Trajectory]:
    """The lines of a trajectories file; a line of another schema is the caller's error."""
    fields = {f.name for f in dataclasses.fields(Trajectory)}
    out = []
    for n, text in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        data = json.loads(text)
        if data.get("schema") != SCHEMA or set(data) != fields:
            raise AnalysisError(f"{path}:{n}: not a {SCHEMA} line")
        out.append(Trajectory(**data))
    return out


def _read(path: Path) -> str:
    return path.read_text(encoding="utf-8") if path.is_file() else ""


def _number(value) -> float:
    return float("nan") if value is None else float(value)
