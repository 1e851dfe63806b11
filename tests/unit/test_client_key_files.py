"""The client's key files under concurrent sessions: a name is handed out only once its file is whole.

The official client remembers one temporary file per content and published the name before writing
it; a fleet's sessions with one client certificate, set up at once, then loaded an empty key
("[SSL] PEM lib"). aicr_core.session.private_temp serialises the writer. Run in a child process:
`use()` moves the process's temporary files and removes them at its exit.
"""
from __future__ import annotations

import subprocess
import sys

from testfixtures import compare

CHILD = r"""
import sys, threading
from kubernetes.config import kube_config
if sys.argv[1] == "fixed":
    from aicr_core.session import private_temp
    private_temp.use()
content = "K" * (16 << 20)   # a large content: its write takes long enough for another thread to ask
torn = []
start = threading.Barrier(8)

def session():
    start.wait()
    name = kube_config._create_temp_file_with_content(content)
    with open(name, encoding="ascii") as file:
        if len(file.read()) != len(content):
            torn.append(name)

threads = [threading.Thread(target=session) for _ in range(8)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
kube_config._cleanup_temp_files()
print(len(torn))
"""


def torn_reads(mode: str) -> int:
    proc = subprocess.run([sys.executable, "-c", CHILD, mode], capture_output=True, text=True, timeout=120)
    compare(proc.returncode, expected=0, suffix=proc.stderr)
    return int(proc.stdout)


def test_no_session_gets_the_name_of_a_key_file_still_being_written() -> None:
    compare([torn_reads("fixed") for _ in range(3)], expected=[0, 0, 0])


def test_the_clients_own_writer_hands_out_a_name_before_its_file_is_whole() -> None:
    """The race this guards against is real: without the lock, some session reads a torn file."""
    assert any(torn_reads("client") for _ in range(20)), "the client's writer no longer races: drop the lock?"
