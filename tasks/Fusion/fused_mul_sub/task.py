"""Fusion/fused_mul_sub: input * other_mul - alpha * other_sub with broadcasting, optionally into `out`.

When all three operands are Python numbers the result is a Python number. kbx adds cases that pass
`out` and judges it after the call.
"""

import torch

from kbx.tasks import FIXED, OUTLIER, PERF, STANDARD, Call, Case, Task
from kbx.tasks.inputs import literal, rand_tensor


def reference(input, other_mul, other_sub, alpha=1, out=None):
    if not any(isinstance(v, torch.Tensor) for v in (input, other_mul, other_sub)):
        return input * other_mul - alpha * other_sub
    prod = torch.mul(input, other_mul) if isinstance(input, torch.Tensor) else torch.mul(other_mul, input)
    result = torch.sub(prod, other_sub, alpha=alpha)
    if out is not None:
        out.copy_(result)
        return out
    return result


def make_inputs(params, gen, device) -> Call:
    if "values" in params:
        args = tuple(literal(v, "float32", device) if isinstance(v, list) else v for v in params["values"])
    else:
        args = tuple(rand_tensor(params["shape"], "float32", params["mode"], gen, device) for _ in range(3))
    kwargs = {"alpha": params["alpha"]} if "alpha" in params else {}
    if params.get("out"):
        kwargs["out"] = torch.zeros(torch.broadcast_shapes(*(a.shape for a in args if isinstance(a, torch.Tensor))),
                                    dtype=torch.float32, device=device)  # fmt: skip
    return Call(args, kwargs)


def _numel(*vals):
    shapes = [v.shape for v in vals if isinstance(v, torch.Tensor)]
    n = 1
    for s in torch.broadcast_shapes(*shapes) if shapes else ():
        n *= s
    return n, sum(v.numel() for v in vals if isinstance(v, torch.Tensor))


def _flops(input, other_mul, other_sub, alpha=1, out=None):
    return 3.0 * _numel(input, other_mul, other_sub)[0]


def _bytes(input, other_mul, other_sub, alpha=1, out=None):
    n_out, n_in = _numel(input, other_mul, other_sub)
    return 4.0 * (n_out + n_in)


_X = [1.0, 2.0, 3.0]

TASK = Task(
    entry="fused_mul_sub",
    dtypes=("float32",),
    signature=(
        "fused_mul_sub(input: torch.Tensor | float, other_mul: torch.Tensor | float, other_sub: torch.Tensor | float, "
        "alpha: float = 1, out: torch.Tensor | None = None) -> torch.Tensor | float"
    ),
    description=(
        "Return input * other_mul - alpha * other_sub, each operand an fp32 tensor or a Python number, with "
        "tensors broadcast together; the result is a new fp32 tensor of the broadcast shape. If all three operands "
        "are Python numbers, return a Python float. If `out` (of the broadcast shape) is given, write the result "
        "into it and return `out`."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=[
        Case("fixed_tensors", FIXED, {"values": [_X, [0.5, 1.5, 2.5], [0.1, 0.2, 0.3]]}),
        Case("fixed_scalar_mul", FIXED, {"values": [_X, 2.0, [0.1, 0.2, 0.3]]}),
        Case("fixed_scalar_sub", FIXED, {"values": [_X, [0.5, 1.5, 2.5], 0.5]}),
        Case("fixed_all_scalars", FIXED, {"values": [3.0, 2.0, 0.5]}),
        Case("fixed_out", FIXED, {"values": [_X, [0.5, 1.5, 2.5], [0.1, 0.2, 0.3]], "alpha": 2.0, "out": True}),
        Case("fixed_broadcast", FIXED, {"values": [[[1.0], [2.0]], [0.5, 1.5, 2.5], [0.1, 0.2, 0.3]]}),
        Case("standard", STANDARD, {"shape": (512, 512), "mode": "standard", "alpha": -0.5}),
        Case("standard_out", STANDARD, {"shape": (512, 512), "mode": "standard", "alpha": -0.5, "out": True}),
        Case("outlier", OUTLIER, {"shape": (512, 512), "mode": "outlier", "alpha": -0.5}),
    ],
    perf=[Case(f"n2^{e}", PERF, {"shape": (2**e,), "mode": "uniform"}) for e in (24, 25, 26, 27)],
    flops=_flops,
    bytes=_bytes,
    inplace=True,
    notes="adds `out` and broadcasting cases; `out` judged after the call.",
)
