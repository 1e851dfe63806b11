"""aicr-admission's command line and log lines (the server and the decisions have tests of their own)."""
from __future__ import annotations

import io
import json
import logging
import subprocess
import sys

import pytest
from testfixtures import compare

from aicr_admission.main import JsonLog, LibraryLog, parse_args
from aicr_core.errors import UsageError


def test_flags_are_named_as_kubernetes_components_name_them() -> None:
    args = parse_args(["--tls-cert-file=c", "--tls-private-key-file=k", "--request-timeout=1m30s",
                       "--shutdown-delay-duration=5s", "--secure-port=0"])
    compare((args.request_timeout, args.shutdown_delay_duration, args.secure_port, args.bind_address,
             args.operator_namespace, args.max_request_bytes, args.kubeconfig),
            expected=(90.0, 5.0, 0, "0.0.0.0", "aicr-system", 4 * 1024 * 1024, None))


def test_connection_flags_default_to_outlasting_the_api_servers_idle_timeout() -> None:
    args = parse_args(["--tls-cert-file=c", "--tls-private-key-file=k"])
    compare((args.idle_timeout, args.max_connections, args.max_requests_inflight), expected=(120.0, 256, 16))
    assert args.idle_timeout > 90  # kube-apiserver's webhook client closes idle connections at 90 s
    args = parse_args(["--tls-cert-file=c", "--tls-private-key-file=k", "--idle-timeout=5m", "--max-connections=8"])
    compare((args.idle_timeout, args.max_connections), expected=(300.0, 8))


@pytest.mark.parametrize("argv, words", [
    ([], "the following arguments are required: --tls-cert-file, --tls-private-key-file"),
    (["--tls-cert-file=c", "--tls-private-key-file=k", "--secure-port=70000"], "--secure-port 70000 is not a port"),
    (["--tls-cert-file=c", "--tls-private-key-file=k", "--request-timeout=0s"], "--request-timeout must be positive"),
    (["--tls-cert-file=c", "--tls-private-key-file=k", "--request-timeout=5"], "--request-timeout"),
    (["--tls-cert-file=c", "--tls-private-key-file=k", "--tls-cert"], "unrecognized arguments: --tls-cert"),
    (["--tls-cert-file=c", "--tls-private-key-file=k", "--idle-timeout=0s"], "--idle-timeout must be positive"),
    (["--tls-cert-file=c", "--tls-private-key-file=k", "--max-connections=0"], "must be at least 1"),
])
def test_bad_flags_are_usage_errors(argv: list[str], words: str) -> None:
    with pytest.raises(UsageError) as raised:
        parse_args(argv)
    assert words in raised.value.message, raised.value.message


def test_a_usage_error_is_one_json_line_and_exit_2(tmp_path: object) -> None:
    proc = subprocess.run([sys.executable, "-m", "aicr_admission", "--tls-cert-file=x"], capture_output=True,
                          text=True, timeout=60)
    compare(proc.returncode, expected=2)
    (line,) = proc.stderr.splitlines()
    entry = json.loads(line)
    compare((entry["level"], entry["msg"]), expected=("error", "cannot start"))
    assert entry["error"].startswith("[USAGE] the following arguments are required"), entry


def test_a_missing_certificate_stops_it_at_start(tmp_path: object) -> None:
    proc = subprocess.run([sys.executable, "-m", "aicr_admission", "--tls-cert-file=/nonexistent/tls.crt",
                           "--tls-private-key-file=/nonexistent/tls.key", "--kubeconfig=/nonexistent"],
                          capture_output=True, text=True, timeout=60)
    compare(proc.returncode, expected=2)
    assert "cannot load the serving certificate" in json.loads(proc.stderr.splitlines()[-1])["error"], proc.stderr


def test_log_lines_are_json_and_library_warnings_join_them() -> None:
    out = io.StringIO()
    log = JsonLog(out)
    log("decision", user="alice", violated=["change-window"], code=None)
    root = logging.getLogger()
    saved = root.handlers[:]
    root.handlers[:] = [LibraryLog(log)]
    try:
        logging.getLogger("urllib3.connectionpool").warning("Connection pool is full, discarding connection: %s", "x")
        logging.getLogger("urllib3.connectionpool").info("not at info")
    finally:
        root.handlers[:] = saved
    first, second = (json.loads(line) for line in out.getvalue().splitlines())
    compare({k: v for k, v in first.items() if k != "time"},
            expected={"level": "info", "msg": "decision", "user": "alice", "violated": ["change-window"]})
    assert first["time"].endswith("Z") and len(first["time"]) == 24, first["time"]
    compare({k: v for k, v in second.items() if k != "time"}, expected={
        "level": "warning", "msg": "library", "logger": "urllib3.connectionpool",
        "error": "Connection pool is full, discarding connection: x"})


def test_library_records_reach_the_json_log_through_the_servers_owner() -> None:
    """What run() installs: a server's owner whose library log is the JSON log. The root logger keeps the
    handlers it had, plus the owner's one; a connect's records stay the connect's, not log lines."""
    from aicr_core import process_owner

    out = io.StringIO()
    root = logging.getLogger()
    handlers = list(root.handlers)
    owner = process_owner.ProcessOwner.server("aicr-admission", library_log=LibraryLog(JsonLog(out)))
    with process_owner.installed(owner):
        compare(root.handlers[:len(handlers)], expected=handlers)
        assert not process_owner.current().prompts_allowed() and not owner.alarm_signal and not owner.pauses_gc
        logging.getLogger("urllib3.connectionpool").warning("Connection pool is full, discarding connection: %s", "x")
        with process_owner.library_records():
            logging.getLogger().error("exec: missing token")
    compare(root.handlers, expected=handlers)
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    compare([{k: v for k, v in line.items() if k != "time"} for line in lines], expected=[{
        "level": "warning", "msg": "library", "logger": "urllib3.connectionpool",
        "error": "Connection pool is full, discarding connection: x"}])


def test_run_leaves_the_root_loggers_handlers_to_the_owner() -> None:
    """run() installs the owner before it connects, and no longer replaces the root logger's handlers."""
    import inspect

    from aicr_admission import main

    source = inspect.getsource(main.run)
    assert "handlers[:]" not in source and "getLogger()" not in source, source
    assert source.index("process_owner.install(") < source.index("service_session("), source


def test_the_webhook_imports_no_command_module() -> None:
    """It decides through the core (aicr_core.domain.write_decision), as the commands do, not through them."""
    import ast
    from pathlib import Path

    for source in (Path(__file__).resolve().parents[2] / "aicr_admission").glob("*.py"):
        tree = ast.parse(source.read_text())
        modules = [node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)]
        modules += [alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names]
        assert not [m for m in modules if m.startswith("aicr_commands")], (source.name, modules)
