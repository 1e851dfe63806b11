"""Alerting end to end: a rollout waiting for approval reaches a person, on the real programs and control plane.

kube-state-metrics (the shipped config, as a user bound only to the shipped
ClusterRole), Prometheus (a copy of the shipped rules with `for:` and the group
interval shortened, nothing else changed) and Alertmanager (the shipped example,
its receivers pointed at a receiver inside this test): the approvers are told, reminded, and
the approval resolves it; an approval about to run out is told too; the pager is told of a close
deadline, with the pending alert inhibited. docs/alerting.md gives the figures this test records.
"""
from __future__ import annotations

import datetime as dt
import re
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import envtest
import pytest
from testfixtures import compare

from support.harness import Aicr
from support.monitoring_stack import Stack

pytestmark = pytest.mark.monitoring  # kube-state-metrics, Prometheus, Alertmanager

WAITING = "15s"  # every rule's `for:` in the copy: long enough for `kubectl aicr approve` on a loaded machine
REPEAT = "6s"  # Alertmanager's repeat_interval in the copy: the reminder


@pytest.fixture
def stack(plane: envtest.ControlPlane, tmp_path: Path) -> Iterator[Stack]:
    running = Stack(plane, tmp_path / "monitoring", WAITING, REPEAT)
    running.workdir.mkdir()
    try:
        yield running.start()
    finally:
        running.stop()


def wait_for(what: str, check: Any, stack: Stack, timeout: float = 90) -> Any:
    ends = time.monotonic() + timeout
    while time.monotonic() < ends:
        found = check()
        if found:
            return found
        time.sleep(0.2)
    raise AssertionError(f"no {what} within {timeout:.0f}s\n{stack.log_tails()}")


def figure(record_property: Any, name: str, value: float) -> None:
    """A measurement: in the JUnit report, and on stderr for `pytest -s`."""
    record_property(name, round(value, 1))
    sys.stderr.write(f"\n{name}: {value:.1f}\n")


def notes_of(stack: Stack, rollout: str, status: str) -> list[tuple[float, str, dict[str, Any]]]:
    return [(at, path, alert) for at, path, alert in stack.receiver.alerts()
            if alert["labels"].get("rollout") == rollout and alert["status"] == status]


