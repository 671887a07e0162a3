"""Fusion/attention: scaled dot-product attention over (B, H, S, D), optional causal mask, fp32 math.

kbx departures: upstream's fixed cases drew q, k, v at random (here seeded cases of the same shapes)
and one of them passed out=; kbx never passes out (inputs are read-only to a kernel here). The
comparison allows for the matrix products: TF32 on fp32 (matmul_tolerance) and, on fp16 outputs,
a small allowance scaled by the output's rms (upstream's flat 5e-3 demanded torch-identical rounding).
Perf shapes are (2, 8, S, 64) with S = 1024..4096 (upstream stopped at 1024).
"""

import torch

from kbx.tasks import OUTLIER, PERF, STANDARD, Call, Case, Task, Tolerance
from kbx.tasks.inputs import rand_tensor
from kbx.tasks.spec import TF32_RMS_ATOL

# fp32: TF32 tl.dot allowance. fp16: the probabilities are commonly rounded to fp16 before the
# second product (relative error 2^-11 each), so allow 2e-3 of the output's rms on top of 2 ulps.
# audit: the causal fp16 case with products rounded like TF32 reaches 0.65x of 2e-3; 4e-3 leaves 2x headroom.
# v3: Triton's tl.dot truncates to TF32; over 1,000 seeds the truncating model (kbx.quality audit --tail
# --model truncating) reached 1.52x the fp32 allowance on fp32_scale0125 (56 seeds over 1), and the audit's
# truncating model put fp16_s127_causal at 0.56 of the 4e-3 rule: 4x TF32 and 6e-3 put them at 0.38 and 0.48.
TOLERANCE = Tolerance(rms_atol={"float32": 4 * TF32_RMS_ATOL, "float16": 6e-3})


def reference(q, k, v, causal: bool = False, softmax_scale=None, *, out=None) -> torch.Tensor:
    d = q.shape[-1]
    scale = softmax_scale if softmax_scale is not None else d**-0.5
    scores = torch.matmul(q.float(), k.float().transpose(-2, -1)) * scale
    if causal:
        s_q, s_k = scores.shape[-2], scores.shape[-1]
        keep = torch.ones(s_q, s_k, dtype=torch.bool, device=q.device).tril()
        scores = scores.masked_fill(~keep, float("-inf"))
    attn = torch.softmax(scores, dim=-1)
    y = torch.matmul(attn, v.float())
    if out is not None:
        out.copy_(y.to(out.dtype))
        return out
    return y.to(q.dtype)


def make_inputs(params, gen, device) -> Call:
    shape, dtype, mode = params["shape"], params["dtype"], params["mode"]
    q, k, v = (rand_tensor(shape, dtype, mode, gen, device) for _ in range(3))
    kwargs = {key: params[key] for key in ("causal", "softmax_scale") if key in params}
    return Call((q, k, v), kwargs)


def _flops(q, k, v, causal=False, softmax_scale=None, *, out=None):
    b, h, s, d = q.shape
    return float(4 * b * h * s * k.shape[-2] * d)


def _bytes(q, k, v, causal=False, softmax_scale=None, *, out=None):
    return float((q.numel() + k.numel() + v.numel() + q.numel()) * q.element_size())


def _case(name, kind, shape, dtype, mode, **extra):
    return Case(name, kind, {"shape": shape, "dtype": dtype, "mode": mode, **extra})


TASK = Task(
    entry="attention",
    dtypes=("float16", "float32"),
    signature=(
        "attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool = False, "
        "softmax_scale: float | None = None, *, out: torch.Tensor | None = None) -> torch.Tensor"
    ),
    description=(
        "Scaled dot-product attention for q, k, v of shape (B, H, S, D) (fp16 or fp32), computed in fp32: "
        "scores = (q @ k^T) * scale with scale = softmax_scale, or D^-0.5 when it is None; if causal, score "
        "(i, j) with j > i is masked to -inf; P = softmax(scores) over the last dim; return P @ v as a "
        "(B, H, S, D) tensor cast to q's dtype (if `out` is given, write the result into it and return it)."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=[
        _case("fp16_s128", STANDARD, (2, 4, 128, 64), "float16", "standard"),
        _case("fp16_s127_causal", STANDARD, (2, 4, 127, 64), "float16", "standard", causal=True),
        _case("fp32_scale0125", STANDARD, (1, 2, 64, 32), "float32", "standard", softmax_scale=0.125),
        _case("standard_noncausal", STANDARD, (2, 4, 64, 32), "float16", "standard"),
        _case("standard_causal", STANDARD, (2, 4, 64, 32), "float16", "standard", causal=True),
        _case("outlier_noncausal", OUTLIER, (2, 4, 64, 32), "float16", "outlier"),
        _case("outlier_causal", OUTLIER, (2, 4, 64, 32), "float16", "outlier", causal=True),
    ],
    perf=[_case(f"S{s}", PERF, (2, 8, s, 64), "float32", "uniform", causal=True) for s in (1024, 2048, 4096)],
    flops=_flops,
    bytes=_bytes,
    version=3,  # v2: tolerance widened by the tolerance audit; v3: TF32 truncation
    tolerance=TOLERANCE,
    notes=(
        "fixed random cases seeded; out= not exercised; TF32 allowance on fp32 and an rms-scaled allowance on "
        "fp16 instead of upstream's flat 5e-3."
    ),
)
