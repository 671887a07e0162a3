"""Fusion/fused_mul_add_logsoftmax_dropout_bmm: bmm(dropout(log_softmax(input1 * input2 + other, dim)), mat2).

kbx departures: upstream compared training-mode outputs bit for bit with torch's dropout RNG, which
no independent kernel can reproduce. kbx judges them by distribution (see `plausible`): from the
output it recovers which log-softmax entries were kept (mat2 has P >= 2N columns, so D with D @ mat2 = Y
is well determined by least squares), requires Y to equal bmm(kept entries / (1 - p), mat2) within the TF32-aware matmul
tolerance, and requires the keep rate to be within 6 binomial sd of 1 - p overall and per half.
To make that possible mat2 is (B, N, 2N) randn throughout (upstream used torch.rand with P = N + 1
or P = N / 2), and upstream's fixed torch.rand cases are seeded cases of the same (2, 3, 4) inputs.
training=False stays an elementwise comparison.
"""


import torch

from kbx.tasks import OUTLIER, PERF, STANDARD, Call, Case, Task, matmul_tolerance
from kbx.tasks.inputs import rand_tensor
from kbx.tasks.stochastic import keep_rate_in_halves

# Triton's tl.dot truncates to TF32: over 1,000 seeds of outlier_eval the truncating model (the reference on
# TF32-truncated product operands against the fp32 reference, docs/BENCHMARKS.md 2026-11-28) reached
# 3.30x the 1x allowance (133 seeds over 1); 7x leaves 2x headroom
TOLERANCE = matmul_tolerance(7)


def reference(input1, input2, other, mat2, p=0.5, training=True, inplace=False, dim=-1, *, out=None):
    s = input1 * input2 + other
    d = torch.nn.functional.dropout(torch.log_softmax(s, dim=dim), p=p, training=training, inplace=inplace)
    y = torch.bmm(d, mat2)
    if out is not None:
        out.copy_(y)
        return out
    return y


def make_inputs(params, gen, device) -> Call:
    b, m, n, p_cols = params["bmnp"]
    mode = params["mode"]
    x1, x2, o = (rand_tensor((b, m, n), "float32", mode, gen, device) for _ in range(3))
    mat2 = rand_tensor((b, n, p_cols), "float32", "outlier" if mode == "outlier" else "standard", gen, device)
    kwargs = {k: params[k] for k in ("p", "training", "inplace", "dim") if k in params}
    return Call((x1, x2, o, mat2), kwargs)


def plausible(call: Call, got) -> str | None:
    """None when deterministic (training=False, p <= 0 or p >= 1); '' for a plausible draw; else a reason.

    The log-softmax matrix L is recomputed in float64. D_est, the least-squares solution of D_est @ mat2 = got, estimates the dropped-out
    matrix; each entry is classified as kept (closer to L / (1 - p)) or dropped (closer to 0). The output
    must then match bmm(kept mask * L / (1 - p), mat2) within the task tolerance, and over entries whose
    kept value is not tiny the kept fraction must be within 6 binomial sd of 1 - p, overall and in each
    half of the flattened (B, M, N) mask. `call` must hold the inputs as generated (pristine).
    """
    x1, x2, o, mat2 = call.args
    p = float(call.kwargs.get("p", 0.5))
    training = call.kwargs.get("training", True)
    dim = call.kwargs.get("dim", -1)
    if not training or p <= 0.0 or p >= 1.0:
        return None
    b, m, n = x1.shape
    want_shape = (b, m, mat2.shape[-1])
    if not isinstance(got, torch.Tensor) or tuple(got.shape) != want_shape or got.dtype != x1.dtype:
        return f"output is not a {x1.dtype} tensor of shape {want_shape}"
    dev = got.device
    g = got.detach().double()
    if not bool(torch.isfinite(g).all()):
        return "output has non-finite values"
    w = mat2.detach().to(dev, torch.float64)
    s = x1.detach().to(dev, torch.float64) * x2.detach().to(dev, torch.float64) + o.detach().to(dev, torch.float64)
    kept_val = torch.log_softmax(s, dim=dim) / (1.0 - p)
    # least-squares D with D @ w = got: D = got w^T (w w^T)^-1 (w has full row rank N <= P)
    d_est = torch.linalg.solve(w @ w.transpose(1, 2), w @ g.transpose(1, 2)).transpose(1, 2)
    mask = (d_est - kept_val).abs() < d_est.abs()
    y_hat = (kept_val * mask) @ w
    atol, rtol, rms_atol = TOLERANCE.for_dtype("float32")
    scale = float(y_hat.square().mean().sqrt())
    bad = (g - y_hat).abs() > atol + rtol * y_hat.abs() + rms_atol * scale
    if bad.any():
        return (
            f"{int(bad.sum())} of {g.numel()} outputs do not equal bmm(dropout mask * log_softmax / (1 - p), mat2) "
            f"for any 0/1 mask (max abs err {float((g - y_hat).abs().max()):.3g})"
        )
    info = (kept_val.abs() > 0.1 * float(kept_val.square().mean().sqrt())).flatten()
    kept = mask.flatten() & info
    return keep_rate_in_halves(kept, info, 1.0 - p)


