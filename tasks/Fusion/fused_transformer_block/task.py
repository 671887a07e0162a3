"""Fusion/fused_transformer_block: layer_norm(dropout(softmax(input @ weight1)) @ weight2 + residual).

Dropout is always in training mode. kbx departures: upstream compared outputs with dropout_p > 0 bit
for bit with torch's dropout RNG, which no independent kernel can reproduce. kbx judges them by
distribution (see `plausible`): when d_out >= 2 (d_k + 2) the dropped-out matrix D, the layer norm's
per-row scale and shift are recovered by least squares from the output (y * sigma + mu - residual =
D @ weight2), each entry of D is classified as kept (softmax / (1 - p)) or dropped, the output must equal
the block recomputed with that mask within the tolerance, and the keep rate must be within 6 binomial
sd of 1 - p overall and per half. Upstream's dropout cases had d_out < d_k (mask not recoverable), so
kbx's dropout cases use shapes with a wide weight2 and a weight1 scaled by 1 / sqrt(d_in) (a spread-out
softmax, so that many entries are informative); upstream's dropout_p = 0 cases are kept as they were.
At perf shapes (d_out = d_in < d_k) only structure is checked: finite rows with layer-norm statistics
that are not the dropout-free result, over the rows where dropout moves the output by more than the
tolerance (at d = 4096 it moves it by about a fifth of it, and an honest kernel's rows all equal the
dropout-free result within it: flagged on an H100 on 2026-11-27 before this rule). Tolerance:
matmul_tolerance (two matrix products), widened for the outlier rows' tail after the layer norm.
"""

import math

import torch
import torch.nn.functional as F

from kbx.tasks import OUTLIER, PERF, STANDARD, Call, Case, Task, matmul_tolerance
from kbx.tasks.inputs import rand_tensor
from kbx.tasks.stochastic import keep_rate_in_halves

INFORMATIVE = 2.0  # a row judges dropout's presence when dropout moves it by this many tolerances (sd)
# The elementwise comparison (dropout_p = 0 cases). The layer norm divides the products' TF32 error by
# its row's spread, so outlier rows carry a long tail. The expert on an H100 (2026-11-27, 2,000 seeds
# of outlier_p0 against the fp32 eager reference, in units of the 1x allowance): median 0.63, p99 2.31,
# max 6.14; 29 seeds over the former 2x, and one such secret seed failed the expert in a suite run
# (1 of 2,048 elements, relative 7.2e-3); standard_p0 at most 1.25. 8x puts the worst seed at 0.77.
# The price: a bf16 product (8x TF32's rounding) could pass the standard cases too.
TOLERANCE = matmul_tolerance(8.0)
# The dropout check keeps the former rule: a wider one would leave fewer rows where dropout shows, and
# the expert's dropout cases have passed under it in every GPU run.
DROPOUT_TOLERANCE = matmul_tolerance(2.0)


def reference(input, weight1, weight2, residual, dropout_p=0.1, eps=1e-05, *, out=None):
    z = torch.softmax(input @ weight1, dim=-1)
    z = F.dropout(z, p=dropout_p, training=True)
    y = F.layer_norm(z @ weight2 + residual, (weight2.shape[-1],), eps=eps)
    if out is not None:
        out.copy_(y)
        return out
    return y


def make_inputs(params, gen, device) -> Call:
    b, n, d_in, d_k, d_out = params["dims"]
    mode = params["mode"]
    x = rand_tensor((b, n, d_in), "float32", mode, gen, device)
    w1 = rand_tensor((d_in, d_k), "float32", mode, gen, device)
    if params.get("scale_w1"):
        w1 = w1 / math.sqrt(d_in)
    w2 = rand_tensor((d_k, d_out), "float32", mode, gen, device)
    r = rand_tensor((b, n, d_out), "float32", mode, gen, device)
    return Call((x, w1, w2, r), {k: params[k] for k in ("dropout_p", "eps") if k in params})


def _layer_norm64(v, eps):
    mean = v.mean(-1, keepdim=True)
    var = (v - mean).square().mean(-1, keepdim=True)
    return (v - mean) / torch.sqrt(var + eps)


