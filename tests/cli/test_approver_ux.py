"""What an approver meets (issue 14, items 9-11) through the real `kubectl aicr`, against fake servers or none."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from testfixtures import compare

from support.fake_apiserver import Respond, Silent, fake_apiserver, status
from support.harness import Aicr, error_line
from support.samples import ROLLOUT, rollout

R = ROLLOUT["metadata"]["name"]


# -- item 9: bad input refused before any request ------------------------------------------------------

def test_a_reason_that_is_not_utf8_is_a_usage_error(aicr: Aicr, tmp_path: Path) -> None:
    """`--reason $'\\xff'` arrives as a lone surrogate; the server would store U+FFFD, not what was typed."""
    with fake_apiserver(tmp_path, [status(500, "no request was expected")]) as server:
        kc = server.kubeconfig(tmp_path / "kc", {"token": "t"})
        for command in ("approve", "revoke"):
            proc = aicr(command, R, "--reason", "window \udcff", kubeconfig=kc)
            compare((proc.returncode, error_line(proc)), expected=(
                2, "error: [USAGE] --reason holds bytes that are not UTF-8 text; check the terminal's encoding"),
                suffix=proc.stderr)
        compare(server.requests, expected=[])


def test_reproduce_refuses_a_dir_with_a_colon(aicr: Aicr, tmp_path: Path) -> None:
    """docker run -v 'a:b:/work' would mount `a` at `b`: the printed command would not be the check it claims."""
    with fake_apiserver(tmp_path, [status(500, "no request was expected")]) as server:
        kc = server.kubeconfig(tmp_path / "kc", {"token": "t"})
        proc = aicr("reproduce", "--dir", "a:b", kubeconfig=kc)
        compare(proc.returncode, expected=2, suffix=proc.stderr)
        assert error_line(proc).startswith(f"error: [USAGE] --dir a:b is {tmp_path}/a:b, whose colon docker run -v "
                                           "would split"), proc.stderr
        compare((server.requests, (tmp_path / "a:b").exists()), expected=([], False))


# -- item 10: one wording, -o name, YAML errors, warnings only with the write ------------------------

def test_an_unknown_flag_after_a_command_is_worded_as_before_it(aicr: Aicr) -> None:
    before = aicr("--foo")
    compare((before.returncode, error_line(before)), expected=(2, "error: [USAGE] unknown flag: --foo"))
    for args in (["describe", R, "--foo"], ["describe", R, "--foo=1"], ["approve", R, "--reas", "x"]):
        proc = aicr(*args)
        flag = args[2].partition("=")[0]
        compare((proc.returncode, error_line(proc)), expected=(2, f"error: [USAGE] unknown flag: {flag}"),
                suffix=proc.stderr)
    proc = aicr("describe", R, "-x")
    compare(error_line(proc), expected="error: [USAGE] unknown flag: -x")


def test_o_name_without_a_cluster(aicr: Aicr, tmp_path: Path) -> None:
    from importlib.metadata import version

    proc = aicr("version", "--client", "-o", "name")
    compare((proc.returncode, proc.stdout), expected=(0, f"clientversion/{version('kubectl-aicr')}\n"))
    policy = tmp_path / "policy.yaml"
    policy.write_text("apiVersion: aicr.run/v1alpha1\nkind: ApprovalPolicy\npolicies: {}\n")
    proc = aicr("plugins", "--policy-file", str(policy), "-o", "name")
    compare(proc.returncode, expected=0, suffix=proc.stderr)
    lines = proc.stdout.splitlines()
    for expected in ("aicr.commands/describe", "aicr.commands/whoami", "aicr.renderers/json",
                     "aicr.policies/four-eyes", "aicr.layouts/RolloutList"):
        assert expected in lines, proc.stdout


def test_o_name_of_describe(aicr: Aicr, tmp_path: Path) -> None:
    with fake_apiserver(tmp_path, [Respond(200, ROLLOUT), status(404, "not found", "NotFound")]) as server:
        proc = aicr("describe", R, "-o", "name", kubeconfig=server.kubeconfig(tmp_path / "kc", {"token": "t"}))
    compare((proc.returncode, proc.stdout), expected=(0, f"runtimerollout.operator.aicr.run/{R}\n"),
            suffix=proc.stderr)


@pytest.mark.parametrize("text,problem", [
    ("a: 1\n\x00", "(YAML) line 2, column 1: character #x0000: control characters are not allowed"),
    ("a: !!timestamp foo\n", "(YAML): a value does not match its tag (!!timestamp, say)"),
    ("a: b\n\tc: d\n", "(YAML) line 2, column 1: found a tab character that violates indentation"),
])
def test_yaml_errors_read_as_one_line(aicr: Aicr, tmp_path: Path, text: str, problem: str) -> None:
    """Never `(YAML) (YAML): ...` with PyYAML's own `\\n  in "<unicode string>"`, never INTERNAL."""
    policy = tmp_path / "policy.yaml"
    policy.write_text(text)
    proc = aicr("policy", "validate", str(policy))
    compare((proc.returncode, proc.stderr.splitlines()[1:]), expected=(1, [f"  {problem}"]), suffix=proc.stderr)
    assert error_line(proc).startswith("error: [POLICY_ERROR] "), proc.stderr


