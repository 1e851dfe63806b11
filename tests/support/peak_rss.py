"""A command run with its peak resident memory and wall time measured, under a cap on its address space.

Wall time on a loaded machine says little: CPU time (user + system) is reported too.
The wrapper is a fresh Python process, so RUSAGE_CHILDREN holds only what it ran: kubectl, which execs
kubectl-aicr (the same process), and what that one waited for (a credentials plugin). The cap
(RLIMIT_AS) keeps a regression from taking the machine's memory: it ends in MemoryError instead.
"""
from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from typing import NamedTuple

_WRAPPER = ("import resource, subprocess, sys\n"
            "cap = int(sys.argv[1])\n"
            "def limit():\n"
            "    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))\n"
            "proc = subprocess.run(sys.argv[2:], capture_output=True, text=True, stdin=subprocess.DEVNULL,\n"
            "                      preexec_fn=limit)\n"
            "sys.stderr.write(proc.stderr)\n"
            "sys.stdout.write(proc.stdout)\n"
            "usage = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
            "print(usage.ru_utime + usage.ru_stime)\n"
            "print(usage.ru_maxrss)\n"
            "sys.exit(proc.returncode)\n")

CAP_BYTES = 3 << 30  # kubectl (Go) reserves address space generously; a runaway Python stops here


class Measured(NamedTuple):
    returncode: int
    stdout: str
    stderr: str
    peak_mib: float
    seconds: float  # wall time
    cpu_seconds: float  # user and system time: what the command cost, however loaded the machine is


def run_measured(argv: Sequence[str], env: Mapping[str, str], timeout: float = 60,
                 cap_bytes: int = CAP_BYTES) -> Measured:
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-c", _WRAPPER, str(cap_bytes), *argv], env=dict(env),
                          capture_output=True, text=True, timeout=timeout)
    seconds = time.monotonic() - started
    *output, cpu, peak = proc.stdout.splitlines() or ["0", "0"]
    return Measured(proc.returncode, "\n".join(output), proc.stderr, int(peak) / 1024, seconds, float(cpu))
