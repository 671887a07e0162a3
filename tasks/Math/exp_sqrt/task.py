"""Math/exp_sqrt: sqrt(exp(x)) elementwise in fp32 (exp first, so exp overflow gives inf), optionally into `out`.

kbx judges `out` after the call in the case that passes it (upstream compared only the return value).
"""

import torch

from kbx.tasks import FIXED, OUTLIER, PERF, STANDARD, Call, Case, Task
from kbx.tasks.inputs import literal, rand_tensor


def reference(input: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    result = torch.sqrt(torch.exp(input))
    if out is not None:
        out.copy_(result)
        return out
    return result


def make_inputs(params, gen, device) -> Call:
    if "values" in params:
        x = literal(params["values"], "float32", device)
    else:
        x = rand_tensor(params["shape"], "float32", params["mode"], gen, device).clamp(-10.0, 10.0)
    kwargs = {"out": torch.zeros_like(x)} if params.get("out") else {}
    return Call((x,), kwargs)


def _flops(input, out=None):
    return 6.0 * input.numel()


def _bytes(input, out=None):
    return 2.0 * input.numel() * input.element_size()


TASK = Task(
    entry="exp_sqrt",
    dtypes=("float32",),
    signature="exp_sqrt(input: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor",
    description=(
        "Return sqrt(exp(x)) elementwise as a new fp32 tensor of the input's shape (computed as exp then sqrt, "
        "so x large enough for exp to overflow fp32 gives inf). If `out` (same shape and dtype) is given, write "
        "the result into it and return `out`; `input` must not change."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=[
        Case("fixed_positive", FIXED, {"values": [1.0, 2.0, 3.0]}),
        Case("fixed_negative", FIXED, {"values": [-1.0, -2.0, -3.0]}),
        Case("fixed_zeros", FIXED, {"values": [0.0, 0.0, 0.0]}),
        Case("fixed_out", FIXED, {"values": [1.0, 2.0, 3.0], "out": True}),
        # upstream's cases never overflow: kbx's own extra
        Case("fixed_overflow", FIXED, {"values": [88.0, 89.0, 100.0, -100.0]}, extra=True),
        Case("standard", STANDARD, {"shape": (64, 64), "mode": "standard"}),
        Case("outlier", OUTLIER, {"shape": (64, 64), "mode": "outlier"}),
    ],
    perf=[Case(f"n2^{e}", PERF, {"shape": (2**e,), "mode": "uniform"}) for e in (24, 25, 26, 27)],
    dtype_bound={"fixed_overflow": "exp overflows fp32 to inf by the task's definition; in float64 it does not"},
    flops=_flops,
    bytes=_bytes,
    inplace=True,
    notes="`out` judged after the call; adds a case where exp overflows (inf must appear).",
)
