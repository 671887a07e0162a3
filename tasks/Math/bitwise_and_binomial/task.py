"""Math/bitwise_and_binomial: computes input & other (and discards it), then returns a Binomial(total_count, p)
sample, with p given as `probs` or as sigmoid(`logits`).

kbx departure: upstream compared the sample bit for bit with torch's own binomial sampler on the device RNG
stream, which no independent kernel can reproduce. kbx judges the sample by distribution (see `plausible`):
integer counts within [0, total_count], exact at p = 0 and p = 1, and the standardized sum of deviations and of
squared deviations within 6 sigma, over the whole tensor and over each half.
"""

import math

import torch

from kbx.tasks import FIXED, OUTLIER, PERF, STANDARD, Call, Case, Task
from kbx.tasks.inputs import literal, rand_int, rand_tensor

SIGMAS = 6.0
MIN_STAT_ELEMENTS = 100  # below this many informative elements the moment tests are skipped


def reference(input, other, total_count, probs=None, logits=None):
    torch.bitwise_and(input, other)  # computed and discarded, as upstream does
    if probs is None and logits is None:
        raise ValueError("Either `probs` or `logits` must be provided for Binomial distribution.")
    if probs is not None:
        dist = torch.distributions.Binomial(total_count=total_count, probs=probs)
    else:
        dist = torch.distributions.Binomial(total_count=total_count, logits=logits)
    return dist.sample()


def make_inputs(params, gen, device) -> Call:
    kwargs = {}
    if "values" in params:
        x = literal(params["values"], "int32", device)
        y = literal(params["other"], "int32", device)
        total = literal(params["total_count"], "float32", device)
        for key in ("probs", "logits"):
            if key in params:
                kwargs[key] = literal(params[key], "float32", device)
        return Call((x, y, total), kwargs)
    shape = params["shape"]
    x = rand_int(shape, 0, params["high"], gen, device, dtype="int32")
    y = rand_int(shape, 0, params["high"], gen, device, dtype="int32")
    if params["mode"] == "uniform":  # perf: a 0-d int32 count and probs in [0.25, 0.75)
        total = torch.tensor(10, dtype=torch.int32, device=device)
        kwargs["probs"] = 0.25 + 0.5 * rand_tensor(shape, "float32", "uniform", gen, device)
        return Call((x, y, total), kwargs)
    total = torch.full(shape, 10.0, device=device)
    z = rand_tensor(shape, "float32", params["mode"], gen, device)
    if params["param"] == "probs":
        kwargs["probs"] = torch.sigmoid(z).clamp(1e-3, 1.0 - 1e-3)
    else:
        kwargs["logits"] = z.clamp(-10.0, 10.0)
    return Call((x, y, total), kwargs)


def plausible(call: Call, got) -> str:
    """'' when `got` is a plausible Binomial(total_count, p) draw for this call, else the reason.

    Checks every element is an integer count in [0, n] (0 where p = 0, n where p = 1); then, over the elements
    with 0 < p < 1 and n > 0, that sum(k - n p) / sqrt(sum n p q) and the excess of squared deviations
    sum((k - n p)^2 - n p q) / sqrt(sum(mu4 - (n p q)^2)) are within 6 sigma, for the whole tensor and each half
    (catches rounding n p instead of sampling, wrong p, and fixed patterns). `call` holds pristine inputs.
    """
    _, _, total = call.args
    probs, logits = call.kwargs.get("probs"), call.kwargs.get("logits")
    if probs is None and logits is None:
        return "no probabilities given: the call must raise ValueError"
    p = probs.double() if probs is not None else torch.sigmoid(logits.double())
    n, p = torch.broadcast_tensors(total.double(), p)
    n, p = n.flatten(), p.flatten()
    if not isinstance(got, torch.Tensor) or got.numel() != n.numel():
        return f"expected a tensor of {n.numel()} counts"
    k = got.detach().double().flatten()
    bad = ~torch.isfinite(k) | (k != torch.round(k)) | (k < 0) | (k > n)
    bad |= ((p == 0) & (k != 0)) | ((p == 1) & (k != n))
    if bad.any():
        i = int(bad.nonzero()[0])
        return f"{int(bad.sum())} values are not counts in [0, total_count], e.g. flat index {i}: {k[i].item()}"
    q = 1.0 - p
    var = n * p * q
    info = var > 0
    mu4 = var * (1.0 + 3.0 * (n - 2.0) * p * q)
    dev = k - n * p
    half = k.numel() // 2
    for what, sl in (("whole", slice(None)), ("first half", slice(0, half)), ("second half", slice(half, None))):
        m = info[sl]
        if int(m.sum()) < MIN_STAT_ELEMENTS:
            continue
        z_mean = dev[sl][m].sum().item() / math.sqrt(var[sl][m].sum().item())
        if abs(z_mean) > SIGMAS:
            return f"{what}: sum of deviations from n p is {z_mean:.2f} sigma off (counts biased)"
        spread = (mu4[sl][m] - var[sl][m] ** 2).sum().item()
        z_var = (dev[sl][m] ** 2 - var[sl][m]).sum().item() / math.sqrt(max(spread, 1e-300))
        if abs(z_var) > SIGMAS:
            return f"{what}: squared deviations are {z_var:.2f} sigma off the binomial variance n p (1 - p)"
    return ""


