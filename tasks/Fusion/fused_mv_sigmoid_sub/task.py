"""Fusion/fused_mv_sigmoid_sub: sigmoid(input @ vec) - alpha * other, optionally into `out`.

kbx judges `out` after the call in the cases that pass it (upstream compared only the return value).
"""

import torch

from kbx.tasks import FIXED, OUTLIER, PERF, STANDARD, Call, Case, Task, matmul_tolerance
from kbx.tasks.inputs import literal, rand_tensor


def reference(input, vec, other, alpha=1, *, out=None) -> torch.Tensor:
    result = torch.sub(torch.sigmoid(torch.mv(input, vec)), other, alpha=alpha)
    if out is not None:
        out.copy_(result)
        return out
    return result


def make_inputs(params, gen, device) -> Call:
    if "values" in params:
        a = literal(params["values"], "float32", device)
        v = literal(params["vec"], "float32", device)
        o = params["other"]
        other = literal(o, "float32", device) if isinstance(o, list) else o
    else:
        m, k = params["shape"]
        mode = params["mode"]
        a = rand_tensor((m, k), "float32", mode, gen, device)
        v = rand_tensor((k,), "float32", mode, gen, device)
        other = params["other"] if "other" in params else rand_tensor((m,), "float32", mode, gen, device)
    kwargs = {"alpha": params["alpha"]} if "alpha" in params else {}
    if params.get("out"):
        kwargs["out"] = torch.zeros(a.shape[0], dtype=a.dtype, device=device)
    return Call((a, v, other), kwargs)


def _flops(input, vec, other, alpha=1, *, out=None):
    m, k = input.shape
    return 2.0 * m * k + 5.0 * m


def _bytes(input, vec, other, alpha=1, *, out=None):
    m, k = input.shape
    n_other = other.numel() if isinstance(other, torch.Tensor) else 0
    return float((m * k + k + n_other + m) * input.element_size())


_A = [[1.0, 2.0], [3.0, 4.0]]

TASK = Task(
    entry="fused_mv_sigmoid_sub",
    dtypes=("float32",),
    signature=(
        "fused_mv_sigmoid_sub(input: torch.Tensor, vec: torch.Tensor, other: torch.Tensor | float, "
        "alpha: float = 1, *, out: torch.Tensor | None = None) -> torch.Tensor"
    ),
    description=(
        "For an (m, k) matrix `input` and a (k,) vector `vec`, return sigmoid(input @ vec) - alpha * other as a "
        "new (m,) fp32 tensor; `other` is an (m,) tensor or a Python number. If `out` (an (m,) tensor) is "
        "given, write the result into it and return `out`."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=[
        Case("fixed_tensor_other", FIXED, {"values": _A, "vec": [1.0, 1.0], "other": [0.5, 0.5]}),
        Case("fixed_scalar_other", FIXED, {"values": _A, "vec": [1.0, 1.0], "other": 0.5}),
        Case("fixed_alpha2", FIXED, {"values": _A, "vec": [1.0, 1.0], "other": [0.5, 0.5], "alpha": 2.0}),
        Case("fixed_out", FIXED, {"values": _A, "vec": [1.0, 1.0], "other": [0.5, 0.5], "out": True}),
        Case("standard", STANDARD, {"shape": (128, 256), "mode": "standard", "alpha": 0.5}),
        Case("standard_out", STANDARD, {"shape": (128, 256), "mode": "standard", "alpha": 0.5, "out": True}),
        Case("outlier", OUTLIER, {"shape": (128, 256), "mode": "outlier", "alpha": 0.5}),
        Case("outlier_out", OUTLIER, {"shape": (128, 256), "mode": "outlier", "alpha": 0.5, "out": True}),
    ],
    perf=[
        Case(f"n{n}", PERF, {"shape": (n, n), "mode": "uniform", "other": 0.5}) for n in (4096, 8192, 11584, 16384)
    ],
    flops=_flops,
    bytes=_bytes,
    # the core is a matrix-vector product: allow TF32-level error should a kernel use tl.dot
    tolerance=matmul_tolerance(),
    inplace=True,
    notes="`out` judged after the call.",
)
