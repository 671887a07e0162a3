"""One Hydra job: preflight checks, the run of a suite through a method, its summary."""
