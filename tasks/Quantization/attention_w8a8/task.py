"""Quantization/attention_w8a8: single-head attention with int8 Q, K, V (per-token scales) and fp32 softmax.

kbx departure: upstream's reference is plain fp32 attention judged with cosine / l1 / absolute rmse
thresholds, and its int8 scheme existed only as prose (optional parts, unspecified rounding). kbx
states one exact contract (see `reference` and the description): Q, K and V are quantized per token
row, Q K^T is an exact integer product, softmax and P @ V stay fp32. The quantized values are
bit-exact (IEEE division, round half away from zero: in Triton use tl.math.div_rn), so only fp32
rounding in the softmax and in P @ V may differ; the tolerance allows TF32 for P @ V. Plain fp32
attention without quantization misses by 3-20 times that allowance and fails, as intended.
Upstream folded 1/sqrt(D) into Q before quantizing; kbx quantizes the raw rows and applies
1/sqrt(D) to the dequantized scores (same math, one rounding-stable definition). Upstream's corner
cases are random draws, so here they are seeded STANDARD cases.
"""

import math

import torch

from kbx.tasks import FIXED, OUTLIER, PERF, STANDARD, Call, Case, Task, matmul_tolerance
from kbx.tasks.inputs import literal, rand_tensor

CLAMP = 10.0  # random inputs are clamped to [-10, 10], as upstream
OUTLIER_PROB = 0.01


def _scale(amax: torch.Tensor) -> torch.Tensor:
    s = amax / torch.full_like(amax, 127.0)  # tensor divisor: an IEEE quotient on every device
    return torch.where(amax == 0, torch.ones_like(s), s)


def _quantize_rows(t: torch.Tensor):
    """Per-row (last dim) int8 values and fp32 scales; round half away from zero, clamp to [-127, 127]."""
    s = _scale(t.abs().amax(dim=-1))
    v = t / s[..., None]
    q = torch.clamp(torch.sign(v) * torch.floor(v.abs() + 0.5), -127, 127).to(torch.int8)
    return q, s


def reference(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor) -> torch.Tensor:
    d = query.shape[-1]
    q_q, s_q = _quantize_rows(query)
    q_k, s_k = _quantize_rows(key)
    q_v, s_v = _quantize_rows(value)
    # |q| <= 127 and D is small: the fp64 integer product is exact
    acc = torch.matmul(q_q.double(), q_k.double().transpose(-1, -2)).float()
    scores = acc * s_q[..., :, None] * s_k[..., None, :] / math.sqrt(d)
    probs = torch.softmax(scores, dim=-1)
    return torch.matmul(probs, q_v.float() * s_v[..., None])


def make_inputs(params, gen, device) -> Call:
    b, s, d = params["bsd"]
    mode = params["mode"]
    t = [rand_tensor((b, s, d), "float32", mode, gen, device, outlier_prob=OUTLIER_PROB) for _ in range(3)]
    if mode != "uniform":
        t = [x.clamp(-CLAMP, CLAMP) for x in t]
    if "qk" in params:
        t[0] = literal(params["qk"], "float32", device)
        t[1] = t[0].clone()
    return Call(tuple(t))


def _flops(query, key, value):
    b, s, d = query.shape
    return 4.0 * b * s * s * d


def _bytes(query, key, value):
    return float(4 * query.numel() * 4)


def _case(name, kind, bsd, mode="standard", **extra):
    return Case(name, kind, {"bsd": bsd, "mode": mode, **extra})


TASK = Task(
    entry="attention_w8a8",
    dtypes=("float32",),
    signature="attention_w8a8(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor) -> torch.Tensor",
    description=(
        "Single-head attention (no mask) on fp32 query, key, value of shape (B, S, D), returning (B, S, D) fp32, "
        "with int8 operands. For each row r (one token of Q, K or V, D values): s = max |r| / 127 in fp32 (1.0 "
        "if the max is 0), v = r / s as an IEEE fp32 division, q = clamp(sign(v) * floor(|v| + 0.5), -127, 127) "
        "(round half away from zero). scores[i,j] = float(sum_d qQ[i,d] * qK[j,d]) * sQ[i] * sK[j] / sqrt(D), "
        "the integer sum exact (int32); P = softmax(scores) over j in fp32; out[i] = sum_j P[i,j] * (qV[j] * sV[j]) "
        "in fp32."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=[
        _case("corner_single_token", STANDARD, (1, 1, 8)),
        _case("corner_extreme_attention", STANDARD, (1, 2, 2), qk=[[[10.0, 0.0], [0.0, 10.0]]]),
        _case("corner_zero_qk", STANDARD, (1, 3, 4), qk=[[[0.0] * 4] * 3]),
        _case("standard_2x64x32", STANDARD, (2, 64, 32)),
        _case("standard_1x32x16", STANDARD, (1, 32, 16)),
        _case("outlier_2x64x32", OUTLIER, (2, 64, 32), "outlier"),
        _case("outlier_1x32x16", OUTLIER, (1, 32, 16), "outlier"),
    ],
    perf=[
        _case(f"b{b}_s{s}_d{d}", PERF, (b, s, d), "uniform")
        for b, s, d in ((2, 1024, 64), (2, 2048, 64), (1, 4096, 64), (4, 4096, 64))
    ],
    flops=_flops,
    bytes=_bytes,
    version=3,  # v2: tolerance widened by the tolerance audit; v3: TF32 truncation
    # audit: outlier inputs put TF32 error in P @ V at 0.54x the 1x allowance. Triton's tl.dot truncates to
    # TF32: over 1,000 outlier seeds the truncating model (kbx.quality audit --tail --tail-model truncating, 2026-11-28)
    # reached 1.38x the 2x allowance (26 seeds over 1); 6x leaves 2x headroom
    tolerance=matmul_tolerance(6.0),
    notes=(
        "explicit int8 contract (per-row Q/K/V scales, round half away, exact integer Q K^T, fp32 softmax and P @ V) "
        "replaces upstream's rmse thresholds; tolerance allows TF32 for P @ V; corners are seeded random draws."
    ),
)
