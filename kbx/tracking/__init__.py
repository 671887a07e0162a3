"""MLflow: one job run per job, one task run per task, the UI's links, and bringing runs home."""
