"""Fusion/fused_relu_sqrt: sqrt(relu(x)) elementwise; non-float inputs become fp32; in place or into `out`.

The in-place variant overwrites an fp32 input, so the task is marked inplace: every tensor argument
is judged after the call (kbx also judges `out`, which upstream did not).
"""

import torch

from kbx.tasks import FIXED, OUTLIER, PERF, STANDARD, Call, Case, Task
from kbx.tasks.inputs import literal, rand_int, rand_tensor


def reference(input, inplace=False, out=None):
    if input.dtype not in (torch.float32, torch.float64):
        input = input.to(torch.float32)
    if inplace:
        return input.relu_().sqrt_()
    result = torch.sqrt(torch.relu(input))
    if out is not None:
        out.copy_(result)
        return out
    return result


def make_inputs(params, gen, device) -> Call:
    dtype = params.get("dtype", "float32")
    if "values" in params:
        x = literal(params["values"], dtype, device)
    elif dtype == "int64":
        x = rand_int(params["shape"], -10, 10, gen, device)
    else:
        x = rand_tensor(params["shape"], dtype, params["mode"], gen, device)
    kwargs = {"inplace": True} if params.get("inplace") else {}
    if params.get("out"):
        kwargs["out"] = torch.zeros(x.shape, dtype=torch.float32, device=device)
    return Call((x,), kwargs)


def _flops(input, inplace=False, out=None):
    return 2.0 * input.numel()


def _bytes(input, inplace=False, out=None):
    return float(input.numel() * (input.element_size() + 4))


_X = [-1.0, 0.0, 4.0, 9.0]

TASK = Task(
    entry="fused_relu_sqrt",
    dtypes=("float32", "int64"),
    signature=(
        "fused_relu_sqrt(input: torch.Tensor, inplace: bool = False, "
        "out: torch.Tensor | None = None) -> torch.Tensor"
    ),
    description=(
        "Return sqrt(max(x, 0)) elementwise. An input that is not float32 or float64 (e.g. int64) is first "
        "converted to a new float32 tensor and the result is float32; otherwise the result has input's dtype. "
        "With inplace=True, write the result into the (possibly converted) input tensor itself and return it: an "
        "fp32 `input` is overwritten, an int64 `input` is left unchanged. Otherwise, if `out` is given write the "
        "result into it and return `out`, else return a new tensor."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=[
        Case("fixed_default", FIXED, {"values": _X}),
        Case("fixed_inplace", FIXED, {"values": _X, "inplace": True}),
        Case("fixed_out", FIXED, {"values": _X, "out": True}),
        Case("fixed_int64", FIXED, {"values": [-1, 0, 4, 9], "dtype": "int64"}),
        Case("standard", STANDARD, {"shape": (1024, 1024), "mode": "standard"}),
        Case("standard_inplace", STANDARD, {"shape": (1024, 1024), "mode": "standard", "inplace": True}),
        Case("outlier", OUTLIER, {"shape": (1024, 1024), "mode": "outlier"}),
        Case("random_int64", STANDARD, {"shape": (512, 512), "dtype": "int64"}),
        Case("random_int64_inplace", STANDARD, {"shape": (512, 512), "dtype": "int64", "inplace": True}),
    ],
    perf=[Case(f"n2^{e}", PERF, {"shape": (2**e,), "mode": "uniform"}) for e in (24, 25, 26, 27)],
    flops=_flops,
    bytes=_bytes,
    inplace=True,
    notes="tensor arguments (the in-place input, `out`) judged after the call.",
)