def plausible(call: Call, got) -> str | None:
    """None when deterministic (dropout_p <= 0 or >= 1); '' for a plausible draw; else a reason.

    Recomputes the softmax S in float64. If the mask is recoverable (d_out >= 2 (d_k + 2)), solves per row
    the least-squares system D @ weight2 - sigma * y - mu = -residual for (D, sigma, mu), classifies each
    entry of D as kept (closer to S / (1 - p)) or dropped (closer to 0), requires the output to match the
    block recomputed with that mask within the tolerance, and tests the keep rate (6 binomial sd, overall
    and per half) over entries whose kept value is not tiny. Otherwise checks structure only: finite
    output, per-row mean ~0 and variance ~1, and, over the rows that dropout moves by more than INFORMATIVE
    tolerances, not (for most of them) the dropout-free result.
    """
    x, w1, w2, r = (t.detach().cpu().double() for t in call.args)
    p = float(call.kwargs.get("dropout_p", 0.1))
    eps = float(call.kwargs.get("eps", 1e-5))
    if p <= 0.0 or p >= 1.0:
        return None
    want = tuple(r.shape)
    if not isinstance(got, torch.Tensor) or tuple(got.shape) != want or got.dtype != call.args[3].dtype:
        return f"output is not a {call.args[3].dtype} tensor of shape {want}"
    g = got.detach().cpu().double()
    if not bool(torch.isfinite(g).all()):
        return "output has non-finite values"
    d_k, d_out = w2.shape
    s = torch.softmax(x @ w1, dim=-1).reshape(-1, d_k)
    rr, gg = r.reshape(-1, d_out), g.reshape(-1, d_out)
    atol, rtol, rms_atol = DROPOUT_TOLERANCE.for_dtype("float32")
    if d_out < 2 * (d_k + 2):
        mean, var = gg.mean(-1), (gg - gg.mean(-1, keepdim=True)).square().mean(-1)
        if bool((mean.abs() > 1e-3).any()) or bool(((var - 1.0).abs() > 2e-2).any()):
            return "some output rows do not have layer-norm statistics (mean 0, variance 1)"
        v0 = s @ w2 + rr
        y0 = _layer_norm64(v0, eps)
        same = ((gg - y0).abs() <= atol + rtol * y0.abs() + rms_atol).all(-1)
        # Dropout moves an element of row i before the layer norm by sd sqrt(p / (1 - p) sum_j S_ij^2 w2_jk^2),
        # about sqrt(p / (1 - p) sum_j S_ij^2 mean_k w2_jk^2); after it, that over the row's sd. Only rows
        # where it is INFORMATIVE times the tolerance can tell a dropout output from the dropout-free one.
        moved_sd = (p / (1.0 - p) * (s.square() @ w2.square().mean(-1))).sqrt() / v0.std(-1, correction=0)
        informative = moved_sd > INFORMATIVE * (atol + rms_atol)
        n_informative, n_same = int(informative.sum()), int((same & informative).sum())
        if (1.0 - p) ** d_k < 0.01 and n_informative and n_same > 0.5 * n_informative:
            return f"{n_same} of {n_informative} rows where dropout shows equal the dropout-free result"
        return ""
    kept_val = s / (1.0 - p)
    rows = gg.shape[0]
    a = torch.cat([w2.T.expand(rows, d_out, d_k), -gg.unsqueeze(-1), -torch.ones(rows, d_out, 1, dtype=gg.dtype)], -1)
    sol = torch.linalg.lstsq(a, -rr.unsqueeze(-1)).solution.squeeze(-1)
    d_est = sol[:, :d_k]
    mask = (d_est - kept_val).abs() < d_est.abs()
    y_hat = _layer_norm64((kept_val * mask) @ w2 + rr, eps)
    scale = float(y_hat.square().mean().sqrt())
    bad = (gg - y_hat).abs() > atol + rtol * y_hat.abs() + rms_atol * scale
    if bad.any():
        return (
            f"{int(bad.sum())} of {gg.numel()} outputs do not equal layer_norm(dropout mask * softmax / (1 - p) @ "
            f"weight2 + residual) for any 0/1 mask (max abs err {float((gg - y_hat).abs().max()):.3g})"
        )
    info = (kept_val > 0.1 * float(kept_val.square().mean().sqrt())).flatten()
    kept = mask.flatten() & info
    return keep_rate_in_halves(kept, info, 1.0 - p)


