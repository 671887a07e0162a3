"""GPU telemetry through NVML (nvidia-ml-py), read around each timed shape.

Energy comes from the board's cumulative energy counter (millijoules), so energy per call is
(counter after - counter before) / calls, not an integral of sampled power. Where NVML or a GPU
is absent every reading degrades to "no telemetry" with the reason, never an exception.
"""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class Snapshot:
    ok: bool
    reason: str = ""
    energy_mj: float = 0.0
    power_w: float = 0.0
    sm_clock_mhz: float = 0.0
    mem_clock_mhz: float = 0.0
    temperature_c: float = 0.0
    throttle_reasons: int = 0  # NVML clocks-event bitmask; 0 means not throttled
    memory_used_mb: float = 0.0


class Telemetry:
    """Opens NVML once for one physical GPU index; `snapshot()` reads the counters."""

    def __init__(self, gpu_index: int) -> None:
        self.handle, self.reason = None, ""
        try:
            import pynvml

            pynvml.nvmlInit()
            self.nvml = pynvml
            self.handle = pynvml.nvmlDeviceGetHandleByIndex(gpu_index)
        except ImportError:
            self.reason = "nvidia-ml-py is not installed"
        except Exception as exc:  # NVMLError subclasses: library missing, no device, no permission
            self.reason = f"NVML unavailable: {exc}"

    def snapshot(self) -> Snapshot:
        if self.handle is None:
            return Snapshot(ok=False, reason=self.reason)
        n, h = self.nvml, self.handle
        try:
            return Snapshot(
                ok=True,
                energy_mj=float(n.nvmlDeviceGetTotalEnergyConsumption(h)),
                power_w=n.nvmlDeviceGetPowerUsage(h) / 1000.0,
                sm_clock_mhz=float(n.nvmlDeviceGetClockInfo(h, n.NVML_CLOCK_SM)),
                mem_clock_mhz=float(n.nvmlDeviceGetClockInfo(h, n.NVML_CLOCK_MEM)),
                temperature_c=float(n.nvmlDeviceGetTemperature(h, n.NVML_TEMPERATURE_GPU)),
                throttle_reasons=int(n.nvmlDeviceGetCurrentClocksEventReasons(h)),
                memory_used_mb=n.nvmlDeviceGetMemoryInfo(h).used / 2**20,
            )
        except Exception as exc:  # a counter this board lacks must not fail the measurement
            return Snapshot(ok=False, reason=f"NVML read failed: {exc}")


    def free_memory_bytes(self) -> int:
        """Free device memory as the driver sees it (all processes), or -1 when NVML cannot say."""
        if self.handle is None:
            return -1
        try:
            return int(self.nvml.nvmlDeviceGetMemoryInfo(self.handle).free)
        except Exception:  # NVMLError: treat as unknown, never as full
            return -1


def around(before: Snapshot, after: Snapshot, calls: int) -> dict:
    """Per-shape telemetry fields for a timing row (zeros plus the reason when unavailable)."""
    if not (before.ok and after.ok):
        return {"telemetry": before.reason or after.reason}
    return {
        "telemetry": "",
        "energy_per_call_mj": (after.energy_mj - before.energy_mj) / max(calls, 1),
        "power_w": after.power_w,
        "sm_clock_mhz": after.sm_clock_mhz,
        "mem_clock_mhz": after.mem_clock_mhz,
        "temperature_c": after.temperature_c,
        "throttle_reasons": after.throttle_reasons | before.throttle_reasons,
        "memory_used_mb": after.memory_used_mb,
    }
