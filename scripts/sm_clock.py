"""The SM clock through NVML (ctypes: no pynvml needed) and the throttle rule of
src/measure/throttle.h, for scripts that time kernels outside fa-bench
(scripts/torch_peers.py). Every reading is -1 where NVML cannot be read."""
import ctypes

THROTTLE_DROP = 0.05  # same as kThrottleDrop in src/measure/throttle.h
_NVML_CLOCK_SM = 1


def throttle_reason(before, after, max_mhz=-1):
    """'' when the clock held near its maximum (or could not be read), else the reason text
    fa-bench writes."""
    if before <= 0 or after <= 0:
        return ""
    if after < before * (1.0 - THROTTLE_DROP):
        return (f"throttled: SM clock fell from {before} to {after} MHz while timing (power or thermal cap); "
                "the median mixes full-clock and throttled samples")
    if max_mhz > 0 and min(before, after) < max_mhz * (1.0 - THROTTLE_DROP):
        return (f"throttled: SM clock {before} -> {after} MHz while timing, more than {THROTTLE_DROP * 100:g} % "
                f"below its {max_mhz} MHz maximum (power or thermal cap); slower than at full clock")
    return ""


def _csv_clock(row, column):
    return int(float(row.get(column) or -1))


def max_clock_of(rows):
    """The highest SM clock any fa-bench / torch_peers CSV row read, -1 if none did."""
    return max([_csv_clock(r, c) for r in rows for c in ("clock_before_mhz", "clock_after_mhz")] or [-1])


def row_throttled(row, max_mhz):
    """Whether a CSV row counts as throttled: its reason says so, or its clock columns fail
    throttle_reason against max_mhz (so rows timed before fa-bench checked the maximum are
    judged the same way)."""
    return row.get("reason", "").startswith("throttled") or bool(
        throttle_reason(_csv_clock(row, "clock_before_mhz"), _csv_clock(row, "clock_after_mhz"), max_mhz))


class SmClock:
    """Current SM clock of one GPU, found by PCI bus id ("00000000:19:00.0"), else index 0."""

    def __init__(self, pci_bus_id=None):
        self._lib = None
        self._dev = ctypes.c_void_p()
        try:
            lib = ctypes.CDLL("libnvidia-ml.so.1")
            if lib.nvmlInit_v2() != 0:
                return
            rc = 1
            if pci_bus_id:
                rc = lib.nvmlDeviceGetHandleByPciBusId_v2(pci_bus_id.encode(), ctypes.byref(self._dev))
            if rc != 0:
                rc = lib.nvmlDeviceGetHandleByIndex_v2(ctypes.c_uint(0), ctypes.byref(self._dev))
            if rc == 0:
                self._lib = lib
        except (OSError, AttributeError):
            self._lib = None

    def max_mhz(self):
        """The device's maximum SM clock, -1 where it cannot be read."""
        return self._read("nvmlDeviceGetMaxClockInfo")

    def mhz(self):
        """The current SM clock, -1 where it cannot be read."""
        return self._read("nvmlDeviceGetClockInfo")

    def _read(self, fn_name):
        if self._lib is None:
            return -1
        value = ctypes.c_uint()
        try:
            rc = getattr(self._lib, fn_name)(self._dev, ctypes.c_int(_NVML_CLOCK_SM), ctypes.byref(value))
        except (OSError, AttributeError):
            return -1
        return int(value.value) if rc == 0 else -1
