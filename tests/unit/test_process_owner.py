"""The process owner (aicr_core.process_owner): what a program decides for its whole process, and that
connecting a session decides none of it.

A server-like loop connects a hundred times on threads against a fake API server and leaves the root
logger, the warnings filters, `tempfile.tempdir` and the caches as they were (or within their bounds);
a session on the main thread under a running event loop, in a server's process, ends by the watchdog
with no SIGALRM; the collector's pauses count across threads; prompts are the owner's to allow.
"""
from __future__ import annotations

import asyncio
import gc
import json
import logging
import os
import signal
import sys
import tempfile
import threading
import time
import warnings
from collections.abc import Iterator
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any

import pytest
from testfixtures import compare

from aicr_core import gc_pause, process_owner
from aicr_core.errors import AicrError, Code
from aicr_core.process_owner import ProcessOwner
from aicr_core.session import kube, kubeconfig, kubeconfig_files, tls_contexts
from aicr_core.session.deadline import Deadline

from support.fake_apiserver import FakeApiServer, Respond, Silent, fake_apiserver

VERSION = {"major": "1", "minor": "37", "gitVersion": "v1.37.2"}


def owners() -> list[Any]:
    return [pytest.param(None, id="no owner"), pytest.param(ProcessOwner.server("test"), id="a server's")]


def under(owner: ProcessOwner | None) -> AbstractContextManager[Any]:
    return nullcontext() if owner is None else process_owner.installed(owner)


def certificate_kubeconfig(server: FakeApiServer, path: Path) -> Path:
    """A kubeconfig whose user presents a client certificate given as data: the client writes it and its
    key to temporary files (the process's private folder)."""
    pair = server.client_certificate("alice")
    import base64

    return server.kubeconfig(path, {"client-certificate-data": base64.b64encode(pair.cert_pem).decode(),
                                    "client-key-data": base64.b64encode(pair.key_pem).decode()})


def rewrite(path: Path) -> None:
    """The same kubeconfig written again, atomically (a long-lived program's rotated file: a new mtime)."""
    text = path.read_text()
    fresh = path.with_suffix(".new")
    fresh.write_text(text)
    os.replace(fresh, path)


def process_state() -> dict[str, Any]:
    root = logging.getLogger()
    return {"root handlers": list(root.handlers), "root level": root.level, "warnings": list(warnings.filters),
            "tempfile.tempdir": tempfile.tempdir, "gettempdir": tempfile.gettempdir(),
            "gc": gc.isenabled()}