def _flops(input1, input2, other, mat2, p=0.5, training=True, inplace=False, dim=-1, *, out=None):
    b, m, n = input1.shape
    return float(6 * b * m * n + 2 * b * m * n * mat2.shape[-1])


def _bytes(input1, input2, other, mat2, p=0.5, training=True, inplace=False, dim=-1, *, out=None):
    b, m, n = input1.shape
    return float((3 * b * m * n + mat2.numel() + b * m * mat2.shape[-1]) * input1.element_size())


TASK = Task(
    entry="fused_mul_add_logsoftmax_dropout_bmm",
    dtypes=("float32",),
    signature=(
        "fused_mul_add_logsoftmax_dropout_bmm(input1: torch.Tensor, input2: torch.Tensor, other: torch.Tensor, "
        "mat2: torch.Tensor, p: float = 0.5, training: bool = True, inplace: bool = False, dim: int = -1, *, "
        "out: torch.Tensor | None = None) -> torch.Tensor"
    ),
    description=(
        "With (B, M, N) fp32 tensors input1, input2, other and a (B, N, P) mat2: S = input1 * input2 + other; "
        "L = log_softmax(S, dim); if training, D = dropout(L, p) (each entry independently 0 with probability "
        "p, else scaled by 1 / (1 - p)), otherwise D = L; return the (B, M, P) batched product D @ mat2. "
        "`inplace` concerns only the intermediate; if `out` is given, write into it and return it. "
        "Training-mode outputs are judged by distribution: any good random source is fine, torch's RNG stream "
        "need not be reproduced."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=[
        Case("small_default", STANDARD, {"bmnp": (2, 3, 4, 8), "mode": "uniform"}),
        Case("small_p03", STANDARD, {"bmnp": (2, 3, 4, 8), "mode": "uniform", "p": 0.3}),
        Case("small_inplace", STANDARD, {"bmnp": (2, 3, 4, 8), "mode": "uniform", "inplace": True}),
        Case("small_dim1", STANDARD, {"bmnp": (2, 3, 4, 8), "mode": "uniform", "dim": 1}),
        Case("standard_eval", STANDARD, {"bmnp": (4, 16, 64, 128), "mode": "standard", "p": 0.1, "training": False}),
        Case("standard_train", STANDARD, {"bmnp": (4, 16, 64, 128), "mode": "standard", "p": 0.1}),
        Case("standard_train_p05_dim1", STANDARD, {"bmnp": (4, 32, 64, 128), "mode": "standard", "dim": 1}),
        Case("outlier_eval", OUTLIER, {"bmnp": (4, 16, 64, 128), "mode": "outlier", "p": 0.1, "training": False}),
        Case("outlier_train", OUTLIER, {"bmnp": (4, 16, 64, 128), "mode": "outlier", "p": 0.1}),
    ],
    perf=[
        Case(f"B32_N{128 * i}", PERF, {"bmnp": (32, 128 * i, 128 * i, 256 * i), "mode": "uniform", "p": 0.5})
        for i in (4, 8, 12)
    ],
    flops=_flops,
    bytes=_bytes,
    version=2,  # v2: TF32 truncation (tolerance 7x)
    tolerance=TOLERANCE,
    stochastic=plausible,
    notes=(
        "training-mode dropout judged by distribution (mask recovered by least squares through mat2, keep rate within "
        "6 sd), not by torch's RNG bits; mat2 is (B, N, 2N) randn so the mask is recoverable."
    ),
)
