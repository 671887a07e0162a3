"""What the MLflow UI shows of a kbx experiment: where a link opens and which columns it starts with.

Job runs live in the experiment the user names (`kbx`), task runs in a companion experiment
(`kbx-tasks`), so the jobs experiment holds a handful of runs and every job fits on the runs
table's first page however many tasks each judged. The UI is steered only through what MLflow
itself reads: the experiment tag `mlflow.experimentKind` (model development, so the experiment
opens on its runs rather than on the GenAI trace overview), the `workflowType` query parameter,
and shared view states (experiment tags `mlflow.sharedViewState.<key>`, the JSON the UI's own
"Share" button writes), which preselect the headline metric columns and, for a job's task runs,
the search filter.
"""

from __future__ import annotations

import json
import urllib.parse

TASKS_SUFFIX = "-tasks"  # the companion experiment of task runs: `<experiment>-tasks`
HEADLINE_PREFIX = "suite/"  # a job run's suite-level figures, so that they sort together
HEADLINE = ("correct_rate", "compile_rate", "fast_1", "geomean_speedup", "n_tasks")
TASK_COLUMNS = ("correct", "compiled", "speedup", "attempts")  # a task run's metrics shown first (what it ships)
TASK_PARAMS = ("category",)  # the run name is the task
EXPERIMENT_KIND_TAG = "mlflow.experimentKind"
MODEL_DEVELOPMENT = "custom_model_development"
SHARED_VIEW_TAG = "mlflow.sharedViewState."
JOBS_VIEW = "kbx"  # share key of the jobs experiment's view
NOTE_TAG = "mlflow.note.content"  # a run's or experiment's description, rendered as markdown
PARENT_TAG = "mlflow.parentRunId"
HEADLINE_WIDTH_PX = 170  # wide enough for `suite/geomean_speedup`, so no headline is cut short
RUN_NAME_WIDTH_PX = 280  # wide enough for "best_of_n | activation | h100 | 3 rounds"
RUN_NAME_COLUMN = "attributes.`Run Name`"  # the runs table's own column ids
RUN_NAME_SORT = "tags.`mlflow.runName`"  # the sort key the UI's own "Run Name" sort uses
TRAILING_COLUMNS = ("runDateAndNestInfo", "duration")  # created, duration: after the headline metrics
LOCAL_UI = "http://127.0.0.1:5000"  # where `make ui` serves a local store


def tasks_experiment(experiment: str) -> str:
    return experiment + TASKS_SUFFIX


def headline(summary: dict[str, float]) -> dict[str, float]:
    """A job's summary under the names the jobs table shows: `suite/correct_rate`, ..."""
    return {HEADLINE_PREFIX + k: v for k, v in summary.items()}


def _column(kind: str, key: str) -> str:
    """A runs-table column id as the UI spells it: kind.`key`."""
    return f"{kind}.`{key}`"


def jobs_view() -> dict:
    """The jobs table: newest first, the run name then the headline metrics, each wide enough to read.

    The UI applies column widths only to the columns `columnOrder` lists, so the order is given too.
    """
    metrics = [_column("metrics", HEADLINE_PREFIX + k) for k in HEADLINE]
    widths = {RUN_NAME_COLUMN: RUN_NAME_WIDTH_PX, **{c: HEADLINE_WIDTH_PX for c in metrics}}
    return {"orderByKey": "attributes.start_time", "orderByAsc": False, "selectedColumns": metrics,
            "columnOrder": [RUN_NAME_COLUMN, *metrics, *TRAILING_COLUMNS], "columnWidths": widths}  # fmt: skip


def tasks_view(job_run_id: str) -> dict:
    """One job's task runs by task name: the task, its category and what the method shipped as columns."""
    columns = [_column("params", k) for k in TASK_PARAMS] + [_column("metrics", k) for k in TASK_COLUMNS]
    return {"searchFilter": f"tags.`{PARENT_TAG}` = '{job_run_id}'", "orderByKey": RUN_NAME_SORT, "orderByAsc": True,
            "selectedColumns": columns, "columnOrder": [RUN_NAME_COLUMN, *columns, *TRAILING_COLUMNS],
            "columnWidths": {RUN_NAME_COLUMN: RUN_NAME_WIDTH_PX}}  # fmt: skip


def experiment_tags() -> dict[str, str]:
    """Tags for both experiments: model development, and the jobs view under its share key."""
    return {EXPERIMENT_KIND_TAG: MODEL_DEVELOPMENT, SHARED_VIEW_TAG + JOBS_VIEW: json.dumps(jobs_view())}


def tasks_experiment_tags(job_run_id: str) -> dict[str, str]:
    """The tasks experiment's view of one job's task runs, under the job run's id as share key."""
    return {SHARED_VIEW_TAG + job_run_id: json.dumps(tasks_view(job_run_id))}


def runs_path(experiment_id: str, share_key: str = JOBS_VIEW) -> str:
    """The UI route (after `#`) of an experiment's runs table in the Model training view ("": no shared view)."""
    query = {"workflowType": "machine_learning", **({"viewStateShareKey": share_key} if share_key else {})}
    return f"/experiments/{experiment_id}/runs?{urllib.parse.urlencode(query)}"


def ui_base(tracking_uri: str) -> str:
    """The UI's address for a tracking URI: the server itself, or `make ui`'s for a database."""
    if tracking_uri.startswith(("http://", "https://")):
        return tracking_uri.rstrip("/")
    return LOCAL_UI


def runs_url(tracking_uri: str, experiment_id: str, share_key: str = JOBS_VIEW) -> str:
    return f"{ui_base(tracking_uri)}/#{runs_path(experiment_id, share_key)}"


def job_note(tasks_experiment_id: str, job_run_id: str, n_tasks: int) -> str:
    """The job run's description: a link to its task runs in the companion experiment."""
    return f"[Task runs of this job ({n_tasks})](#{runs_path(tasks_experiment_id, job_run_id)})"


def experiment_note(experiment: str, other_id: str, is_tasks: bool) -> str:
    """Each experiment's description points at the other."""
    if is_tasks:
        return (f"Task runs of the kbx experiment `{experiment}`: one run per task and job, linked to its job run by "
                f"the tag `{PARENT_TAG}`. [The jobs](#{runs_path(other_id)})")  # fmt: skip
    return (f"kbx job runs, one per method x category x hardware x iterations. Each job's description links to its "
            f"task runs in [{tasks_experiment(experiment)}](#{runs_path(other_id, '')}).")  # fmt: skip