@pytest.mark.parametrize("owner", owners())
def test_a_hundred_connects_on_threads_change_nothing_of_the_process(tmp_path: Path,
                                                                      owner: ProcessOwner | None) -> None:
    with fake_apiserver(tmp_path, [Respond(200, VERSION)]) as server, under(owner):
        kc = certificate_kubeconfig(server, tmp_path / "kc")
        before, contexts = process_state(), tls_contexts.cached()
        failures: list[BaseException] = []
        lock = threading.Lock()
        turns = iter(range(100))

        def worker() -> None:
            while True:
                with lock:
                    turn = next(turns, None)
                    if turn is not None and turn % 10 == 9:
                        rewrite(kc)
                if turn is None:
                    return
                try:
                    compare(kube.connect(str(kc), None, Deadline(20)).get("/version"), expected=VERSION)
                except BaseException as err:  # noqa: BLE001 - reported below
                    failures.append(err)

        threads = [threading.Thread(target=worker) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        compare(failures, expected=[])
        compare(process_state(), expected=before)
        compare(len(server.requests), expected=100)
        # One list of files, read again when it changed: one merge kept; one CA and certificate: one context.
        compare(([paths for paths in kubeconfig_files._MERGED if str(kc) in paths], tls_contexts.cached()),
                expected=([(str(kc),)], min(contexts + 1, tls_contexts.MAX_CONTEXTS)))
        assert kubeconfig_files.cached() <= kubeconfig_files.MAX_MERGED
        assert tls_contexts.cached() <= tls_contexts.MAX_CONTEXTS
        assert kubeconfig._proxies_of.cache_info().currsize <= 8
        assert kubeconfig._blank_configuration.cache_info().currsize <= 8
        # The client's key files are in the process's private folder, which tempfile knows nothing of.
        from kubernetes.config import kube_config

        with process_owner.temp_folder() as folder:
            written = [name for name in kube_config._temp_files.values() if name.startswith(folder)]
        assert len(written) >= 2, (folder, kube_config._temp_files)
        assert not folder.startswith(os.path.join(tempfile.gettempdir(), "files")), folder


def test_a_servers_session_on_the_main_thread_under_an_event_loop_ends_by_the_watchdog(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The server's owner forbids SIGALRM: the session, used inside a coroutine on the main thread, ends in
    TIMEOUT when the watchdog shuts its socket, and no timer is armed (no Alarm can land in the loop)."""
    timers: list[tuple[Any, ...]] = []
    handlers: list[int] = []
    real_setitimer, real_signal = signal.setitimer, signal.signal

    def setitimer(*args: Any) -> Any:
        timers.append(args)
        return real_setitimer(*args)

    def set_handler(signum: int, handler: Any) -> Any:
        handlers.append(signum)
        return real_signal(signum, handler)

    monkeypatch.setattr(signal, "setitimer", setitimer)
    monkeypatch.setattr(signal, "signal", set_handler)

    def run(owner: ProcessOwner) -> tuple[AicrError, float]:
        async def read() -> tuple[AicrError, float]:
            assert threading.current_thread() is threading.main_thread()
            asyncio.get_running_loop()  # under a running event loop
            session = kube.connect(str(kc), None, Deadline(1.0))
            started = time.monotonic()
            with pytest.raises(AicrError) as raised:
                session.get("/version")
            return raised.value, time.monotonic() - started

        with process_owner.installed(owner):
            return asyncio.run(read())

    with fake_apiserver(tmp_path, [Silent()]) as server:
        kc = server.kubeconfig(tmp_path / "kc", {"token": "t"})
        error, took = run(ProcessOwner.server("test"))
        compare((error.code, timers, [h for h in handlers if h == signal.SIGALRM]), expected=(Code.TIMEOUT, [], []))
        assert 0.5 < took < 5, took
        assert "did not finish within 1s" in error.message, error.message
        # The command line's owner arms the timer there (what the server's must not do).
        error, _ = run(ProcessOwner.command_line())
        compare(error.code, expected=Code.TIMEOUT)
        assert timers and signal.SIGALRM in handlers, (timers, handlers)


def test_the_collectors_pauses_overlap_across_threads() -> None:
    """Two threads' pauses: the collector stays off until the last ends, then is on again as before."""
    entered, leave_first, first_left, leave_second = (threading.Event() for _ in range(4))
    seen = {}

    def first() -> None:
        with gc_pause.paused_gc():
            entered.set()
            leave_first.wait(10)
        first_left.set()

    def second() -> None:
        entered.wait(10)
        with gc_pause.paused_gc():
            leave_first.set()
            first_left.wait(10)
            seen["after the first ended"] = gc.isenabled()
            leave_second.wait(10)

    assert gc.isenabled()
    with process_owner.installed(ProcessOwner.command_line()):
        threads = [threading.Thread(target=first), threading.Thread(target=second)]
        for thread in threads:
            thread.start()
        first_left.wait(10)
        time.sleep(0.05)
        seen["while the second runs"] = gc.isenabled()
        leave_second.set()
        for thread in threads:
            thread.join(10)
        with gc_pause.paused_gc():
            with gc_pause.paused_gc():
                seen["nested"] = gc.isenabled()
            seen["nested, the inner ended"] = gc.isenabled()
    compare(seen, expected={"after the first ended": False, "while the second runs": False, "nested": False,
                            "nested, the inner ended": False})
    assert gc.isenabled()


@pytest.mark.parametrize("owner", owners())
def test_only_the_command_lines_owner_pauses_the_collector(owner: ProcessOwner | None) -> None:
    with under(owner), gc_pause.paused_gc():
        compare(gc.isenabled(), expected=True)


class Terminal:
    """A stdin that says it is a terminal."""

    def isatty(self) -> bool:
        return True


PLUGIN = """import json, os, sys
info = json.loads(os.environ["KUBERNETES_EXEC_INFO"])
print(json.dumps({"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential",
                  "status": {"token": "interactive-" + str(info["spec"]["interactive"])}}))
"""


@pytest.mark.parametrize(("owner", "expected"), [
    pytest.param(ProcessOwner.command_line(), "Bearer interactive-True", id="the command line's"),
    pytest.param(ProcessOwner.server("test"), "Bearer interactive-False", id="a server's"),
    pytest.param(None, "Bearer interactive-False", id="no owner"),
])
def test_whether_a_credentials_plugin_may_prompt_is_the_owners_to_say(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, owner: ProcessOwner | None, expected: str) -> None:
    plugin = tmp_path / "plugin.py"
    plugin.write_text(PLUGIN)
    monkeypatch.setattr(sys, "stdin", Terminal())
    with fake_apiserver(tmp_path, [Respond(200, VERSION)]) as server, under(owner):
        kc = server.kubeconfig(tmp_path / "kc", {"exec": {
            "apiVersion": "client.authentication.k8s.io/v1", "command": sys.executable, "args": [str(plugin)],
            "interactiveMode": "IfAvailable"}})
        kube.connect(str(kc), None, Deadline(20)).get("/version")
    compare(dict(server.requests[0].headers)["Authorization"], expected=expected)


def test_the_owners_handler_collects_a_connects_records_and_hands_the_rest_to_its_log() -> None:
    """A server's library records reach its log (the webhook's JSON lines) through the owner, but those
    logged on a thread inside `library_records()`, which are that block's."""
    seen: list[str] = []

    class Log(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            seen.append(record.getMessage())

    root = logging.getLogger()
    handlers = list(root.handlers)
    with process_owner.installed(ProcessOwner.server("test", library_log=Log())):
        logging.getLogger("urllib3.connectionpool").warning("Connection pool is full, discarding connection: x")
        with process_owner.library_records() as records:
            logging.getLogger().error("exec: missing token")
        logging.getLogger("urllib3.connectionpool").info("below warnings: not at all")
        compare(len(root.handlers), expected=len(handlers) + 1)  # its one handler, added at install
    compare((seen, [r.getMessage() for r in records]),
            expected=(["Connection pool is full, discarding connection: x"], ["exec: missing token"]))
    compare(root.handlers, expected=handlers)  # uninstalled: as it was


def test_one_owner_at_a_time_and_uninstall_restores_the_warnings_filters() -> None:
    filters = list(warnings.filters)
    with process_owner.installed(ProcessOwner.command_line()) as owner:
        assert process_owner.current() is owner
        with pytest.raises(RuntimeError, match="already has its owner"):
            process_owner.install(ProcessOwner.server("another"))
        assert list(warnings.filters) != filters  # urllib3's insecure-TLS warning silenced, once
    compare((process_owner.current(), list(warnings.filters)), expected=(process_owner.DEFAULT, filters))


def test_without_an_owner_the_process_is_a_servers_that_installs_nothing() -> None:
    """Library use and unit tests: no prompt, no SIGALRM, no GC pause, no quieted warning, no library log."""
    default = process_owner.current()
    compare((default is process_owner.DEFAULT, default.prompts_allowed(), default.alarm_signal, default.pauses_gc,
             default.quiet_insecure_tls, default.library_log), expected=(True, False, False, False, False, None))


@pytest.mark.parametrize(("owner", "warned"), [
    pytest.param(ProcessOwner.command_line(), [], id="the command line's"),
    pytest.param(None, ["InsecureRequestWarning"], id="no owner"),
])
def test_an_insecure_clusters_warning_is_the_owners_to_silence(tmp_path: Path, owner: ProcessOwner | None,
                                                               warned: list[str]) -> None:
    with fake_apiserver(tmp_path, [Respond(200, VERSION)]) as server, under(owner):
        kc = server.kubeconfig(tmp_path / "kc", {"token": "t"}, insecure=True)
        with warnings.catch_warnings(record=True) as caught:
            kube.connect(str(kc), None, Deadline(20)).create("/api/v1/namespaces", {})  # through urllib3's checks
    compare([type(w.message).__name__ for w in caught], expected=warned)


def test_the_private_folder_refuses_writes_once_removed(tmp_path: Path) -> None:
    folder = process_owner._TempFolder()
    with folder.use() as path:
        assert os.path.isdir(path) and (os.stat(path).st_mode & 0o777) == 0o700, path
        root = os.path.dirname(path)
    folder.remove()
    assert not os.path.exists(root), root
    with pytest.raises(FileNotFoundError), folder.use():
        pass


def test_the_merged_kubeconfigs_and_tls_contexts_are_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kubeconfig_files, "MAX_MERGED", 3)
    monkeypatch.setattr(kubeconfig_files, "_MERGED", type(kubeconfig_files._MERGED)())
    for i in range(6):
        path = tmp_path / f"kc{i}"
        path.write_text(json.dumps({"apiVersion": "v1", "kind": "Config", "contexts": [
            {"name": f"c{i}", "context": {"cluster": "k", "user": "u"}}]}))
        compare(kubeconfig_files.merged_context_names(str(path)), expected=[f"c{i}"])
    compare(kubeconfig_files.cached(), expected=3)

    class Connection:
        ssl_context = ca_cert_dir = key_password = ca_certs = cert_file = key_file = None
        cert_reqs, ssl_version, ssl_minimum_version, ssl_maximum_version = "CERT_REQUIRED", None, None, None

        def __init__(self, ca: str) -> None:
            self.ca_cert_data = ca

    monkeypatch.setattr(tls_contexts, "MAX_CONTEXTS", 2)
    monkeypatch.setattr(tls_contexts, "_CONTEXTS", type(tls_contexts._CONTEXTS)())
    with fake_apiserver(tmp_path, [Respond()]) as server:
        ca = server.ca_pem.decode()
    for comment in range(4):  # four CAs (the same certificate, told apart by a comment before it)
        tls_contexts.share(Connection(f"# {comment}\n{ca}"))
    compare(tls_contexts.cached(), expected=2)


def test_a_changed_proxy_environment_is_seen(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy-one:3128")
    compare(kubeconfig._configuration("https://10.0.0.1:6443").proxy, expected="http://proxy-one:3128")
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy-two:3128")
    compare(kubeconfig._configuration("https://10.0.0.1:6443").proxy, expected="http://proxy-two:3128")


@pytest.fixture(autouse=True)
def no_owner_left_behind() -> Iterator[None]:
    yield
    compare(process_owner.current(), expected=process_owner.DEFAULT)


class NoTerminal:
    """A stdin or stderr that says it is no terminal."""

    def isatty(self) -> bool:
        return False


@pytest.mark.parametrize(("owner", "stdin", "stderr", "expected"), [
    pytest.param(ProcessOwner.command_line(), Terminal(), Terminal(), True, id="the command line's, two terminals"),
    pytest.param(ProcessOwner.command_line(), NoTerminal(), Terminal(), False, id="the command line's, stdin a pipe"),
    pytest.param(ProcessOwner.command_line(), Terminal(), NoTerminal(), False, id="the command line's, stderr a file"),
    pytest.param(ProcessOwner.server("test"), Terminal(), Terminal(), False, id="a server's"),
    pytest.param(None, Terminal(), Terminal(), False, id="no owner"),
])
def test_whether_a_fleet_write_may_ask_is_the_owners_to_say_and_needs_stderr_a_terminal(
        monkeypatch: pytest.MonkeyPatch, owner: ProcessOwner | None, stdin: Any, stderr: Any,
        expected: bool) -> None:
    """The fleet's `[y/N]` follows the owner as a credentials plugin's prompt does; on the command line that is
    exactly what it was before the owner (stdin and stderr both terminals)."""
    from aicr_core.fleet import flags

    monkeypatch.setattr(sys, "stdin", stdin)
    monkeypatch.setattr(sys, "stderr", stderr)
    with under(owner):
        answer = flags.interactive()
    compare(answer, expected=expected)
