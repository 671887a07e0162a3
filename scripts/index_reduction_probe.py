"""On a GPU machine: how Inductor splits an index reduction (argmax, min with indices) against a value one.

Why: torch.compile of `Reduce/argmax` timed 0.01x eager and `Reduce/min` 0.23x on an H200 (2026-12-06,
docs/BENCHMARKS.md). This compiles each op as method=inductor does (`dynamic=False`), reads Inductor's
generated code back (`run_and_get_code`) for its kernels and their grid and reduction sizes, and times
eager and compiled over CALLS calls with CUDA events.

    PYTHONPATH=. python3 scripts/index_reduction_probe.py [OUT_DIR]   (writes OUT_DIR/index_reduction_probe.json)
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import torch
from torch._inductor.utils import run_and_get_code

WARMUP_CALLS = 3
CALLS = 10


def mean_ms(fn, x) -> float:
    for _ in range(WARMUP_CALLS):
        fn(x)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    start.record()
    for _ in range(CALLS):
        fn(x)
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / CALLS


def probe(fn, x) -> dict:
    compiled = torch.compile(fn, dynamic=False)
    _, code = run_and_get_code(compiled, x)
    source = "\n".join(code)
    return {"kernels": re.findall(r"def (triton_\w+)\(", source),
            "numels": re.findall(r"(xnumel|r0_numel|rnumel) = (\d+)", source),  # in kernel order
            "eager_ms": mean_ms(fn, x), "compiled_ms": mean_ms(compiled, x)}  # fmt: skip


def main() -> None:
    out = Path(sys.argv[1] if len(sys.argv) > 1 else ".")
    ops = {
        "argmax n2^26 fp16 dim0": (lambda x: torch.argmax(x, 0), torch.rand(2**26, device="cuda", dtype=torch.float16)),
        "amax n2^26 fp16 dim0": (lambda x: torch.amax(x, 0), torch.rand(2**26, device="cuda", dtype=torch.float16)),
        "min rows2^16 x1024 fp32 dim0": (lambda x: torch.min(x, 0), torch.rand(2**16, 1024, device="cuda")),
    }
    results = {}
    for name, (fn, x) in ops.items():
        results[name] = probe(fn, x)
        print(name, json.dumps(results[name]))
    (out / "index_reduction_probe.json").write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
