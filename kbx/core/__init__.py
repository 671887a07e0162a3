"""Results and contracts every side shares: records, errors, hardware, secrets, telemetry. Imports nothing else of kbx."""
