"""Code that runs next to the candidate (its worker, the zygote) or as the trusted judge. Started by module
name (`python -m kbx.sandbox.zygote`, `kbx.sandbox.judge`); the driver never imports it."""
