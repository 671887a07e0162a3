"""Index/masked_select: the fp32 elements where a (broadcast) bool mask is True, as a 1-D tensor.

Upstream's perf inputs (at most 2^22 elements, mask on the even positions) are a few microseconds of
work; kbx's are 2^24..2^27 elements with a random half-density mask, so no fixed pattern is timed.
"""

import torch

from kbx.tasks import OUTLIER, PERF, STANDARD, Call, Case, Task
from kbx.tasks.inputs import rand_bool, rand_tensor


def reference(input: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    return torch.masked_select(input, mask)


def make_inputs(params, gen, device) -> Call:
    x = rand_tensor(params["shape"], "float32", params["mode"], gen, device, outlier_scale=20.0)
    how = params.get("mask", "random")
    mask_shape = tuple(params.get("mask_shape", params["shape"]))
    if how == "positive":
        mask = x > 0
    elif how == "random":
        mask = rand_bool(mask_shape, gen, device)
    else:  # a density threshold on uniform draws
        mask = rand_tensor(mask_shape, "float32", "uniform", gen, device) > float(how)
    return Call((x, mask))


def _flops(input, mask):
    return 0.0


def _bytes(input, mask):
    kept = int(torch.broadcast_to(mask, torch.broadcast_shapes(input.shape, mask.shape)).sum())
    return float(input.numel() * input.element_size() + mask.numel() + kept * input.element_size())


TASK = Task(
    entry="masked_select",
    dtypes=("float32", "bool"),
    signature="masked_select(input: torch.Tensor, mask: torch.Tensor) -> torch.Tensor",
    description=(
        "As torch.masked_select: broadcast the fp32 input and the bool mask to a common shape, and return a "
        "new 1-D fp32 tensor holding the input values at the positions where the mask is True, in row-major "
        "order of the broadcast shape (its length is the number of True positions)."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=[
        Case("positive_16", STANDARD, {"shape": (16,), "mode": "standard", "mask": "positive"}),
        Case("density_4x5", STANDARD, {"shape": (4, 5), "mode": "standard", "mask": "0.5"}),
        Case("broadcast_mask_2x3x4", STANDARD, {"shape": (2, 3, 4), "mode": "standard", "mask": "0.3",
                                                "mask_shape": (1, 3, 1)}),  # fmt: skip
        Case("standard_64x128", STANDARD, {"shape": (64, 128), "mode": "standard"}),
        Case("outlier_64x128", OUTLIER, {"shape": (64, 128), "mode": "outlier"}),
        Case("sparse_1000x33", STANDARD, {"shape": (1000, 33), "mode": "standard", "mask": "0.95"}),
    ],
    perf=[Case(f"n2^{e}", PERF, {"shape": (2**e,), "mode": "uniform"}) for e in (24, 25, 26, 27)],
    flops=_flops,
    bytes=_bytes,
    notes="perf 2^24..2^27 elements with a random 50% mask (upstream: <= 2^22, even positions)",
)
