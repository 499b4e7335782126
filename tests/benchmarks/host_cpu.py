"""What the whole host ran during a timed run, from /proc/stat (Linux): the benchmarks tell a run that had the
machine to itself from one another process disturbed (other processes' CPU = the host's busy CPU - the run's own).
Imported by `bench_metrics.py`; `bench_batches.py` puts this source into the scripts it times (they run on the tree
under test, where this folder is not on the path)."""

import os


def host_ticks():
    """The host's CPU ticks since boot by kind (user, nice, system, idle, iowait, irq, softirq, steal, guest, ...),
    or None off Linux."""
    try:
        with open("/proc/stat") as stat:
            return [int(field) for field in stat.readline().split()[1:]]
    except OSError:
        return None


def host_busy_seconds(ticks):
    """Busy CPU seconds in `ticks` (a `host_ticks()` or a difference of two): user to steal, all but idle and I/O
    wait; guest time is counted in user already."""
    return (sum(ticks[:8]) - ticks[3] - ticks[4]) / os.sysconf("SC_CLK_TCK")


def others(before, after, own_cpu_s):
    """Other processes' CPU seconds and the steal between two `host_ticks()` around a run that used `own_cpu_s`
    ({} off Linux)."""
    if before is None or after is None:
        return {}
    delta = [b - a for a, b in zip(before, after)]
    steal = delta[7] / os.sysconf("SC_CLK_TCK") if len(delta) > 7 else 0.0
    return {"others_cpu_s": host_busy_seconds(delta) - own_cpu_s, "steal_s": steal}
