"""Index/expand_where: broadcast a (1, N) fp32 row to a target shape, then select it or `other` by a condition.

Upstream's perf family (256 rows of at most 2^14 columns) is a few microseconds of work; kbx's perf
shapes have 2048 rows of 2^13..2^15 columns.
"""

import torch

from kbx.tasks import OUTLIER, PERF, STANDARD, Call, Case, Task
from kbx.tasks.inputs import rand_bool, rand_tensor


def reference(input: torch.Tensor, target_sizes, cond: torch.Tensor, other: torch.Tensor) -> torch.Tensor:
    return torch.where(cond, input.expand(*target_sizes), other)


def make_inputs(params, gen, device) -> Call:
    rows, cols = params["rows"], params["cols"]
    mode = params["mode"]
    x = rand_tensor((1, cols), "float32", mode, gen, device)
    if params.get("cond") == "even_rows":
        cond = (torch.arange(rows, device=device) % 2 == 0).reshape(rows, 1)
    else:
        cond = rand_bool((rows, 1), gen, device)
    if params.get("other") == "zeros":
        other = torch.zeros((rows, cols), dtype=torch.float32, device=device)
    else:
        other = rand_tensor((rows, cols), "float32", mode, gen, device)
    return Call((x, (rows, cols), cond, other))


def _out_numel(target_sizes):
    n = 1
    for s in target_sizes:
        n *= int(s)
    return n


def _flops(input, target_sizes, cond, other):
    return float(_out_numel(target_sizes))


def _bytes(input, target_sizes, cond, other):
    # other read and the output written; the broadcast row and the condition column are small
    n = _out_numel(target_sizes)
    return float(2 * n * 4 + input.numel() * 4 + cond.numel())


def _case(name, kind, rows, cols, mode, **extra):
    return Case(name, kind, {"rows": rows, "cols": cols, "mode": mode, **extra})


TASK = Task(
    entry="expand_where",
    dtypes=("float32", "bool"),
    signature=(
        "expand_where(input: torch.Tensor, target_sizes: tuple[int, ...], cond: torch.Tensor, "
        "other: torch.Tensor) -> torch.Tensor"
    ),
    description=(
        "Broadcast the fp32 tensor input to the shape target_sizes (as input.expand(*target_sizes)), then "
        "select elementwise: out = expanded where cond is True, else other (torch.where semantics, with the "
        "bool cond and fp32 other broadcast against the target shape). Return a new fp32 tensor of shape "
        "target_sizes. In the tests input is (1, N), cond is (R, 1) and other is (R, N)."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=[
        _case("even_rows_256x4096", STANDARD, 256, 4096, "standard", cond="even_rows"),
        _case("zeros_other_32x128", STANDARD, 32, 128, "standard", other="zeros"),
        _case("standard_64x512", STANDARD, 64, 512, "standard"),
        _case("outlier_64x512", OUTLIER, 64, 512, "outlier"),
        _case("odd_width_33x1000", STANDARD, 33, 1000, "standard"),
    ],
    perf=[_case(f"2048x2^{e}", PERF, 2048, 2**e, "uniform") for e in (13, 14, 15)],
    flops=_flops,
    bytes=_bytes,
    notes="perf shapes 2048 x 2^13..2^15 (upstream: 256 rows, at most 2^14 columns)",
)