def test_a_rollout_waiting_for_approval_reaches_the_approvers(
        stack: Stack, seed: envtest.Seeder, plane: envtest.ControlPlane, aicr: Aicr, record_property: Any) -> None:
    created = time.monotonic()
    waiting = seed.rollout(phase="AwaitingApproval")
    # A third waits too, with its deadline 30 minutes away: the pager is told, and its pending alert inhibited.
    deadline_soon = seed.rollout(phase="AwaitingApproval",
                                 deadline=dt.datetime.now(dt.timezone.utc) + dt.timedelta(minutes=30))
    approved_at_once = seed.rollout(phase="AwaitingApproval")
    second_created = time.monotonic()
    approve = aicr("approve", approved_at_once, "--reason", "CHG-1 approved at once",
                   kubeconfig=plane.kubeconfig_for("alice"))
    assert approve.returncode == 0, approve.stderr
    approved_after = time.monotonic() - second_created
    assert approved_after < 15, f"the approval took {approved_after:.1f}s, longer than the rules' shortened for:"
    # A fourth is approved at once too, for 30 minutes: an approval about to run out, told to the approvers.
    expiring = seed.rollout(phase="AwaitingApproval")
    short = aicr("approve", expiring, "--reason", "CHG-3 short window", "--expires", "30m",
                 kubeconfig=plane.kubeconfig_for("carol"))
    assert short.returncode == 0, short.stderr
    # A fifth waits for an acknowledgement and gets it at once: the phase lags, nobody is told.
    acknowledged = seed.rollout(phase="AwaitingAcknowledgement", awaiting_release="nvsentinel",
                                approval={"user": "bob", "expires": "2099-01-01T00:00:00Z", "reason": "window"})
    ack = aicr("acknowledge", acknowledged, kubeconfig=plane.kubeconfig_for("alice"))
    assert ack.returncode == 0, ack.stderr

    first = wait_for("notification of the waiting rollout", lambda: notes_of(stack, waiting, "firing"), stack)
    at, path, alert = first[0]
    figure(record_property, "seconds_from_creation_to_notification", at - created)
    compare(path, expected="/aicr-approvers")
    compare((alert["labels"]["alertname"], alert["labels"]["severity"]), expected=("AICRApprovalPending", "warning"))
    assert "cluster" not in alert["labels"]
    description = alert["annotations"]["description"]
    assert f"kubectl aicr describe {waiting}\n" in description, description
    assert f"kubectl aicr approve {waiting} --reason '" in description, description
    assert "--context" not in description
    assert alert["annotations"]["runbook_url"].endswith("/docs/alerting.md#aicrapprovalpending")

    series = [line for line in stack.ksm_metrics().splitlines() if f'rollout="{waiting}"' in line]
    names = {re.match(r"[a-z_]+", line).group(0) for line in series}  # type: ignore[union-attr]
    figure(record_property, "series_per_waiting_rollout", len(series))
    compare(names, expected={"aicr_runtimerollout_info", "aicr_runtimerollout_status_phase",
                             "aicr_runtimerollout_approval_required", "aicr_runtimerollout_deadline_timestamp_seconds",
                             "aicr_runtimerollout_created_timestamp_seconds"})

    told = wait_for("notification of the approval about to run out", lambda: notes_of(stack, expiring, "firing"), stack)
    _, path, alert = told[0]
    compare((path, alert["labels"]["alertname"], alert["labels"]["severity"], alert["labels"]["approver"]),
            expected=("/aicr-approvers", "AICRApprovalExpiringSoon", "warning", "carol"))
    assert re.search(r" runs out in (29|30)m", alert["annotations"]["summary"]), alert["annotations"]
    assert f"kubectl aicr describe {expiring}\n" in alert["annotations"]["description"] + "\n", alert["annotations"]
    assert "CHG-3" not in str(alert), alert  # the reason a person typed is in no label nor annotation
    assert all(a["labels"]["alertname"] == "AICRApprovalExpiringSoon" for _, _, a in told), told

    reminders = wait_for("reminder", lambda: notes_of(stack, waiting, "firing")[1:], stack, timeout=60)
    figure(record_property, "seconds_to_the_reminder", reminders[0][0] - at)

    approved = time.monotonic()
    proc = aicr("approve", waiting, "--reason", "CHG-2 maintenance window", kubeconfig=plane.kubeconfig_for("bob"))
    assert proc.returncode == 0, proc.stderr
    # The phase still says AwaitingApproval (no operator here reconciles): the approval alone resolves it.
    resolved = wait_for("resolved notification", lambda: notes_of(stack, waiting, "resolved"), stack)
    figure(record_property, "seconds_from_approval_to_resolved", resolved[0][0] - approved)

    # The rollout approved at once has been past the shortened `for:` for a while: it never fired.
    compare([a["labels"] for _, _, a in stack.receiver.alerts() if a["labels"].get("rollout") == approved_at_once],
            expected=[])
    compare(stack.query(f'ALERTS{{rollout="{approved_at_once}", alertstate="firing"}}[10m]'), expected=[])
    # The acknowledged one too, its phase still AwaitingAcknowledgement: its acknowledgement and the
    # release that waits are series of their own.
    compare([a["labels"] for _, _, a in stack.receiver.alerts() if a["labels"].get("rollout") == acknowledged],
            expected=[])
    compare(stack.query(f'ALERTS{{rollout="{acknowledged}", alertstate="firing"}}[10m]'), expected=[])
    acked_series = [line for line in stack.ksm_metrics().splitlines() if f'rollout="{acknowledged}"' in line]
    assert any(line.startswith("aicr_runtimerollout_awaiting_release_info{") and 'release="nvsentinel"' in line
               for line in acked_series), acked_series
    assert any(line.startswith("aicr_runtimerollout_acknowledgement_timestamp_seconds{")
               and 'release="nvsentinel"' in line and 'acknowledger="alice"' in line for line in acked_series), \
        acked_series
    assert any(line.startswith('aicr_runtimerollout_status_phase{') and 'phase="AwaitingAcknowledgement"' in line
               and line.endswith(" 1") for line in acked_series), acked_series
    # The deadline alert went to the pager; the pending alert of the same rollout fired in Prometheus, and
    # Alertmanager held it back (the example's inhibit rule).
    paged = [(path, a["labels"]["alertname"]) for _, path, a in notes_of(stack, deadline_soon, "firing")]
    assert ("/aicr-pager", "AICRApprovalDeadlineSoon") in paged, paged
    assert all(name != "AICRApprovalPending" for _, name in paged), paged
    assert stack.query(f'ALERTS{{rollout="{deadline_soon}", alertname="AICRApprovalPending", alertstate="firing"}}')
    approval_series = [line for line in stack.ksm_metrics().splitlines()
                       if f'rollout="{approved_at_once}"' in line and "approval_expires" in line]
    assert len(approval_series) == 1 and 'approver="alice"' in approval_series[0], approval_series
