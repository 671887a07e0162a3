"""Why kbx and upstream disagree on a corpus line, where the evidence is mechanical.

Each rule reads only what the records hold (kbx's status, the case that failed, the task's
declared dtypes, tolerance and checks, the line's code) and names an upstream defect (each
Cause's explanation says what upstream does), a rule of kbx's, or nothing: then the cause is UNEXPLAINED and
the row carries the mismatch figures for a person to trace.
"""

from __future__ import annotations

import ast
import dataclasses

from kbx.core.record import Status
from kbx.tasks.spec import PERF, TaskInfo


@dataclasses.dataclass(frozen=True)
class Cause:
    name: str
    upstream_defect: bool  # upstream's verdict is the wrong one; the line leaves the "upstream not defective" rate
    explanation: str


MANGLED = Cause("whitespace-mangled record", True,
                "the stored line lost its line breaks after upstream judged it; the code as stored cannot parse")
TORCH_FALLBACK = Cause("torch fallback upstream accepts", True,
                       "the entry computes the output without a working Triton kernel; upstream never checks that "
                       "Triton runs")
PERF_SHAPE = Cause("wrong at a perf shape", True,
                   "kbx also checks the first perf shape; upstream's test inputs are about 10^4 times smaller")
ENTRY_CONTRACT = Cause("entry-contract change", True,
                       "the kernel does not define or accept the entry as kbx's task specifies it")
INPUT_WRITTEN = Cause("inputs written", True, "the kernel modifies its inputs; upstream never checks them")
NON_UNIQUE = Cause("non-unique or random output", True,
                   "upstream compares a random or non-unique output (signs, order, RNG stream) elementwise; "
                   "kbx judges it by the task's own check")
COMPLEX_EXACT = Cause("complex compared exactly", True, "upstream compares complex outputs with zero tolerance")
HALF_ULP = Cause("half-precision tolerance below an ulp", True,
                 "upstream's fp16/bf16 tolerance 5e-3 is below one ulp for |x| above about 1.8")
TF32_PRODUCTS = Cause("TF32 products", True,
                      "upstream's fp32 tolerance 1e-5 rejects the TF32 matrix products Triton computes by default")
UPSTREAM_ENTRY_CHECK = Cause("upstream entry check", True,
                             "upstream accepts the entry only as a top-level def or assignment named after the file "
                             "(or kernel_function); this kernel defines it otherwise")
ORPHAN = Cause("task upstream cannot resolve", True, "upstream ships the dtype variant without metadata: always fails")
UNWRITTEN = Cause("output left unwritten", True,
                  "part of the output was never written on a case upstream also runs; upstream never poisons "
                  "outputs, so stale memory (an autotuner's trial runs, an earlier case) can hold the right values")
FP64_LOOSE = Cause("fp64 at upstream's fp32 tolerance", True,
                   "upstream compares float64 outputs at its fp32 tolerance (1e-5), so a kernel that computes in fp32 "
                   "passes there; kbx's float64 tolerance is 1e-7")
EXTRA_CASE = Cause("kbx extra case", False,
                   "failed only a case beyond upstream's contract (Case.extra); kbx's judge no longer lets it decide")
TIMEOUT = Cause("kbx time limit", False, "kbx stops an attempt at its time limit; upstream has none")
UNEXPLAINED = Cause("unexplained", False, "no mechanical evidence: trace it")

CAUSES = (MANGLED, TORCH_FALLBACK, PERF_SHAPE, ENTRY_CONTRACT, INPUT_WRITTEN, NON_UNIQUE, COMPLEX_EXACT, HALF_ULP,
          TF32_PRODUCTS, UPSTREAM_ENTRY_CHECK, ORPHAN, UNWRITTEN, FP64_LOOSE, EXTRA_CASE, TIMEOUT,
          UNEXPLAINED)  # fmt: skip

# Upstream's dtype variants with perf templates but no metadata entry (its evaluator never resolves them).
UPSTREAM_ORPHANS = frozenset({"Activation/relu_fp16", "Activation/relu_bf16", "Activation/sigmoid_fp16",
                              "Activation/sigmoid_bf16", "Activation/tanh_fp16", "Activation/tanh_bf16",
                              "Math/mul_fp16", "Math/mul_bf16"})  # fmt: skip
MANGLED_MEAN_LINE_CHARS = 150  # hand-written Python averages under 70 characters a line; collapsed records over 240
TYPE_ERROR = "TypeError"
UPSTREAM_ALT_ENTRY = "kernel_function"  # the other name upstream's entry check accepts
UPSTREAM_TOLERANCE = 1e-5  # upstream's atol and rtol, for fp32 and fp64 alike


