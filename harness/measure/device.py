"""The GPU at hand: identity, capabilities and clocks (CuPy for CUDA, NVML for the rest)."""

from __future__ import annotations

from dataclasses import dataclass

from harness.errors import DeviceError

REQUIRED_CC = (9, 0)  # probes are built for sm_90a


@dataclass(frozen=True)
class DeviceInfo:
    index: int
    name: str
    uuid: str
    sm_count: int
    cc_major: int
    cc_minor: int
    total_memory_bytes: int
    l2_bytes: int
    max_sm_clock_mhz: int | None
    max_mem_clock_mhz: int | None
    power_limit_w: float | None
    driver_version: str
    cuda_driver_version: str

    @property
    def simulated(self) -> bool:
        """The simulated GPU of the tests (harness/orchestration/fakegpu.py), whose numbers are synthetic."""
        return is_simulated(self.uuid)


SIMULATED_UUID_PREFIX = "FAKE-GPU-"


def is_simulated(uuid: str | None) -> bool:
    return bool(uuid) and uuid.startswith(SIMULATED_UUID_PREFIX)


def format_uuid(raw: bytes) -> str:
    """CUDA's 16-byte device UUID as NVML writes it: GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx."""
    h = bytes(raw).hex()
    return f"GPU-{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"


def cuda_uuid(index: int) -> str | None:
    """The UUID of CUDA's device `index` (its properties only: no context is created); None if unknown.

    CuPy hands the 16 bytes over as a C string, cut at the first zero byte (GPU-d600fccb-... came back
    as "GPU-d6----", and NVML then found no such GPU: no telemetry at all); short of 16 bytes, the
    driver API answers instead."""
    try:
        from cupy.cuda import runtime

        raw = runtime.getDeviceProperties(index).get("uuid")
        if raw is not None and len(raw) == 16:
            return format_uuid(raw)
        return _driver_uuid(index)
    except Exception:
        return None


def _driver_uuid(index: int) -> str | None:
    from cuda.bindings import driver

    (err,) = driver.cuInit(0)
    err_device, device = driver.cuDeviceGet(index)
    err_uuid, uuid = driver.cuDeviceGetUuid(device)
    if driver.CUresult.CUDA_SUCCESS != err or err_device != err or err_uuid != err:
        return None
    return format_uuid(bytes(uuid.bytes))


def nvml_handle(uuid: str):
    """NVML's handle of the GPU with this UUID. Never by index: CUDA_VISIBLE_DEVICES and CUDA's
    fastest-first order make CUDA's index i another GPU than NVML's index i."""
    import pynvml

    pynvml.nvmlInit()
    return pynvml.nvmlDeviceGetHandleByUUID(uuid)


def _nvml(uuid: str) -> dict:
    try:
        import pynvml

        handle = nvml_handle(uuid)
        return {
            "uuid": pynvml.nvmlDeviceGetUUID(handle),
            "max_sm_clock_mhz": pynvml.nvmlDeviceGetMaxClockInfo(handle, pynvml.NVML_CLOCK_SM),
            "max_mem_clock_mhz": pynvml.nvmlDeviceGetMaxClockInfo(handle, pynvml.NVML_CLOCK_MEM),
            "power_limit_w": pynvml.nvmlDeviceGetEnforcedPowerLimit(handle) / 1000.0,
            "driver_version": pynvml.nvmlSystemGetDriverVersion(),
        }
    except Exception:  # NVML is optional telemetry: a missing library must not stop a run
        return {}


def sm_clock_now_mhz(uuid: str) -> int | None:
    """The SM clock NVML reports right now for the GPU with this UUID (None without NVML)."""
    try:
        import pynvml

        return pynvml.nvmlDeviceGetClockInfo(nvml_handle(uuid), pynvml.NVML_CLOCK_SM)
    except Exception:
        return None


def open_device(index: int = 0) -> DeviceInfo:
    """Select GPU `index` and describe it; DeviceError if there is none or it is not sm_90."""
    try:
        import cupy
        from cupy.cuda import runtime

        count = runtime.getDeviceCount()
    except Exception as exc:  # no driver, no CUDA library, or no device
        raise DeviceError(f"no CUDA GPU is visible ({str(exc).splitlines()[0][:120]}): "
                          "`bench run` needs an sm_90 GPU") from None
    if count == 0:
        raise DeviceError("no CUDA GPU is visible: `bench run` needs an sm_90 GPU")
    if not 0 <= index < count:
        raise DeviceError(f"GPU index {index} does not exist: this machine has GPUs 0..{count - 1}")
    cupy.cuda.Device(index).use()
    props = runtime.getDeviceProperties(index)
    name = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
    cc = (props["major"], props["minor"])
    if cc != REQUIRED_CC:
        raise DeviceError(f"GPU {index} ({name}) is sm_{cc[0]}{cc[1]}: the probes need sm_90 (Hopper)")
    uuid = cuda_uuid(index) or f"unknown-{index}"
    nvml = _nvml(uuid)
    driver = runtime.driverGetVersion()
    return DeviceInfo(
        index=index, name=name, uuid=uuid,
        sm_count=props["multiProcessorCount"], cc_major=cc[0], cc_minor=cc[1],
        total_memory_bytes=props["totalGlobalMem"], l2_bytes=props["l2CacheSize"],
        max_sm_clock_mhz=nvml.get("max_sm_clock_mhz"), max_mem_clock_mhz=nvml.get("max_mem_clock_mhz"),
        power_limit_w=nvml.get("power_limit_w"), driver_version=nvml.get("driver_version", "unknown"),
        cuda_driver_version=f"{driver // 1000}.{driver % 1000 // 10}")
