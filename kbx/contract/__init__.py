"""The contract every side shares: what is judged (an Attempt), how a candidate's output is compared
with the reference's, and how kernels are timed. The judge, the driver and every method import it."""
