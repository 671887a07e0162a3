"""MatrixMultiply/matrix_vector_dot: y <- alpha * A @ x + beta * y in place, then return dot(y, x).

kbx departures: the in-place update of y is judged (inplace=True: y is compared after the call),
where upstream compared only the returned value; results are 0-d fp32 tensors (upstream turned fixed
results into Python floats); perf shapes are fp32 instead of fp16, because with upstream's uniform
[0, 1) inputs the fp16 dot product overflows to inf from n = 512 on.
"""

import torch

from kbx.tasks import FIXED, OUTLIER, PERF, STANDARD, Call, Case, Task
from kbx.tasks.inputs import literal, rand_tensor


def reference(A: torch.Tensor, x: torch.Tensor, y: torch.Tensor, alpha: float, beta: float) -> torch.Tensor:
    y.copy_(alpha * torch.mv(A, x) + beta * y)
    return torch.dot(y, x)


def make_inputs(params, gen, device) -> Call:
    if "A" in params:
        a, x, y = (literal(params[k], "float32", device) for k in ("A", "x", "y"))
    else:
        n, mode = params["n"], params["mode"]
        a = rand_tensor((n, n), "float32", mode, gen, device)
        x = rand_tensor((n,), "float32", mode, gen, device)
        y = rand_tensor((n,), "float32", mode, gen, device)
    return Call((a, x, y, params["alpha"], params["beta"]))


def _flops(A, x, y, alpha, beta):
    n, m = A.shape
    return 2.0 * n * m + 5.0 * n - 1


def _bytes(A, x, y, alpha, beta):
    n, m = A.shape
    return float((n * m + m + 2 * n + 1) * A.element_size())


_A = [[1.0, 2.0], [3.0, 4.0]]

TASK = Task(
    entry="matrix_vector_dot",
    dtypes=("float32",),
    signature=(
        "matrix_vector_dot(A: torch.Tensor, x: torch.Tensor, y: torch.Tensor, alpha: float, beta: float) "
        "-> torch.Tensor"
    ),
    description=(
        "For fp32 A (n, n), x (n,) and y (n,): overwrite y IN PLACE with alpha * (A @ x) + beta * y, then return "
        "the dot product of the updated y with x as a 0-d fp32 tensor. Both the returned value and the contents "
        "of y after the call are checked."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=[
        Case("fixed_beta0", FIXED, {"A": _A, "x": [1.0, 1.0], "y": [0.0, 0.0], "alpha": 1.0, "beta": 0.0}),
        Case("fixed_beta1", FIXED, {"A": _A, "x": [1.0, 1.0], "y": [1.0, 1.0], "alpha": 1.0, "beta": 1.0}),
        Case("fixed_half", FIXED, {"A": _A, "x": [2.0, 3.0], "y": [1.0, 1.0], "alpha": 0.5, "beta": 0.5}),
        Case("fixed_alpha2", FIXED, {"A": _A, "x": [1.0, 1.0], "y": [2.0, 2.0], "alpha": 2.0, "beta": 0.5}),
        Case("standard_64", STANDARD, {"n": 64, "mode": "standard", "alpha": 1.0, "beta": 0.0}),
        Case("standard_128", STANDARD, {"n": 128, "mode": "standard", "alpha": 0.5, "beta": 0.5}),
        Case("outlier_64", OUTLIER, {"n": 64, "mode": "outlier", "alpha": 1.0, "beta": 0.0}),
        Case("outlier_128", OUTLIER, {"n": 128, "mode": "outlier", "alpha": 0.5, "beta": 0.5}),
    ],
    perf=[
        Case(f"n{n}", PERF, {"n": n, "mode": "uniform", "alpha": 1.0, "beta": 1.0})
        for n in (8192, 12288, 16384, 20480)
    ],
    flops=_flops,
    bytes=_bytes,
    inplace=True,
    notes="y's in-place update is judged; 0-d tensor results; fp32 perf shapes (fp16 overflows on upstream's inputs).",
)
