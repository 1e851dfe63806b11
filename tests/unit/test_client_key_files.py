"""The client's key files under concurrent sessions: a name is handed out only once its file is whole.

The official client remembers one temporary file per content and published the name before writing
it; a fleet's sessions with one client certificate, set up at once, then loaded an empty key
("[SSL] PEM lib"). aicr_core.session.client_adapter serialises the writer (it replaces it when imported).
Run in a child process: the process's temporary files go to its private folder, removed at its exit.
"""
from __future__ import annotations

import subprocess
import sys

from testfixtures import compare

CHILD = r"""
import sys, threading
from kubernetes.config import kube_config
if sys.argv[1] == "fixed":
    import aicr_core.session.client_adapter
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


# Two sessions, in an order that events fix (no timing): the first is inside the write of its key file
# when the second asks for the same content; the second reads the file it is handed.
ORDERED = r"""
import sys, threading
from kubernetes.config import kube_config
if sys.argv[1] == "fixed":
    import aicr_core.session.client_adapter
writing, read = threading.Event(), threading.Event()

class Key(str):
    def encode(self, *args, **kwargs):
        writing.set()      # the name is handed out by now (the client's order); the file is still empty
        read.wait(5)       # with the lock, the second session waits for this write instead: 5 s, then on
        return str(self).encode(*args, **kwargs)

content = Key("K" * 4096)
seen = []

def second():
    writing.wait(30)
    with open(kube_config._create_temp_file_with_content(content), encoding="ascii") as file:
        seen.append(len(file.read()))
    read.set()

threads = [threading.Thread(target=kube_config._create_temp_file_with_content, args=(content,)),
           threading.Thread(target=second)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
kube_config._cleanup_temp_files()
print(seen[0])
"""


def read_by_the_second(mode: str) -> int:
    proc = subprocess.run([sys.executable, "-c", ORDERED, mode], capture_output=True, text=True, timeout=120)
    compare(proc.returncode, expected=0, suffix=proc.stderr)
    return int(proc.stdout)


def test_the_clients_own_writer_hands_out_a_name_before_its_file_is_whole() -> None:
    """The race this guards against is real: with the client's own writer, the second session reads an empty
    file; with the lock, the whole key. (Deterministic: the order is fixed by events.)"""
    compare([read_by_the_second("client"), read_by_the_second("fixed")], expected=[0, 4096])
