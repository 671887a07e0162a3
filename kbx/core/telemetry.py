"""GPU telemetry through NVML (nvidia-ml-py), read around each timed shape.

Energy comes from the board's cumulative energy counter (millijoules), so energy per call is
(counter after - counter before) / calls, not an integral of sampled power. Where NVML or a GPU
is absent every reading degrades to "no telemetry" with the reason, never an exception.
"""

from __future__ import annotations

import dataclasses

BYTES_PER_MB = 1e6  # memory_used_mb is in megabytes (SI), as its name says
# In MLflow, telemetry metrics sit under one prefix: the UI groups charts by the part before "/"
# (as it does MLflow's own `system/` metrics), and every name ends in its unit.
MLFLOW_PREFIX = "gpu/"
# NVML's clocks-event (throttle) reason bits (nvmlClocksEventReason*), named for a readable tag.
THROTTLE_REASONS = {0x1: "gpu_idle", 0x2: "applications_clocks_setting", 0x4: "sw_power_cap", 0x8: "hw_slowdown",
                    0x10: "sync_boost", 0x20: "sw_thermal_slowdown", 0x40: "hw_thermal_slowdown",
                    0x80: "hw_power_brake_slowdown", 0x100: "display_clock_setting"}  # fmt: skip


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


@dataclasses.dataclass(frozen=True)
class ProcessSample:
    """One of NVML's per-process utilisation samples: a process's share of the last sample period (1/6 s to
    1 s) with a kernel running (sm_pct) or memory moving (mem_pct); `pid` as the driver reports it."""

    pid: int
    time_us: float  # the sample's CPU timestamp, microseconds since the epoch (time.time() * 1e6)
    sm_pct: float
    mem_pct: float


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
                memory_used_mb=n.nvmlDeviceGetMemoryInfo(h).used / BYTES_PER_MB,
            )
        except Exception as exc:  # a counter this board lacks must not fail the measurement
            return Snapshot(ok=False, reason=f"NVML read failed: {exc}")

    def uuid(self) -> str:
        """The GPU's UUID ("" when NVML cannot say)."""
        return self._text(self.nvml.nvmlDeviceGetUUID if self.handle is not None else None)

    def name(self) -> str:
        """The GPU's name, e.g. "NVIDIA H100 80GB HBM3" ("" when NVML cannot say)."""
        return self._text(self.nvml.nvmlDeviceGetName if self.handle is not None else None)

    def driver_version(self) -> str:
        """The NVIDIA driver's version, e.g. "550.54.15" ("" when NVML cannot say)."""
        return self._text(lambda _: self.nvml.nvmlSystemGetDriverVersion()) if self.handle is not None else ""

    def _text(self, query) -> str:
        if query is None:
            return ""
        try:
            value = query(self.handle)
            return value.decode() if isinstance(value, bytes) else str(value)
        except Exception:  # NVMLError
            return ""

    def sm_clock_mhz(self) -> float:
        """The SM clock now, or 0 when NVML cannot say (GPU sleeps are counted in these cycles)."""
        if self.handle is None:
            return 0.0
        try:
            return float(self.nvml.nvmlDeviceGetClockInfo(self.handle, self.nvml.NVML_CLOCK_SM))
        except Exception:  # NVMLError
            return 0.0

    def kernel_busy_pct(self) -> float:
        """NVML's GPU utilization: the share of its last sample period (1/6 s to 1 s) in which a kernel
        ran, of any process; -1 when NVML cannot say. One small kernel at a time reads 100 %: a low
        figure proves the GPU idle, a high one does not prove it full."""
        if self.handle is None:
            return -1.0
        try:
            return float(self.nvml.nvmlDeviceGetUtilizationRates(self.handle).gpu)
        except Exception:  # NVMLError
            return -1.0

    def process_samples(self, since_us: float) -> list[ProcessSample]:
        """NVML's per-process utilisation samples taken after `since_us`; none where NVML cannot say (no
        GPU, an old driver, no sample yet: NVML then answers with an error, never an empty list)."""
        if self.handle is None:
            return []
        try:
            samples = self.nvml.nvmlDeviceGetProcessUtilization(self.handle, int(since_us))
        except Exception:  # NVMLError
            return []
        return [ProcessSample(int(s.pid), float(s.timeStamp), float(s.smUtil), float(s.memUtil)) for s in samples]

    def total_memory_bytes(self) -> int:
        """The device's memory, or 0 when NVML cannot say."""
        if self.handle is None:
            return 0
        try:
            return int(self.nvml.nvmlDeviceGetMemoryInfo(self.handle).total)
        except Exception:  # NVMLError
            return 0

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


def mlflow_names(fields: dict) -> dict:
    """Telemetry fields (energy_per_call_mj, power_w, ...) under their MLflow names (gpu/power_w, ...)."""
    return {MLFLOW_PREFIX + key: value for key, value in fields.items()}


def throttle_names(mask: int) -> str:
    """NVML's throttle bitmask in words ("none" when the clocks were not held back)."""
    names = [name for bit, name in THROTTLE_REASONS.items() if mask & bit]
    unknown = mask & ~sum(THROTTLE_REASONS)
    return ",".join(names + ([f"other_0x{unknown:x}"] if unknown else [])) or "none"
