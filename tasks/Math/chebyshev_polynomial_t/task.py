"""Math/chebyshev_polynomial_t: Chebyshev polynomials of the first kind T_n(x) for an integer degree n, in fp32.

As upstream, `out` is accepted and ignored (a new tensor is returned).
"""

import torch

from kbx.tasks import FIXED, OUTLIER, PERF, STANDARD, Call, Case, Task
from kbx.tasks.inputs import literal, rand_tensor


def reference(input: torch.Tensor, n: int, out: torch.Tensor | None = None) -> torch.Tensor:
    return torch.special.chebyshev_polynomial_t(input, n)


def make_inputs(params, gen, device) -> Call:
    if "values" in params:
        x = literal(params["values"], "float32", device)
    else:
        x = rand_tensor(params["shape"], "float32", params["mode"], gen, device)
        if params.get("clamp"):
            x = x.clamp(-1.0, 1.0)  # about a third of the draws land exactly on +-1
    return Call((x, params["n"]))


def _flops(input, n, out=None):
    return float(input.numel() * 3 * (n - 1)) if n > 1 else 0.0


def _bytes(input, n, out=None):
    return 2.0 * input.numel() * input.element_size()


_HALVES = [0.5, -0.5, 0.0]

TASK = Task(
    entry="chebyshev_polynomial_t",
    dtypes=("float32",),
    signature="chebyshev_polynomial_t(input: torch.Tensor, n: int, out: torch.Tensor | None = None) -> torch.Tensor",
    description=(
        "Return T_n(x), the Chebyshev polynomial of the first kind of integer degree n >= 0 (T_0 = 1, T_1 = x, "
        "T_{k+1} = 2 x T_k - T_{k-1}; equal to cos(n * arccos(x)) on [-1, 1]), elementwise as a new fp32 tensor of "
        "the input's shape, as torch.special.chebyshev_polynomial_t. At |x| = 1 the result is exactly 1, or -1 "
        "when x = -1 and n is odd. The `out` argument is accepted but ignored."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=[
        Case("fixed_n0", FIXED, {"values": _HALVES, "n": 0}),
        Case("fixed_n1", FIXED, {"values": _HALVES, "n": 1}),
        Case("fixed_n3", FIXED, {"values": _HALVES, "n": 3}),
        Case("fixed_n2", FIXED, {"values": [-1.0, -0.5, -0.2], "n": 2}),
        Case("standard_n5", STANDARD, {"shape": (64, 64), "mode": "standard", "clamp": True, "n": 5}),
        Case("standard_n10", STANDARD, {"shape": (64, 64), "mode": "standard", "clamp": True, "n": 10}),
        Case("outlier_n5", OUTLIER, {"shape": (64, 64), "mode": "outlier", "clamp": True, "n": 5}),
        Case("outlier_n10", OUTLIER, {"shape": (64, 64), "mode": "outlier", "clamp": True, "n": 10}),
    ],
    perf=[Case(f"n2^{e}", PERF, {"shape": (2**e,), "mode": "uniform", "n": 3}) for e in (24, 25, 26, 27)],
    flops=_flops,
    bytes=_bytes,
)
