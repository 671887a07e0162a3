"""Spins forever at call time (a busy loop, the GIL released now and then), so the worker never
reports; the evaluator must kill it at check_timeout_s. Evaluated with a short timeout.

TASK: Math/zoo_scale_add
EXPECT: timeout
"""


def scale_add(input, other):
    n = 0
    while True:
        n += 1
