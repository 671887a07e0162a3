"""Connects to a TCP listener the test runs on the host's loopback (port in KBX_ZOO_LISTEN_PORT)
and sends it a UDP datagram; the test counts what arrived (nothing may). Returns zeros.

TASK: Math/zoo_scale_add
EXPECT: mismatch
"""

import socket

import os

import torch
import triton
import triton.language as tl

PORT = int(os.environ.get("KBX_ZOO_LISTEN_PORT", "9"))

try:
    socket.create_connection(("127.0.0.1", PORT), timeout=2).sendall(b"escaped")
    print("ATTACK tcp: SUCCEEDED", flush=True)
except OSError as exc:
    print(f"ATTACK tcp: blocked ({exc.strerror})", flush=True)
try:
    socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"escaped", ("127.0.0.1", PORT))
    print("ATTACK udp: sent", flush=True)
except OSError as exc:
    print(f"ATTACK udp: blocked ({exc.strerror})", flush=True)

@triton.jit
def _zeros(out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.zeros([BLOCK], dtype=tl.float32), mask=offs < n)


def scale_add(input, other):
    out = torch.empty_like(input)
    _zeros[(triton.cdiv(out.numel(), 512),)](out, out.numel(), BLOCK=512)
    return out