def _flops(input, weight1, weight2, residual, dropout_p=0.1, eps=1e-05, *, out=None):
    rows = input.numel() // input.shape[-1]
    d_in, d_k = weight1.shape
    d_out = weight2.shape[-1]
    return float(2 * rows * d_in * d_k + 4 * rows * d_k + 2 * rows * d_k * d_out + 9 * rows * d_out)


def _bytes(input, weight1, weight2, residual, dropout_p=0.1, eps=1e-05, *, out=None):
    n = input.numel() + weight1.numel() + weight2.numel() + 2 * residual.numel()
    return float(n * input.element_size())


TASK = Task(
    entry="fused_transformer_block",
    dtypes=("float32",),
    signature=(
        "fused_transformer_block(input: torch.Tensor, weight1: torch.Tensor, weight2: torch.Tensor, "
        "residual: torch.Tensor, dropout_p: float = 0.1, eps: float = 1e-05, *, out: torch.Tensor | None = None) "
        "-> torch.Tensor"
    ),
    description=(
        "For fp32 input (B, N, d_in), weight1 (d_in, d_k), weight2 (d_k, d_out) and residual (B, N, d_out): "
        "S = softmax(input @ weight1, dim=-1); D = dropout(S, dropout_p), always applied (each entry independently "
        "0 with probability dropout_p, else S / (1 - dropout_p)); return layer_norm(D @ weight2 + residual) over "
        "the last dim with no affine parameters, (v - mean) / sqrt(biased variance + eps), as a new (B, N, d_out) "
        "fp32 tensor. If `out` is given, write into it and return it. Outputs with dropout_p > 0 are judged by "
        "distribution: any good random source is fine, torch's RNG stream need not be reproduced."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=[
        Case("small_p01_a", STANDARD, {"dims": (2, 3, 4, 5, 16), "mode": "standard", "scale_w1": True}),
        Case("small_p01_b", STANDARD, {"dims": (1, 5, 6, 7, 20), "mode": "standard", "scale_w1": True}),
        Case("small_p0", STANDARD, {"dims": (3, 2, 4, 5, 4), "mode": "standard", "dropout_p": 0.0}),
        Case("standard_p0", STANDARD, {"dims": (2, 16, 64, 128, 64), "mode": "standard", "dropout_p": 0.0}),
        Case("outlier_p0", OUTLIER, {"dims": (2, 16, 64, 128, 64), "mode": "outlier", "dropout_p": 0.0}),
        Case("standard_p01", STANDARD, {"dims": (4, 32, 32, 16, 64), "mode": "standard", "scale_w1": True}),
        Case("standard_p05", STANDARD, {"dims": (4, 32, 32, 16, 64), "mode": "standard", "scale_w1": True,
                                        "dropout_p": 0.5}),  # fmt: skip
        Case("outlier_p03_eps", OUTLIER, {"dims": (4, 32, 32, 16, 64), "mode": "outlier", "scale_w1": True,
                                          "dropout_p": 0.3, "eps": 1e-3}),  # fmt: skip
    ],
    perf=[
        Case(f"d{d}", PERF, {"dims": (8, 128, d, 4 * d, d), "mode": "standard", "scale_w1": True, "dropout_p": 0.1})
        for d in (1024, 2048, 4096)
    ],
    flops=_flops,
    bytes=_bytes,
    version=4,  # the elementwise tolerance 8x TF32 (outlier rows' tail after the layer norm)
    tolerance=TOLERANCE,
    stochastic=plausible,
    notes=(
        "dropout judged by distribution (mask recovered by least squares when d_out >= 2 (d_k + 2), keep rate "
        "within 6 sd; structure only at perf shapes); dropout cases use recoverable shapes and a 1/sqrt(d_in) "
        "weight1."
    ),
)
