"""MatrixMultiply/tensordot_rsqrt: elementwise 1/sqrt of a tensordot contraction (fp32, positive inputs)."""

import math

import torch

from kbx.tasks import FIXED, OUTLIER, PERF, STANDARD, Call, Case, Task, matmul_tolerance
from kbx.tasks.inputs import literal, rand_tensor


def reference(a: torch.Tensor, b: torch.Tensor, dims) -> torch.Tensor:
    return torch.rsqrt(torch.tensordot(a, b, dims=dims))


def make_inputs(params, gen, device) -> Call:
    if "a" in params:
        a, b = literal(params["a"], "float32", device), literal(params["b"], "float32", device)
    else:
        mode = params["mode"]
        a = rand_tensor(params["a_shape"], "float32", mode, gen, device)
        b = rand_tensor(params["b_shape"], "float32", mode, gen, device)
        if mode != "uniform":  # keep every contraction positive, as upstream
            a, b = a.abs() + 1e-3, b.abs() + 1e-3
    dims = params["dims"]
    if not isinstance(dims, int):
        dims = (list(dims[0]), list(dims[1]))
    return Call((a, b, dims))


def _contract(a, b, dims):
    if isinstance(dims, int):
        k = math.prod(a.shape[a.dim() - dims :])
    else:
        k = math.prod(a.shape[d] for d in dims[0])
    n_out = (a.numel() // max(k, 1)) * (b.numel() // max(k, 1))
    return n_out, k


def _flops(a, b, dims):
    n_out, k = _contract(a, b, dims)
    return 2.0 * n_out * k + n_out


def _bytes(a, b, dims):
    n_out, _ = _contract(a, b, dims)
    return float((a.numel() + b.numel() + n_out) * a.element_size())


_CUBE = [[[1.0, 2.0], [3.0, 4.0]], [[5.0, 6.0], [7.0, 8.0]]]

TASK = Task(
    entry="tensordot_rsqrt",
    dtypes=("float32",),
    signature="tensordot_rsqrt(a: torch.Tensor, b: torch.Tensor, dims: int | tuple[list[int], list[int]]) -> torch.Tensor",
    description=(
        "Return rsqrt(torch.tensordot(a, b, dims)) elementwise for fp32 a and b: with an int `dims` = d, the last "
        "d dims of a are contracted with the first d dims of b; with a pair of index lists, a's listed dims are "
        "contracted with b's listed dims, pairwise in order. The result holds a's free dims then b's free dims "
        "(a 0-d tensor when none are free), in fp32."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=[
        Case("fixed_vectors", FIXED, {"a": [1.0, 2.0, 3.0], "b": [4.0, 5.0, 6.0], "dims": 1}),
        Case("fixed_2x2", FIXED, {"a": [[1.0, 2.0], [3.0, 4.0]], "b": [[5.0, 6.0], [7.0, 8.0]], "dims": ([1], [0])}),
        Case("fixed_cubes", FIXED, {"a": _CUBE, "b": _CUBE, "dims": ([2], [1])}),
        Case("fixed_2x3_3x2", FIXED,
             {"a": [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], "b": [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]],
              "dims": ([1], [0])}),  # fmt: skip
        Case("standard_matrix", STANDARD, {"a_shape": (32, 64), "b_shape": (64, 32), "mode": "standard", "dims": 1}),
        Case("standard_two_dims", STANDARD,
             {"a_shape": (4, 8, 16), "b_shape": (16, 8, 4), "mode": "standard", "dims": ([2, 1], [0, 1])}),
        Case("outlier_matrix", OUTLIER, {"a_shape": (32, 64), "b_shape": (64, 32), "mode": "outlier", "dims": 1}),
        Case("outlier_two_dims", OUTLIER,
             {"a_shape": (4, 8, 16), "b_shape": (16, 8, 4), "mode": "outlier", "dims": ([2, 1], [0, 1])}),
    ],  # fmt: skip
    perf=[
        Case(f"square_{n}", PERF, {"a_shape": (n, n), "b_shape": (n, n), "mode": "uniform", "dims": 1})
        for n in (2048, 4096, 6144, 8192)
    ],
    flops=_flops,
    bytes=_bytes,
    tolerance=matmul_tolerance(),
    notes="fp32 tolerance allows TF32 tl.dot (rms term); upstream's 1e-5 rejects Triton's default matmul precision.",
)
