"""Self-checks of the task suite: every reference on every case, and the tolerance audit."""
