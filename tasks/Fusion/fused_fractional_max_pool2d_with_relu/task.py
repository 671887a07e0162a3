"""Fusion/fused_fractional_max_pool2d_with_relu: ReLU, then fractional max pooling with random window offsets.

kbx departure: upstream compared outputs bit for bit with torch's own fractional_max_pool2d, whose
window offsets come from an internal torch.rand draw, so only a candidate replaying torch's RNG could
pass. kbx judges the output structurally (see `plausible`): for every (n, c) plane there must be
offsets u_h, u_w in [0, 1) such that every output equals the maximum of relu(input) over the k x k
window that torch's interval rule places for those offsets (start_i = floor((i + u) * alpha) -
floor(u * alpha) with alpha = (in - k) / (out - 1), and the last window flush with the end), and the
offsets must vary between planes (all planes sharing one offset sequence is rejected when that is very
unlikely for random u). Returned indices must point inside the matched window at a maximal element;
any maximal element is accepted on ties (upstream required torch's first maximum). Upstream's fixed
randn cases are seeded cases of the same shapes.
"""

import math

import torch
import torch.nn.functional as F

from kbx.tasks import OUTLIER, PERF, STANDARD, Call, Case, Task
from kbx.tasks.inputs import rand_tensor

FIXED_OFFSETS_MAX_PROB = 1e-6  # reject identical offsets in all planes only when this unlikely at random


def reference(input, kernel_size, output_size=None, output_ratio=None, return_indices=False):
    return F.fractional_max_pool2d(
        F.relu(input), kernel_size, output_size=output_size, output_ratio=output_ratio,
        return_indices=return_indices,
    )  # fmt: skip


def make_inputs(params, gen, device) -> Call:
    x = rand_tensor(params["shape"], "float32", params["mode"], gen, device)
    kwargs = {k: params[k] for k in ("output_size", "output_ratio", "return_indices") if k in params}
    return Call((x, params["kernel_size"]), kwargs)


def _pair(v):
    return (v, v) if isinstance(v, (int, float)) else tuple(v)


def _out_hw(input, output_size, output_ratio):
    if output_size is not None:
        return _pair(output_size)
    rh, rw = _pair(output_ratio)
    return int(input.shape[-2] * rh), int(input.shape[-1] * rw)


def _offset_sequences(n_in, n_out, k):
    """Every window-start sequence torch's rule can produce, as (S, n_out) int64, with each one's probability."""
    if n_out == 1:
        return torch.tensor([[n_in - k]]), torch.tensor([1.0], dtype=torch.float64)
    alpha = (n_in - k) / (n_out - 1)
    m = torch.arange(0, math.ceil(n_out * alpha) + 2, dtype=torch.float64)
    breaks = torch.unique(torch.cat([torch.frac(m / alpha), torch.zeros(1, dtype=torch.float64)]))
    breaks = breaks[(breaks >= 0) & (breaks < 1)]
    lengths = torch.diff(torch.cat([breaks, torch.ones(1, dtype=torch.float64)]))
    # also probe just around each breakpoint, in fp64 and in fp32, to admit rounding differences
    probes = torch.cat([breaks, (breaks + 1e-6).clamp(max=1 - 1e-9), (breaks - 1e-6).clamp(min=0)])
    i = torch.arange(n_out - 1, dtype=torch.float64)
    rows, probs = [], []
    for dt in (torch.float64, torch.float32):
        u = probes.to(dt)[:, None]
        a = torch.tensor(alpha, dtype=dt)
        seq = torch.floor((i.to(dt) + u) * a) - torch.floor(u * a)
        rows.append(seq.long())
    last = torch.full((probes.numel() * 2, 1), n_in - k, dtype=torch.long)
    seqs = torch.cat([torch.cat(rows), last], dim=1).clamp(0, n_in - k)
    # probability of each distinct sequence: the u-interval lengths of the fp64 breakpoints mapping to it
    uniq, inv = torch.unique(seqs, dim=0, return_inverse=True)
    probs = torch.zeros(uniq.shape[0], dtype=torch.float64)
    probs.index_add_(0, inv[: breaks.numel()], lengths)
    return uniq, probs


