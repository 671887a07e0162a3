"""Task registry and the task contract (see spec.py)."""

from kbx.tasks.registry import TaskError, default_tasks_dir, discover, select
from kbx.tasks.spec import (
    CATEGORIES,
    FIXED,
    FP32_EPS,
    OUTLIER,
    PERF,
    STANDARD,
    Call,
    Case,
    Task,
    TaskInfo,
    Tolerance,
    matmul_tolerance,
)

__all__ = [
    "CATEGORIES", "FIXED", "FP32_EPS", "OUTLIER", "PERF", "STANDARD",
    "Call", "Case", "Task", "TaskError", "TaskInfo", "Tolerance",
    "default_tasks_dir", "discover", "matmul_tolerance", "select",
]  # fmt: skip
