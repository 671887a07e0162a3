"""Fusion/fused_gelu_std: standard deviation of GELU(input), globally or along a dim, with Bessel-style correction.

kbx departures: upstream's fixed cases drew their inputs at random (here seeded cases of the same
shapes); kbx adds a correction=0 case. Perf sizes are 2^24..2^27 elements.
"""

import torch
import torch.nn.functional as F

from kbx.tasks import OUTLIER, PERF, STANDARD, Call, Case, Task
from kbx.tasks.inputs import rand_tensor


def reference(input, dim=None, keepdim=False, correction=1, approximate="none", out=None) -> torch.Tensor:
    return torch.std(F.gelu(input, approximate=approximate), dim=dim, keepdim=keepdim, correction=correction)


def make_inputs(params, gen, device) -> Call:
    x = rand_tensor(params["shape"], "float32", params["mode"], gen, device)
    kwargs = {k: params[k] for k in ("dim", "keepdim", "correction", "approximate") if k in params}
    return Call((x,), kwargs)


def _flops(input, dim=None, keepdim=False, correction=1, approximate="none", out=None):
    return 11.0 * input.numel()


def _bytes(input, dim=None, keepdim=False, correction=1, approximate="none", out=None):
    n_out = 1 if dim is None else input.numel() // input.shape[dim]
    return float((input.numel() + n_out) * input.element_size())


TASK = Task(
    entry="fused_gelu_std",
    dtypes=("float32",),
    signature=(
        "fused_gelu_std(input: torch.Tensor, dim: int | None = None, keepdim: bool = False, correction: int = 1, "
        "approximate: str = 'none', out=None) -> torch.Tensor"
    ),
    description=(
        "Apply GELU elementwise to an fp32 tensor (approximate='none': x * 0.5 * (1 + erf(x / sqrt(2))); 'tanh': "
        "0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))), then return its standard deviation "
        "sqrt(sum((g - mean)^2) / (n - correction)): over all elements when dim is None (0-d result), otherwise "
        "along `dim`, kept with size 1 when keepdim=True. `out` is ignored."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=[
        Case("small_global", STANDARD, {"shape": (10,), "mode": "standard"}),
        Case("small_dim1", STANDARD, {"shape": (10, 20), "mode": "standard", "dim": 1}),
        Case("small_dim1_keepdim", STANDARD, {"shape": (10, 20), "mode": "standard", "dim": 1, "keepdim": True}),
        Case("small_tanh", STANDARD, {"shape": (10,), "mode": "standard", "approximate": "tanh"}),
        *[
            Case(f"{mode}_dim{d}", STANDARD if mode == "standard" else OUTLIER,
                 {"shape": (128, 256), "mode": mode, "dim": d, "approximate": "tanh"})  # fmt: skip
            for mode in ("standard", "outlier")
            for d in (None, 0, 1)
        ],
        Case("standard_correction0", STANDARD, {"shape": (33, 500), "mode": "standard", "dim": -1, "correction": 0}),
    ],
    perf=[Case(f"n2^{e}", PERF, {"shape": (2**e,), "mode": "uniform"}) for e in (24, 25, 26, 27)],
    flops=_flops,
    bytes=_bytes,
    notes="fixed random cases seeded; correction=0 case added.",
)