def plausible(call: Call, got) -> str:
    """'' if `got` is a fractional max-pool of relu(input) for some per-plane offsets; else a reason."""
    x, kernel_size = call.args
    output_size = call.kwargs.get("output_size")
    output_ratio = call.kwargs.get("output_ratio")
    return_indices = call.kwargs.get("return_indices", False)
    nb, ch, h, w = x.shape
    kh, kw = _pair(kernel_size)
    oh, ow = _out_hw(x, output_size, output_ratio)
    idx = None
    if return_indices:
        if not isinstance(got, (tuple, list)) or len(got) != 2:
            return "expected a (values, indices) pair"
        got, idx = got
        if not isinstance(idx, torch.Tensor) or idx.dtype != torch.int64 or tuple(idx.shape) != (nb, ch, oh, ow):
            return f"indices must be an int64 tensor of shape {(nb, ch, oh, ow)}"
        idx = idx.detach()
    if not isinstance(got, torch.Tensor) or tuple(got.shape) != (nb, ch, oh, ow) or got.dtype != x.dtype:
        return f"output must be a {x.dtype} tensor of shape {(nb, ch, oh, ow)}"
    r = F.relu(x.detach())  # on the input's device: a perf shape's planes are 2048 x 2048
    g = got.detach()
    wmax = F.max_pool2d(r, (kh, kw), stride=1)  # wmax[..., a, b] = max over the window starting at (a, b)
    rows, prow = _offset_sequences(h, oh, kh)
    cols, pcol = _offset_sequences(w, ow, kw)
    rows, cols = rows.to(r.device), cols.to(r.device)
    common_rows = torch.ones(rows.shape[0], dtype=torch.bool, device=r.device)
    common_cols = torch.ones(cols.shape[0], dtype=torch.bool, device=r.device)
    for n in range(nb):
        for c in range(ch):
            m, gp = wmax[n, c], g[n, c]
            row_ok = (m[:, cols[0, 0]][rows] == gp[:, 0]).all(1)  # the first column's window always starts at cols[0, 0]
            col_ok = (m[rows[0, 0]][cols] == gp[0, :]).all(1)
            found_r = torch.zeros_like(row_ok)
            found_c = torch.zeros_like(col_ok)
            bs = col_ok.nonzero().flatten()
            for a in row_ok.nonzero().flatten().tolist():
                match = (m[rows[a]][:, cols[bs]] == gp[:, None, :]).all(2).all(0)  # over candidate col seqs
                if idx is not None and match.any():
                    ip = idx[n, c]
                    ri, ci = ip // w, ip % w
                    in_rows = (ri >= rows[a][:, None]) & (ri < rows[a][:, None] + kh)
                    for t, b in enumerate(bs.tolist()):
                        if match[t]:
                            ok = in_rows & (ci >= cols[b][None, :]) & (ci < cols[b][None, :] + kw)
                            ok &= (ip >= 0) & (ip < h * w)
                            ok = ok.all() and bool((r[n, c].flatten()[ip.clamp(0, h * w - 1)] == gp).all())
                            match[t] = bool(ok)
                if match.any():
                    found_r[a] = True
                    found_c[bs[match]] = True
            if not found_r.any():
                what = "values and indices" if idx is not None else "values"
                return f"plane (n={n}, c={c}): {what} match no fractional pooling window layout of relu(input)"
            common_rows &= found_r
            common_cols &= found_c
    planes = nb * ch
    for what, common, probs in (("row", common_rows, prow), ("column", common_cols, pcol)):
        if planes > 1 and common.any() and float(probs.max()) ** (planes - 1) < FIXED_OFFSETS_MAX_PROB:
            return f"all {planes} planes use the same {what} window offsets: the offsets are not random per plane"
    return ""


