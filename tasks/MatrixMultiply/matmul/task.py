"""MatrixMultiply/matmul: torch.matmul (1-D, 2-D and broadcast-batched operands); fp32 checks, fp16 perf."""

import torch

from kbx.tasks import FIXED, OUTLIER, PERF, STANDARD, Call, Case, Task, matmul_tolerance
from kbx.tasks.inputs import literal, rand_tensor


def reference(tensor1: torch.Tensor, tensor2: torch.Tensor) -> torch.Tensor:
    return torch.matmul(tensor1, tensor2)


def make_inputs(params, gen, device) -> Call:
    if "a" in params:
        return Call((literal(params["a"], "float32", device), literal(params["b"], "float32", device)))
    dtype = params.get("dtype", "float32")
    a = rand_tensor(params["a_shape"], dtype, params["mode"], gen, device)
    b = rand_tensor(params["b_shape"], dtype, params["mode"], gen, device)
    return Call((a, b))


def _mnk(tensor1, tensor2):
    """Output numel and the inner dimension K."""
    out = torch.matmul(torch.empty(tensor1.shape, device="meta"), torch.empty(tensor2.shape, device="meta"))
    return out.numel(), tensor1.shape[-1]


def _flops(tensor1, tensor2):
    n_out, k = _mnk(tensor1, tensor2)
    return 2.0 * n_out * k


def _bytes(tensor1, tensor2):
    n_out, _ = _mnk(tensor1, tensor2)
    return float((tensor1.numel() + tensor2.numel() + n_out) * tensor1.element_size())


TASK = Task(
    entry="matmul",
    dtypes=("float32", "float16"),
    signature="matmul(tensor1: torch.Tensor, tensor2: torch.Tensor) -> torch.Tensor",
    description=(
        "Matrix product with torch.matmul semantics: 2-D @ 2-D is a matrix product; a 1-D first operand is "
        "treated as a row vector and a 1-D second operand as a column vector, the added dim being removed "
        "from the result; operands with more than 2 dims are batched matrix products whose leading dims "
        "broadcast. The result has the inputs' dtype (fp32 for correctness cases, fp16 for perf shapes); "
        "accumulate in fp32."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=[
        Case("fixed_2d_2d", FIXED, {"a": [[1.0, 2.0], [3.0, 4.0]], "b": [[5.0, 6.0], [7.0, 8.0]]}),
        Case("fixed_1d_2d", FIXED, {"a": [1.0, 2.0], "b": [[3.0, 4.0], [5.0, 6.0]]}),
        Case("fixed_2d_1d", FIXED, {"a": [[1.0, 2.0], [3.0, 4.0]], "b": [5.0, 6.0]}),
        Case(
            "fixed_batched",
            FIXED,
            {"a": [[[1.0, 2.0], [3.0, 4.0]], [[5.0, 6.0], [7.0, 8.0]]],
             "b": [[[9.0, 10.0], [11.0, 12.0]], [[13.0, 14.0], [15.0, 16.0]]]},
        ),  # fmt: skip
        Case("standard", STANDARD, {"a_shape": (64, 128), "b_shape": (128, 32), "mode": "standard"}),
        Case(
            "standard_broadcast_batch",
            STANDARD,
            {"a_shape": (2, 1, 16, 40), "b_shape": (3, 40, 24), "mode": "standard"},
        ),
        Case("outlier", OUTLIER, {"a_shape": (64, 128), "b_shape": (128, 32), "mode": "outlier"}),
    ],
    # fp16 square products as upstream; uniform inputs keep every output well away from zero,
    # so the fp16 two-ulp rule is meaningful on the smallest shape's correctness check.
    perf=[
        Case(f"square_{n}_fp16", PERF, {"a_shape": (n, n), "b_shape": (n, n), "mode": "uniform", "dtype": "float16"})
        for n in (2048, 4096, 6144, 8192)
    ],
    flops=_flops,
    bytes=_bytes,
    tolerance=matmul_tolerance(),
    notes="fp32 tolerance allows TF32 tl.dot (rms term); upstream's 1e-5 rejects Triton's default matmul precision.",
)
