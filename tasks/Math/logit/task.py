"""Math/logit: log(x / (1 - x)) elementwise in fp32, after clamping to [eps, 1 - eps] when eps is given.

kbx judges `out` after the call in the cases that pass it (upstream compared only the return value).
"""

import torch

from kbx.tasks import FIXED, OUTLIER, PERF, STANDARD, Call, Case, Task
from kbx.tasks.inputs import literal, rand_tensor


def reference(input: torch.Tensor, eps: float | None = None, out: torch.Tensor | None = None) -> torch.Tensor:
    return torch.logit(input, eps=eps, out=out)


def make_inputs(params, gen, device) -> Call:
    if "values" in params:
        x = literal(params["values"], "float32", device)
    elif params["mode"] == "uniform":
        x = rand_tensor(params["shape"], "float32", "uniform", gen, device)
    else:
        z = rand_tensor(params["shape"], "float32", params["mode"], gen, device)
        x = torch.sigmoid(z).clamp(1e-4, 1.0 - 1e-4)
    kwargs = {"eps": params["eps"]} if "eps" in params else {}
    if params.get("out"):
        kwargs["out"] = torch.zeros_like(x)
    return Call((x,), kwargs)


def _flops(input, eps=None, out=None):
    return 6.0 * input.numel()


def _bytes(input, eps=None, out=None):
    return 2.0 * input.numel() * input.element_size()


TASK = Task(
    entry="logit",
    dtypes=("float32",),
    signature="logit(input: torch.Tensor, eps: float | None = None, out: torch.Tensor | None = None) -> torch.Tensor",
    description=(
        "Return log(x / (1 - x)) elementwise as a new fp32 tensor of the input's shape. If eps is given, first "
        "clamp x to [eps, 1 - eps]; without eps, x = 0 gives -inf, x = 1 gives +inf and x outside [0, 1] gives "
        "nan. If `out` (same shape and dtype) is given, write the result into it and return `out`."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=[
        Case("fixed_basic", FIXED, {"values": [0.2, 0.5, 0.8]}),
        Case("fixed_eps_edges", FIXED, {"values": [0.0, 0.5, 1.0], "eps": 1e-6}),
        Case("fixed_eps_out", FIXED, {"values": [0.1, 0.9], "eps": 1e-6, "out": True}),
        Case("fixed_out", FIXED, {"values": [0.3, 0.7], "out": True}),
        Case("fixed_no_eps_edges", FIXED, {"values": [0.0, 1.0, 0.25]}),
        Case("standard", STANDARD, {"shape": (1024,), "mode": "standard", "eps": 1e-6}),
        Case("outlier", OUTLIER, {"shape": (1024,), "mode": "outlier", "eps": 1e-6}),
    ],
    perf=[Case(f"n2^{e}", PERF, {"shape": (2**e,), "mode": "uniform"}) for e in (24, 25, 26, 27)],
    dtype_bound={"fixed_eps_edges": "the clamp bound 1 - eps is rounded to fp32 (torch.clamp); in float64 it is not"},
    flops=_flops,
    bytes=_bytes,
    inplace=True,
    notes="`out` judged after the call; adds a no-eps case with 0 and 1 (infinities).",
)
