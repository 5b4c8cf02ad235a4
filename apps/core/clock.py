"""Time in Conductor's unit: epoch milliseconds (int)."""
import time


def now_ms() -> int:
    """Current wall-clock time in epoch milliseconds."""
    return time.time_ns() // 1_000_000
