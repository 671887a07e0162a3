"""Stochastic op done by PyTorch: a plausible dropout draw, but no Triton kernel launched.

TASK: Fusion/zoo_dropout
EXPECT: no_triton
"""

import torch


def dropout(input, p=0.5):
    return torch.nn.functional.dropout(input, p=p, training=True)
