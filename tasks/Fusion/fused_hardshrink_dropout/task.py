"""Fusion/fused_hardshrink_dropout: dropout (when training) followed by hardshrink.

kbx departure: upstream compared training-mode outputs bit for bit with torch's own dropout RNG,
which no independent kernel can reproduce. kbx judges training-mode outputs by distribution
(see `plausible`); training=False (and p of 0 or 1) stays an elementwise comparison.
"""


import torch

from kbx.tasks import FIXED, OUTLIER, PERF, STANDARD, Call, Case, Task, Tolerance
from kbx.tasks.inputs import literal, rand_tensor
from kbx.tasks.stochastic import keep_rate_in_halves

TOLERANCE = Tolerance()


def reference(input, p=0.5, training=True, inplace=False, lambd=0.5):
    x = torch.nn.functional.dropout(input, p=p, training=training, inplace=inplace)
    return torch.nn.functional.hardshrink(x, lambd)


def make_inputs(params, gen, device) -> Call:
    if "values" in params:
        x = literal(params["values"], "float32", device)
    else:
        x = rand_tensor(params["shape"], "float32", params["mode"], gen, device)
    kwargs = {k: params[k] for k in ("p", "training", "lambd") if k in params}
    return Call((x,), kwargs)


def plausible(call: Call, got) -> str | None:
    """None when the call is deterministic; otherwise '' for a plausible dropout draw, else a reason.

    Each element must be 0 or the kept value hardshrink(x / (1 - p)) (fp32 tolerance). Where that
    kept value is itself 0 (|x / (1 - p)| <= lambd) the element says nothing about the mask, and
    elements within rounding of the threshold are accepted either way and not counted. Over the
    informative elements the kept fraction must be within 6 binomial sd of 1 - p, overall and in
    each half of the flattened tensor (catches fixed or half-tensor patterns). `call` must hold
    the inputs as generated (pristine).
    """
    (x,) = call.args
    p = float(call.kwargs.get("p", 0.5))
    training = call.kwargs.get("training", True)
    lambd = float(call.kwargs.get("lambd", 0.5))
    if not training or p <= 0.0 or p >= 1.0:
        return None
    if not isinstance(got, torch.Tensor) or got.shape != x.shape or got.dtype != x.dtype:
        return "output is not a tensor of the input's shape and dtype"
    g = got.detach().double().flatten()
    scaled = x.detach().double().flatten() / (1.0 - p)
    kept_val = torch.where(scaled.abs() > lambd, scaled, torch.zeros_like(scaled))
    atol, rtol, _ = TOLERANCE.for_dtype("float32")
    near = (scaled.abs() - lambd).abs() <= 1e-5 * lambd + 1e-6  # threshold decided by rounding
    is_zero = g == 0
    is_kept = (g - kept_val).abs() <= atol + rtol * kept_val.abs()
    is_kept_near = near & ((g - scaled).abs() <= atol + rtol * scaled.abs())
    bad = ~(is_zero | is_kept | is_kept_near)
    if bad.any():
        i = int(bad.nonzero()[0])
        return (
            f"{int(bad.sum())} elements are neither 0 nor the kept value, e.g. flat index {i}: "
            f"got {g[i].item()}, kept value {kept_val[i].item()}"
        )
    info = (kept_val != 0) & ~near
    kept = info & ~is_zero
    q = 1.0 - p
    return keep_rate_in_halves(kept, info, q)


def _flops(input, p=0.5, training=True, inplace=False, lambd=0.5):
    return 2.0 * input.numel()


def _bytes(input, p=0.5, training=True, inplace=False, lambd=0.5):
    return 2.0 * input.numel() * input.element_size()


# a fixed 5x5 input spread over [-2, 2], written out so the fixed cases need no RNG
_GRID = [
    [-1.93, 0.12, 0.77, -0.41, 1.58],
    [0.05, -0.66, 1.21, -1.07, 0.38],
    [1.84, -0.29, -0.52, 0.61, -1.45],
    [-0.83, 0.97, 0.24, -1.72, 0.49],
    [0.71, -0.08, -1.26, 1.39, -0.55],
]

TASK = Task(
    entry="fused_hardshrink_dropout",
    dtypes=("float32",),
    signature=(
        "fused_hardshrink_dropout(input: torch.Tensor, p: float = 0.5, training: bool = True, "
        "inplace: bool = False, lambd: float = 0.5) -> torch.Tensor"
    ),
    description=(
        "If training, apply dropout to `input`: each element independently becomes 0 with probability p, "
        "otherwise it is scaled by 1 / (1 - p) (with inplace=True the dropout result is also written back into "
        "`input`). Then apply hardshrink: keep a value v where |v| > lambd, else 0. Return the result as a new "
        "tensor. With training=False, dropout is the identity. Training-mode outputs are judged by distribution: "
        "any good random source is fine, torch's RNG stream need not be reproduced."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=[
        Case("fixed_default", FIXED, {"values": _GRID}),
        Case("fixed_p03", FIXED, {"values": _GRID, "p": 0.3}),
        Case("fixed_eval", FIXED, {"values": _GRID, "training": False}),
        Case("fixed_lambd07", FIXED, {"values": _GRID, "lambd": 0.7}),
        Case("standard_eval", STANDARD, {"shape": (256, 256), "mode": "standard", "p": 0.1, "training": False}),
        Case("standard_train", STANDARD, {"shape": (256, 256), "mode": "standard", "p": 0.1}),
        Case("outlier_eval", OUTLIER, {"shape": (256, 256), "mode": "outlier", "p": 0.1, "training": False}),
        Case("outlier_train", OUTLIER, {"shape": (256, 256), "mode": "outlier", "p": 0.1}),
    ],
    perf=[Case(f"n2^{e}", PERF, {"shape": (2**e,), "mode": "uniform", "p": 0.5}) for e in (24, 25, 26, 27)],
    flops=_flops,
    bytes=_bytes,
    tolerance=TOLERANCE,
    stochastic=plausible,
    notes=(
        "training-mode dropout judged by distribution (0-or-kept values, keep rate within 6 sd), "
        "not by torch's RNG bits."
    ),
)
