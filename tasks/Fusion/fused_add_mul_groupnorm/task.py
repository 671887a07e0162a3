"""Fusion/fused_add_mul_groupnorm: group_norm((input1 + input2) * input2) with optional per-channel affine.

kbx departures: upstream's fixed cases drew their inputs at random (here seeded cases of the same
shapes). Perf shapes are (16, 64, 128, W) with W = 128..1024 (upstream went to W = 8192, 4 GB inputs).
"""

import torch

from kbx.tasks import OUTLIER, PERF, STANDARD, Call, Case, Task
from kbx.tasks.inputs import rand_tensor


def reference(input1, input2, weight, bias, num_groups, eps=1e-05, *, out=None) -> torch.Tensor:
    m = (input1 + input2) * input2
    y = torch.nn.functional.group_norm(m, num_groups, weight, bias, eps)
    if out is not None:
        out.copy_(y)
        return out
    return y


def make_inputs(params, gen, device) -> Call:
    shape, mode = params["shape"], params["mode"]
    x1 = rand_tensor(shape, "float32", mode, gen, device)
    x2 = rand_tensor(params.get("shape2", shape), "float32", mode, gen, device)
    w = b = None
    if params.get("affine", True):
        w = rand_tensor((shape[1],), "float32", "standard", gen, device)
        b = rand_tensor((shape[1],), "float32", "standard", gen, device)
    kwargs = {"eps": params["eps"]} if "eps" in params else {}
    return Call((x1, x2, w, b, params["groups"]), kwargs)


def _flops(input1, input2, weight, bias, num_groups, eps=1e-05, *, out=None):
    return 10.0 * input1.numel()


def _bytes(input1, input2, weight, bias, num_groups, eps=1e-05, *, out=None):
    n_aff = sum(t.numel() for t in (weight, bias) if t is not None)
    return float((2 * input1.numel() + input2.numel() + n_aff) * input1.element_size())


_SMALL = {"shape": (2, 4, 4, 4), "mode": "standard"}
_RAND = {"shape": (4, 16, 32, 32), "groups": 4, "eps": 1e-5}

TASK = Task(
    entry="fused_add_mul_groupnorm",
    dtypes=("float32",),
    signature=(
        "fused_add_mul_groupnorm(input1: torch.Tensor, input2: torch.Tensor, weight: torch.Tensor | None, "
        "bias: torch.Tensor | None, num_groups: int, eps: float = 1e-05, *, out: torch.Tensor | None = None) "
        "-> torch.Tensor"
    ),
    description=(
        "For an (N, C, *) fp32 input1 and an input2 broadcastable to it, form m = (input1 + input2) * input2, "
        "then apply group normalization: split the C channels into num_groups equal groups and normalize each "
        "(sample, group) slice by its mean and biased variance, (m - mean) / sqrt(var + eps); finally, when "
        "given, scale by weight[c] and add bias[c] per channel. Return the (N, C, *) result (written into `out` "
        "and returned when `out` is given)."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=[
        Case("small_g2", STANDARD, {**_SMALL, "groups": 2}),
        Case("small_broadcast_g1", STANDARD, {**_SMALL, "shape2": (1, 4, 1, 1), "groups": 1}),
        Case("small_no_affine_g2", STANDARD, {**_SMALL, "groups": 2, "affine": False}),
        Case("standard", STANDARD, {**_RAND, "mode": "standard"}),
        Case("outlier", OUTLIER, {**_RAND, "mode": "outlier"}),
    ],
    perf=[
        Case(f"W{w}", PERF, {"shape": (16, 64, 128, w), "groups": 8, "mode": "uniform"}) for w in (128, 256, 512, 1024)
    ],
    flops=_flops,
    bytes=_bytes,
    notes="fixed random cases seeded; perf widths capped at 1024.",
)