def _flops(input, kernel_size, output_size=None, output_ratio=None, return_indices=False):
    oh, ow = _out_hw(input, output_size, output_ratio)
    kh, kw = _pair(kernel_size)
    return float(input.numel() + input.shape[0] * input.shape[1] * oh * ow * kh * kw)


def _bytes(input, kernel_size, output_size=None, output_ratio=None, return_indices=False):
    oh, ow = _out_hw(input, output_size, output_ratio)
    n_out = input.shape[0] * input.shape[1] * oh * ow
    return float(input.numel() * input.element_size() + n_out * (input.element_size() + 8 * bool(return_indices)))


_SMALL = {"shape": (1, 1, 8, 8), "mode": "standard"}

TASK = Task(
    entry="fused_fractional_max_pool2d_with_relu",
    dtypes=("float32", "int64"),
    signature=(
        "fused_fractional_max_pool2d_with_relu(input: torch.Tensor, kernel_size: int | tuple[int, int], "
        "output_size: int | tuple[int, int] | None = None, output_ratio: float | tuple[float, float] | None = None, "
        "return_indices: bool = False) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]"
    ),
    description=(
        "Apply ReLU to the (N, C, H, W) fp32 input, then fractional max pooling with a kh x kw window to "
        "(oh, ow) = output_size, or (int(H * ratio_h), int(W * ratio_w)) from output_ratio. For each (n, c) "
        "plane draw fresh offsets u_h, u_w uniform in [0, 1); along a dim with input size L, output size O and "
        "kernel k, alpha = (L - k) / (O - 1), window i < O - 1 starts at floor((i + u) * alpha) - floor(u * alpha) "
        "and the last starts at L - k. Each output is the max over its window. With return_indices=True also "
        "return int64 indices (flat h * W + w within the plane) of a maximal element. Outputs are judged "
        "structurally: any valid random offsets are fine, torch's RNG stream need not be reproduced."
    ),
    reference=reference,
    make_inputs=make_inputs,
    cases=[
        Case("small_k2_size4", STANDARD, {**_SMALL, "kernel_size": (2, 2), "output_size": (4, 4)}),
        Case("small_k2_ratio", STANDARD, {**_SMALL, "kernel_size": (2, 2), "output_ratio": (0.5, 0.5)}),
        Case("small_indices", STANDARD, {**_SMALL, "kernel_size": (2, 2), "output_size": (4, 4),
                                         "return_indices": True}),
        Case("small_k3_size4", STANDARD, {**_SMALL, "kernel_size": (3, 3), "output_size": (4, 4)}),
        Case("standard", STANDARD, {"shape": (2, 8, 32, 32), "mode": "standard", "kernel_size": (2, 2),
                                    "output_ratio": (0.5, 0.5)}),
        Case("standard_k3_uneven", STANDARD, {"shape": (2, 8, 40, 45), "mode": "standard", "kernel_size": (3, 3),
                                              "output_size": (20, 17)}),
        Case("standard_k3_indices", STANDARD, {"shape": (2, 8, 40, 40), "mode": "standard", "kernel_size": 3,
                                               "output_ratio": (0.5, 0.5), "return_indices": True}),
        Case("outlier", OUTLIER, {"shape": (2, 8, 32, 32), "mode": "outlier", "kernel_size": (2, 2),
                                  "output_ratio": (0.5, 0.5)}),
    ],
    perf=[
        Case(f"16x3x{hw}", PERF, {"shape": (16, 3, hw, hw), "mode": "uniform", "kernel_size": (3, 3),
                                  "output_ratio": (0.5, 0.5)})
        for hw in (512, 1024, 2048)
    ],
    flops=_flops,
    bytes=_bytes,
    stochastic=plausible,
    notes=(
        "judged structurally (every output is the max of relu(input) over a valid fractional-pool window for "
        "some per-plane offsets, offsets vary across planes), not by torch's RNG bits; ties accept any max index."
    ),
)
