"""The blocked Householder QR of kbx/experts/householder.py on a GPU, at the perf shapes' sizes: the
interpreter runs one thread at a time and cannot show a race between warps (READ_BEFORE_WRITE there), so
this factors several matrices on the device and holds each to eager's own fp32 QR (cuSOLVER) on them.
"""

from __future__ import annotations

import pytest

SIZES = [(70, 45), (512, 512), (1024, 1024), (2048, 1024), (2048, 2048)]
REPEATS = 3
# |Q R - A| / |A| and |Q^T Q - I| (Frobenius, in float64) may exceed cuSOLVER's fp32 figures by this factor;
# a lost or doubled update makes them of order one.
FACTOR = 10.0
FLOOR = 1e-6  # below this both are rounding at any size


def errors(a, q, r):
    import torch

    a64, q64, r64 = a.double(), q.double(), r.double()
    eye = torch.eye(q.shape[-1], dtype=torch.float64, device=a.device)
    return ((q64 @ r64 - a64).norm() / a64.norm()).item(), (q64.mT @ q64 - eye).norm().item()


@pytest.mark.gpu
@pytest.mark.parametrize(("m", "n"), SIZES)
def test_blocked_householder_qr_on_the_gpu(m, n):
    import torch

    from kbx.experts.householder import form_q, householder

    gen = torch.Generator(device="cuda").manual_seed(m * 10_000 + n)
    for _ in range(REPEATS):
        a = torch.randn(1, m, n, device="cuda", generator=gen)
        w = a.clone()
        q = form_q(householder(w), min(m, n))
        ours = errors(a, q, torch.triu(w[:, : min(m, n), :]))
        eager = errors(a, *torch.linalg.qr(a))
        for name, got, ref in zip(("|QR - A| / |A|", "|Q^T Q - I|"), ours, eager, strict=True):
            assert got <= FACTOR * ref + FLOOR, f"{m}x{n}: {name} {got:.2e}, eager's {ref:.2e}"