def _flops(input, other, total_count, probs=None, logits=None):
    return 10.0 * input.numel()


def _bytes(input, other, total_count, probs=None, logits=None):
    p = probs if probs is not None else logits
    n_out = torch.broadcast_shapes(total_count.shape, p.shape).numel()
    ins = sum(t.numel() * t.element_size() for t in (input, other, total_count, p))
    return float(ins + n_out * p.element_size())


_X, _Y = [1, 0, 1, 0], [1, 1, 0, 0]

TASK = Task(
    entry="bitwise_and_binomial",
    dtypes=("int32", "float32"),
    signature=(
        "bitwise_and_binomial(input: torch.Tensor, other: torch.Tensor, total_count: torch.Tensor, "
        "probs: torch.Tensor | None = None, logits: torch.Tensor | None = None) -> torch.Tensor"
    ),
    description=(
        "Compute input & other for the int32 tensors (the result is discarded), then return one sample of "
        "Binomial(total_count, p) per element, as an fp32 tensor of counts with the broadcast shape of total_count "
        "and p, where p = probs if given, else sigmoid(logits). Raise ValueError if neither probs nor logits is "
        "given. Samples are judged by distribution (integer counts in range, mean and variance of the counts), "
        "not by reproducing torch's random stream."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=[
        Case("fixed_n5_probs", FIXED, {"values": _X, "other": _Y, "total_count": [5.0] * 4, "probs": [0.5] * 4}),
        Case("fixed_n5_logits", FIXED, {"values": _X, "other": _Y, "total_count": [5.0] * 4, "logits": [0.0] * 4}),
        Case("fixed_n10_probs", FIXED, {"values": _X, "other": _Y, "total_count": [10.0] * 4,
                                        "probs": [0.0, 0.25, 0.75, 1.0]}),
        Case("fixed_n10_logits", FIXED, {"values": _X, "other": _Y, "total_count": [10.0] * 4,
                                         "logits": [-2.0, 0.0, 2.0, 5.0]}),
        Case("fixed_no_probs", FIXED, {"values": _X, "other": _Y, "total_count": [10.0] * 4}),
        Case("standard_probs", STANDARD, {"shape": (256,), "high": 256, "mode": "standard", "param": "probs"}),
        Case("standard_logits", STANDARD, {"shape": (256,), "high": 256, "mode": "standard", "param": "logits"}),
        Case("outlier_probs", OUTLIER, {"shape": (256,), "high": 256, "mode": "outlier", "param": "probs"}),
        Case("outlier_logits", OUTLIER, {"shape": (256,), "high": 256, "mode": "outlier", "param": "logits"}),
    ],
    perf=[Case(f"n2^{e}", PERF, {"shape": (2**e,), "high": 2, "mode": "uniform"}) for e in (22, 23, 24, 25)],
    flops=_flops,
    bytes=_bytes,
    stochastic=plausible,
    notes="judged by distribution (counts in range, mean and variance within 6 sigma), not by torch's RNG bits.",
)