WARN_POLICY = json.dumps({"apiVersion": "aicr.run/v1alpha1", "kind": "ApprovalPolicy",
                          "policies": {"reason-format": {"mode": "warn", "pattern": "^CHG-",
                                                         "message": "cite a ticket"}}})


def test_policy_warnings_are_not_printed_before_a_refusal(aicr: Aicr, tmp_path: Path) -> None:
    """The write loses a race: nothing was written, so the warning of the policy that let it go is not shown."""
    me = {"kind": "SelfSubjectReview", "apiVersion": "authentication.k8s.io/v1",
          "status": {"userInfo": {"username": "alice", "groups": ["aicr:approvers"]}}}
    policy = {"apiVersion": "v1", "kind": "ConfigMap",
              "metadata": {"name": "aicr-approval-policy", "namespace": "aicr-system"},
              "data": {"policy.yaml": WARN_POLICY}}
    won = rollout(approval={"user": "bob", "expires": "2099-01-01T00:00:00Z", "reason": "CHG-1"})
    nowhere = status(404, "clusterruntimes not found", "NotFound")  # no runtime names a place: aicr-system
    script = [Respond(201, me), Respond(200, ROLLOUT), nowhere, Respond(200, policy),
              status(409, "the object has been modified", "Conflict"), Respond(200, won)]
    with fake_apiserver(tmp_path, script) as server:
        proc = aicr("approve", R, "--reason", "no ticket", "--expires", "1h",
                    kubeconfig=server.kubeconfig(tmp_path / "kc", {"token": "t"}))
        compare([r.method for r in server.requests], expected=["POST", "GET", "GET", "GET", "PATCH", "GET"])
    compare((proc.returncode, proc.stderr), expected=(
        1, f"error: [ALREADY_APPROVED] rollout {R} is already approved by bob until 2099-01-01T00:00:00Z\n"))
    with fake_apiserver(tmp_path, [Respond(201, me), Respond(200, ROLLOUT), nowhere, Respond(200, policy),
                                   Respond(200, ROLLOUT)]) as server:
        proc = aicr("approve", R, "--reason", "no ticket", "--expires", "1h", "-o", "name",
                    kubeconfig=server.kubeconfig(tmp_path / "kc", {"token": "t"}))
    compare((proc.returncode, proc.stdout, proc.stderr), expected=(
        0, f"runtimerollout.operator.aicr.run/{R}\n", "warning: reason-format: cite a ticket\n"))


# -- item 11 -------------------------------------------------------------------------------------------

def test_the_usage_block_shows_every_command(aicr: Aicr) -> None:
    for proc, stream in ((aicr("help"), "stdout"), (aicr(), "stderr")):
        text = getattr(proc, stream)
        usage = text.split("Usage:\n", 1)[1].split("\n\n", 1)[0].splitlines()
        shapes = [line.split()[2] for line in usage]
        compare(shapes, expected=["COMMAND", "list", "wait", "policy", "policy", "policy", "reproduce", "version",
                                  "whoami", "dashboard", "plugins", "help"])
        assert "  kubectl aicr list [--all] [--pending] [--phase PHASE] [flags]" in usage, usage


ME = {"kind": "SelfSubjectReview", "apiVersion": "authentication.k8s.io/v1",
      "status": {"userInfo": {"username": "alice", "groups": ["aicr:approvers"]}}}


def test_a_timeout_during_the_write_says_it_may_have_been_stored(aicr: Aicr, tmp_path: Path) -> None:
    no_policy = status(404, "configmaps not found", "NotFound")
    with fake_apiserver(tmp_path, [Respond(201, ME), Respond(200, ROLLOUT), no_policy, no_policy, Silent()]) as server:
        proc = aicr("approve", R, "--reason", "window", "--expires", "1h", AICR_DEADLINE_SECONDS="3",
                    kubeconfig=server.kubeconfig(tmp_path / "kc", {"token": "t"}))
        compare([r.method for r in server.requests], expected=["POST", "GET", "GET", "GET", "PATCH"])
    compare((proc.returncode, error_line(proc)), expected=(
        1, "error: [TIMEOUT] the API calls of this command did not finish within 3s; the approve was sent and may "
           f"have been stored: check with kubectl aicr describe {R}"), suffix=proc.stderr)
    # A timeout before the write says nothing of the kind: nothing was sent.
    with fake_apiserver(tmp_path, [Respond(201, ME), Silent()]) as server:
        proc = aicr("approve", R, "--reason", "window", "--expires", "1h", AICR_DEADLINE_SECONDS="2",
                    kubeconfig=server.kubeconfig(tmp_path / "kc", {"token": "t"}))
    compare(error_line(proc), expected="error: [TIMEOUT] the API calls of this command did not finish within 2s")


def test_list_phase_completes_the_phases(aicr: Aicr) -> None:
    from support.harness import complete, words

    candidates, directive = complete(aicr, "list", "--phase", "Aw")
    compare((words(candidates), directive), expected=(["AwaitingApproval", "AwaitingAcknowledgement"], ":4"))