def classify(record: dict, upstream_compiled: bool, info: TaskInfo | None, code: str) -> Cause:
    """The cause of a disagreement between kbx's record and upstream's verdict on one line.

    `upstream_compiled`: upstream's call stage passed (it ran the file with its harness), so a rejection
    came from its output comparison; where it did not, no comparison rule of upstream's explains it."""
    if record["correct"]:
        return _kbx_accepts(info, code, upstream_compiled)
    return _kbx_rejects(record, info, code)


def _kbx_rejects(record: dict, info: TaskInfo | None, code: str) -> Cause:
    status = Status(record["status"])
    if status is Status.SYNTAX_ERROR and mangled(code):
        return MANGLED
    if status in (Status.NO_TRITON, Status.DECOY_KERNEL) or _passed_without_triton(record):
        return TORCH_FALLBACK
    if status is Status.INPUT_MUTATED:
        return INPUT_WRITTEN
    if status is Status.TIMEOUT:
        return TIMEOUT
    if status is Status.NO_ENTRY or (status is Status.RUNTIME_ERROR and record.get("error_type") == TYPE_ERROR
                                     and _entry_call_failed(record)):  # fmt: skip
        return ENTRY_CONTRACT
    failed_case = (record.get("mismatch") or {}).get("case", "")
    if info is not None and failed_case:
        case = next((c for c in info.all_cases() if c.name == failed_case), None)
        if case is not None and case.extra:
            return EXTRA_CASE
        if case is not None and case.kind == PERF:
            return PERF_SHAPE
        if status is Status.UNWRITTEN_OUTPUT:
            return UNWRITTEN
        if case is not None and status is Status.MISMATCH and _within_upstream_fp64(record, case, info):
            return FP64_LOOSE
    if str(record.get("reason", "")).startswith(("timed output at perf shape", "perf shape ")):
        return PERF_SHAPE
    return UNEXPLAINED


def _passed_without_triton(record: dict) -> bool:
    """Cases passed with no Triton launch at all: the output came from torch. (The judge names the first
    failing case before its no-Triton check, so such a record's status is that case's.)"""
    return bool(record.get("compiled")) and record.get("triton_launches", -1) == 0 and record.get("cases_passed", 0) > 0


def _within_upstream_fp64(record: dict, case, info: TaskInfo) -> bool:
    """A float64 case failed by less than upstream's tolerance: every element inside its atol + rtol |e|."""
    float64 = case.params.get("dtype") == "float64" or info.spec.dtypes == ("float64",)
    mismatch = record.get("mismatch") or {}
    errors = [e for e in (mismatch.get("max_abs_err"), mismatch.get("max_rel_err")) if e is not None]
    return float64 and any(e <= UPSTREAM_TOLERANCE for e in errors)


def _kbx_accepts(info: TaskInfo | None, code: str, upstream_compiled: bool) -> Cause:
    if info is None:
        return UNEXPLAINED
    spec = info.spec
    if info.id in UPSTREAM_ORPHANS:
        return ORPHAN
    if not upstream_finds_entry(code, info.stem):
        return UPSTREAM_ENTRY_CHECK
    if not upstream_compiled:
        return UNEXPLAINED  # upstream's run of the file failed before any comparison
    if spec.stochastic is not None:
        return NON_UNIQUE
    if any(d.startswith("complex") for d in spec.dtypes):
        return COMPLEX_EXACT
    if spec.tolerance.rms_atol.get("float32", 0.0) > 0.0:
        return TF32_PRODUCTS
    if any(d in ("float16", "bfloat16") for d in spec.dtypes):
        return HALF_ULP
    return UNEXPLAINED


def mangled(code: str) -> bool:
    """Whether the code lost its line breaks: lines far longer than any hand-written Python's."""
    lines = code.count("\n") + 1
    return len(code) / lines > MANGLED_MEAN_LINE_CHARS


def upstream_finds_entry(code: str, stem: str) -> bool:
    """Upstream's entry check: a top-level `def`, assignment or annotated assignment named `stem` or
    `kernel_function` (imports, classes, nested or conditional definitions do not count)."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return False
    names = {stem, UPSTREAM_ALT_ENTRY}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in names:
            return True
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        if any(isinstance(t, ast.Name) and t.id in names for t in targets):
            return True
    return False


def _entry_call_failed(record: dict) -> bool:
    """A TypeError about the entry's arguments (a signature that differs from kbx's task)."""
    text = f"{record.get('reason', '')}\n{record.get('message', '')}"
    return any(sign in text for sign in ("positional argument", "keyword argument", "required argument"))
