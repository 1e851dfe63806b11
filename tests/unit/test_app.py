"""The application in-process: output streams, warnings, races explained, client logging kept quiet."""
from __future__ import annotations

import io
import logging

from testfixtures import LogCapture, OutputCapture, compare

from aicr_core.domain import actions
from aicr_core.domain.rollouts import parse_rollout
from aicr_core.framework.app import AicrApp

from support.samples import rollout

APPROVAL = {"user": "bob", "expires": "2026-11-30T02:00:00Z", "reason": "r"}


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = AicrApp(stdout=out, stderr=err).run(list(argv))
    return code, out.getvalue(), err.getvalue()


def test_errors_go_to_stderr_only() -> None:
    with OutputCapture(separate=True) as output:
        code = AicrApp().run(["approve", "rollout-3f9a1c0d2b7e4a51-1"])
    compare(code, expected=2)
    output.compare(stdout="", stderr="error: [USAGE] approve needs --reason TEXT (at most 1024 characters)")


def test_usage_goes_to_stderr_with_the_error() -> None:
    code, out, err = run()
    compare((code, out), expected=(2, ""))
    assert err.endswith("error: [USAGE] no command given\n")


def test_an_internal_error_is_one_line_not_a_traceback(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.delenv("AICR_DEBUG", raising=False)
    monkeypatch.setattr(AicrApp, "load_renderer", lambda self, name: 1 / 0)
    code, out, err = run("help")
    compare((code, out), expected=(1, ""))
    compare(err, expected="error: [INTERNAL] ZeroDivisionError: division by zero "
                          "(a bug; run with AICR_DEBUG=1 for the traceback)\n")


def test_lost_races_name_the_winner_or_say_conflict() -> None:
    approved = parse_rollout(rollout(approval=APPROVAL))
    compare(actions.APPROVE.lost_race(approved).code, expected="ALREADY_APPROVED")
    assert "already approved by bob" in actions.APPROVE.lost_race(approved).message
    moved = parse_rollout(rollout(status={"phase": "Progressing"}))
    compare((actions.APPROVE.lost_race(moved).code, actions.REVOKE.lost_race(moved).code),
            expected=("CONFLICT", "CONFLICT"))
    revoked = parse_rollout(rollout(approval=APPROVAL, revocation={"user": "carol", "time": "2026-11-29T00:00:00Z",
                                                                       "reason": "x"}))
    assert "already revoked by carol" in actions.REVOKE.lost_race(revoked).message
    compare(actions.ACKNOWLEDGE.lost_race(moved).code, expected="NOT_AWAITING_ACKNOWLEDGEMENT")


def test_the_kubernetes_clients_log_is_collected_not_printed() -> None:
    """Under the command line's owner, what the client logs while a session loads is collected (the
    session's error), and what it logs otherwise is not printed: errors are ours to print."""
    from aicr_core import process_owner

    with process_owner.installed(process_owner.ProcessOwner.command_line()):
        with OutputCapture(separate=True) as output:  # without a handler, logging would print to stderr
            with process_owner.library_records() as records:
                logging.getLogger().error("exec: process returned 1. detail\nsecond line")
            logging.getLogger().error("a library's warning outside any connect")
        output.compare(stdout="", stderr="")
        compare([r.getMessage() for r in records], expected=["exec: process returned 1. detail\nsecond line"])


def test_the_policy_loader_logs_nothing_when_no_policy_is_installed() -> None:
    from aicr_core.domain.policy_engine import load_policies

    with LogCapture() as log:
        policies = load_policies()
    log.check()  # stevedore and pluggy stay silent
    compare(policies.failures, expected={})



def test_library_warnings_become_one_warning_line() -> None:
    for _ in range(2):  # a second app takes the handler over
        app = AicrApp(stdout=io.StringIO(), stderr=io.StringIO())
        app.configure_logging()
    logging.getLogger("stevedore.extension").error("Could not load %r: %s", "ticket", "No module named 'x'\nmore")
    compare(app.stderr.getvalue(), expected="warning: Could not load 'ticket': No module named 'x'\n")


def test_the_session_never_retries_and_adds_no_log_handler(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A retry would run behind the shared deadline's back; a connect adds no handler (the process owner's
    one is added once, when it is installed)."""
    import json

    from aicr_core.session import kube

    kc = tmp_path / "kc"
    kc.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:1", "insecure-skip-tls-verify": True}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}]}))
    handlers = list(logging.getLogger().handlers)
    for _ in range(3):
        cluster = kube.connect(str(kc), None)
    compare(cluster.api.rest_client.pool_manager.connection_pool_kw["retries"].total, expected=False)
    compare(logging.getLogger().handlers, expected=handlers)
