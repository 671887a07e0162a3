"""Math/polygamma: the n-th derivative of digamma, elementwise in fp32.

As upstream, a given `out` receives a copy of the result but the freshly computed tensor is returned;
kbx adds a case passing `out`, judged after the call.
"""

import torch

from kbx.tasks import FIXED, OUTLIER, PERF, STANDARD, Call, Case, Task
from kbx.tasks.inputs import literal, rand_tensor


def reference(n, input, *, out=None):
    if not isinstance(n, int) or isinstance(n, bool) or n < 0:
        raise ValueError("n must be a non-negative integer.")
    result = torch.special.polygamma(n, torch.as_tensor(input))
    if out is not None:
        out.copy_(result)
    return result


def make_inputs(params, gen, device) -> Call:
    if "values" in params:
        x = literal(params["values"], "float32", device)
    else:
        x = rand_tensor(params["shape"], "float32", params["mode"], gen, device)
        x = x + 0.1 if params["mode"] == "uniform" else x.abs() + 0.1
    kwargs = {"out": torch.zeros_like(x)} if params.get("out") else {}
    return Call((params["n"], x), kwargs)


def _flops(n, input, *, out=None):
    return float((n + 1) * input.numel())


def _bytes(n, input, *, out=None):
    return 2.0 * input.numel() * input.element_size()


_A = [1.0, 0.5]

TASK = Task(
    entry="polygamma",
    dtypes=("float32",),
    signature="polygamma(n: int, input: torch.Tensor, *, out: torch.Tensor | None = None) -> torch.Tensor",
    description=(
        "Return psi^(n)(x), the n-th derivative of the digamma function (n = 0 is digamma itself, n = 1 trigamma, "
        "...), elementwise as a new fp32 tensor of the input's shape; inputs here are positive. Raise ValueError "
        "unless n is a non-negative int. If `out` is given, also copy the result into `out`, but return the new "
        "tensor (not `out`)."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=[
        Case("fixed_n1", FIXED, {"values": _A, "n": 1}),
        Case("fixed_n2", FIXED, {"values": _A, "n": 2}),
        Case("fixed_n3", FIXED, {"values": _A, "n": 3}),
        Case("fixed_n4", FIXED, {"values": _A, "n": 4}),
        Case("fixed_out", FIXED, {"values": [1.0, 0.5, 3.0], "n": 2, "out": True}),
        Case("standard_n1", STANDARD, {"shape": (1024,), "mode": "standard", "n": 1}),
        Case("standard_n2", STANDARD, {"shape": (1024,), "mode": "standard", "n": 2}),
        Case("outlier_n1", OUTLIER, {"shape": (1024,), "mode": "outlier", "n": 1}),
        Case("outlier_n2", OUTLIER, {"shape": (1024,), "mode": "outlier", "n": 2}),
    ],
    perf=[Case(f"n2^{e}", PERF, {"shape": (2**e,), "mode": "uniform", "n": 1}) for e in (24, 25, 26, 27)],
    flops=_flops,
    bytes=_bytes,
    inplace=True,
    notes="adds an `out=` case; byte model is the minimum traffic (read + write), not upstream's 4 * n * 4.",
)
