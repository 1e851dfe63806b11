#!/usr/bin/env python3
"""`kubectl aicr dashboard` over 50 clusters on stand-ins: each figure of its performance table beside its target,
and `kubectl aicr list --contexts` over the same 50 beside it.

The clusters are stand-in API servers on loopback (bench/fleet_standins.py, watched: they serve LIST, GET,
`?watch=1` streams, who-am-I and access reviews; each its own TLS port and CA, answering after 100 ms), one
kubeconfig naming them. The figures (docs/dashboard.md, "Performance"):

    API requests per view      the stand-ins' request record across a page view or a JSON read, once every
                               watch has listed (the rollout page's Events aside)            target 0
    warm first paint           request to first contentful paint of the inbox in Chromium (the
                               performance API: first-contentful-paint - requestStart)       target <= 150 ms
    change to the page         a rollout added or approved in a stand-in (its watch streams the event
                               at once) to the inbox's DOM showing it (a MutationObserver's clock)
                                                                                             target <= 1 s p95
    idle CPU                   user + system CPU of the dashboard's process (/proc/PID/stat) over 60 s
                               with one page open and no change                              target <= 0.6 s
    connections                accepted by each stand-in over the run, after every watch listed and
                               at the end                                                    target <= 3, kept
    start                      `kubectl-aicr dashboard` to its URL line on stderr, beside
                               `kubectl-aicr describe NAME`'s wall time measured as bench/bench.py does
                               (bench.measure: fork and exec from a small spawner), against one
                               stand-in answering at once                                    target <= describe + 300 ms
    peak RSS                   the dashboard's VmHWM at the end beside `list --contexts`'s peak
                               (tests/support/peak_rss.py)                                   target <= 2x

Ratios and "met"/"NOT met" are printed; nothing is asserted (a bench, not a test). The machine's
load average is printed with the figures: on a shared 2-core machine they are noisy. Both commands
run from the same installation (this virtualenv's), so the start figures share its import costs.

Run from the repository with the virtualenv's bin/ first on PATH (Chromium at /usr/bin/chromium and the
playwright package for the two browser figures; without them those two say "not measured"):
    PATH=$PWD/.venv/bin:$PATH python bench/dashboard_bench.py [--clusters 50] [--idle 60] [--quick]
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path[:0] = [str(HERE), str(ROOT / "tests")]

import fleet_standins as standins  # noqa: E402

import bench as reference  # noqa: E402  (bench/bench.py: describe's wall time, measured its way)

from support.peak_rss import run_measured  # noqa: E402

LATENCY = 0.1  # each stand-in answers after this: a far-away API server, as bench/fleet_scale.py has it
ROLLOUTS = 4  # rollouts a cluster, each waiting for approval with its report
CHROMIUM = "/usr/bin/chromium"
URL_LINE = re.compile(r"(http://(\[[0-9a-fA-F:]+\]|[0-9.]+):(\d+)/\?token=([A-Za-z0-9_-]{32,}))")
START_SECONDS = 60
WARM_SECONDS = 120
TICKS = os.sysconf("SC_CLK_TCK")


def verdict(ok: bool) -> str:
    return "met" if ok else "NOT met"


def load() -> str:
    one, five, _ = os.getloadavg()
    return f"load average {one:.1f} (5 min: {five:.1f}) on {os.cpu_count()} CPUs"


def p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20)[-1] if len(values) > 1 else values[0]


def cpu_seconds(pid: int) -> float:
    """User + system time of one process (fields 14 and 15 of /proc/PID/stat, after the command's name)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def peak_rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


@dataclass
class Dashboard:
    """One `kubectl-aicr dashboard` process: its URL line read from stderr, which is drained after it."""

    proc: subprocess.Popen[str]
    started: float
    url: str = ""
    origin: str = ""
    token: str = ""
    seconds_to_url: float = 0.0
    lines: list[str] = field(default_factory=list)

    @classmethod
    def start(cls, args: list[str], env: dict[str, str]) -> Dashboard:
        started = time.perf_counter()
        proc = subprocess.Popen(args, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, text=True)
        dashboard = cls(proc, started)
        found = threading.Event()

        def drain() -> None:
            assert proc.stderr is not None
            for line in proc.stderr:
                dashboard.lines.append(line)
                match = URL_LINE.search(line)
                if match and not dashboard.url:
                    dashboard.seconds_to_url = time.perf_counter() - started
                    dashboard.url, host, port, dashboard.token = match.groups()
                    dashboard.origin = f"http://{host}:{port}"
                    found.set()
            found.set()

        threading.Thread(target=drain, daemon=True).start()
        if not found.wait(START_SECONDS) or not dashboard.url:
            dashboard.stop()
            raise SystemExit(f"{' '.join(args)} printed no URL within {START_SECONDS}s:\n{''.join(dashboard.lines)}")
        return dashboard

    def get(self, path: str) -> tuple[int, bytes]:
        request = urllib.request.Request(self.origin + path, headers={"Authorization": f"Bearer {self.token}"})
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        try:
            with opener.open(request, timeout=30) as answer:
                return answer.status, answer.read()
        except urllib.error.HTTPError as err:
            return err.code, err.read()

    def json(self, path: str) -> Any:
        status, body = self.get(path)
        if status != 200:
            raise SystemExit(f"GET {path}: {status} {body[:300]!r}")
        return json.loads(body)

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode


class Fleet:
    """The stand-ins, their kubeconfig, and what changing them takes."""

    def __init__(self, loop: standins.StandIns, members: list[standins.StandIn], kubeconfig: Path) -> None:
        self.loop, self.members, self.kubeconfig = loop, members, kubeconfig
        self.added = 0

    def requests(self) -> list[int]:
        return [len(m.requests) for m in self.members]

    def new_requests(self, before: list[int], events_aside: bool = False) -> int:
        return len(self.new_paths(before, events_aside))

    def new_paths(self, before: list[int], events_aside: bool = False) -> list[str]:
        """What the stand-ins were asked since `before` (METHOD PATH, the query left out)."""
        paths = []
        for member, seen in zip(self.members, before, strict=True):
            paths += [f"{r.method} {r.path.split('?')[0]}" for r in member.requests[seen:]
                      if not (events_aside and r.path.startswith(standins.EVENTS_PATHS))]
        return paths

    def waiting(self, index: int) -> str:
        """A rollout of cluster `index` that waits for approval."""
        objects = self.members[index].collections[standins.ROLLOUTS_PATH].objects
        return next(name for name, obj in objects.items() if "approval" not in obj["spec"])

    def new_rollout(self, index: int) -> tuple[dict[str, Any], dict[str, Any]]:
        """A rollout waiting for approval in cluster `index`, due in an hour, and its report (not sent yet)."""
        self.added += 1
        return standins.rollout(index, 1000 + self.added, deadline_hours=1)

    def publish(self, index: int, item: dict[str, Any], configmap: dict[str, Any]) -> None:
        """The report first, then the rollout: as the operator writes them."""
        member = self.members[index]
        self.loop.put(member, standins.CONFIGMAPS_PATH, configmap)
        self.loop.put(member, standins.ROLLOUTS_PATH, item)

    def approve(self, index: int, name: str) -> None:
        member = self.members[index]
        obj = member.collections[standins.ROLLOUTS_PATH].objects[name]
        approval = {"user": "bob", "reason": "bench", "expires": standins.envtest.rfc3339(
            dt.datetime.now(dt.timezone.utc) + dt.timedelta(hours=1))}
        self.loop.put(member, standins.ROLLOUTS_PATH, {**obj, "spec": {**obj["spec"], "approval": approval}})


def clean_env(kubeconfig: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KUBE", "AICR_"))}
    return {**env, "KUBECONFIG": str(kubeconfig)}


def wait_warm(dashboard: Dashboard, contexts: list[str]) -> float:
    """Seconds until every cluster's watch has listed (`read` of /api/rollouts names them all)."""
    started = time.perf_counter()
    while time.perf_counter() - started < WARM_SECONDS:
        document = dashboard.json("/api/rollouts")
        if set(contexts) <= set(document.get("read", [])):
            return time.perf_counter() - started
        time.sleep(0.2)
    raise SystemExit(f"not every cluster listed within {WARM_SECONDS}s: {document.get('errors')}")


def path_of(context: str, name: str) -> str:
    encoded = "".join(c if c.isascii() and (c.isalnum() or c in "_~-") else f"%{ord(c):02X}" for c in context)
    return f"/c/{encoded}/r/{name}"


@contextmanager
def browser_page(dashboard: Dashboard) -> Iterator[Any]:
    """A Chromium page signed in to the dashboard (the URL's token exchanged for the cookie); None without one."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        yield None
        return
    if not os.access(CHROMIUM, os.X_OK):
        yield None
        return
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--no-proxy-server"])
        try:
            page = browser.new_page()
            page.goto(dashboard.url)
            yield page
        finally:
            browser.close()


PAINT = """() => {
    const paint = performance.getEntriesByName('first-contentful-paint')[0];
    const navigation = performance.getEntriesByType('navigation')[0];
    return paint && navigation ? paint.startTime - navigation.requestStart : null;
}"""
# Set before a change: the wall clock (ms) when the inbox first shows it (a link appears, or leaves).
OBSERVE = """([suffix, present]) => {
    const shown = () => !!document.querySelector(`a[href$="${suffix}"]`) === present;
    window.__benchSeen = undefined;
    const observer = new MutationObserver(() => {
        if (shown()) { window.__benchSeen = performance.timeOrigin + performance.now(); observer.disconnect(); }
    });
    observer.observe(document, {subtree: true, childList: true, attributes: true, characterData: true});
    if (shown()) { window.__benchSeen = performance.timeOrigin + performance.now(); observer.disconnect(); }
}"""
SEEN = "() => window.__benchSeen"


def first_paints(page: Any, origin: str, loads: int) -> list[float]:
    got = []
    for _ in range(loads + 1):  # the first load warms the browser's own caches: not counted
        page.goto(origin + "/")
        got.append(float(page.wait_for_function(PAINT, timeout=10_000).json_value()))
    return got[1:]


def changes_to_page(page: Any, fleet: Fleet, origin: str, count: int) -> list[float]:
    """Seconds from each change (alternately a rollout added and one approved) to the inbox showing it."""
    page.goto(origin + "/")
    got = []
    for i in range(count):
        index = i % len(fleet.members)
        context = standins.context_name(index, len(fleet.members))
        if i % 2 == 0:
            item, configmap = fleet.new_rollout(index)
            page.evaluate(OBSERVE, [path_of(context, item["metadata"]["name"]), True])
            began = time.time() * 1000
            fleet.publish(index, item, configmap)
        else:
            name = fleet.waiting(index)
            page.evaluate(OBSERVE, [path_of(context, name), False])
            began = time.time() * 1000
            fleet.approve(index, name)
        try:
            seen = float(page.wait_for_function(SEEN, timeout=10_000).json_value())
        except Exception:  # noqa: BLE001 - Playwright's TimeoutError: not shown within 10 s, counted as such
            seen = math.inf
        got.append((seen - began) / 1000)
    return got


@dataclass
class Figures:
    """What was measured, for the report."""

    n: int
    list_wall: float = 0.0
    list_cpu: float = 0.0
    list_rss: float = 0.0
    list_requests: list[int] = field(default_factory=list)
    list_connections: list[int] = field(default_factory=list)
    describe: float = 0.0
    starts: list[float] = field(default_factory=list)
    warm: float = 0.0
    views: dict[str, list[str]] = field(default_factory=dict)  # the second round's (the first opens connections)
    paints: list[float] = field(default_factory=list)
    changes: list[float] = field(default_factory=list)
    idle_seconds: float = 0.0
    idle_cpu: float = 0.0
    idle_requests: int = 0
    connections_warm: list[int] = field(default_factory=list)
    connections_viewed: list[int] = field(default_factory=list)
    connections_end: list[int] = field(default_factory=list)
    connections_open: list[int] = field(default_factory=list)  # still open at the end (kept: all of them)
    connections_idle: int = 0  # accepted during the idle minute
    rss: float = 0.0
    exit_code: int | None = None


def measure_list(fleet: Fleet, aicr: str, env: dict[str, str], runs: int, got: Figures) -> None:
    """`list --contexts` over the same clusters: median wall and CPU, peak RSS, requests and connections of one."""
    args = [aicr, "list", "--contexts", "c*"]
    run_measured(args, env)  # warm-up
    measured = [run_measured(args, env, timeout=120) for _ in range(runs)]
    if any(m.returncode != 0 for m in measured):
        raise SystemExit(f"list --contexts failed: {measured[0].stderr[-800:]}")
    got.list_wall = statistics.median(m.seconds for m in measured)
    got.list_cpu = statistics.median(m.cpu_seconds for m in measured)
    got.list_rss = max(m.peak_mib for m in measured)
    fleet.loop.clear()
    run_measured(args, env)
    got.list_requests = sorted({len(m.requests) for m in fleet.members})
    got.list_connections = sorted({m.connections for m in fleet.members})


def measure_describe(aicr: str, runs: int, got: Figures) -> None:
    """describe NAME's wall time, as bench/bench.py measures it, against one stand-in that answers at once."""
    near = standins.StandIns(0)
    try:
        work = Path(tempfile.mkdtemp(prefix="aicr-bench-describe-"))
        member = standins.watched_fleet(near, 1, ROLLOUTS)[0]
        env = clean_env(standins.kubeconfig(work / "kc", [member], None))
        name = next(iter(member.collections[standins.ROLLOUTS_PATH].objects))
        figures = reference.measure(runs, {"describe": lambda: [aicr, "describe", name]}, env)
        got.describe = figures["describe"].seconds
        shutil.rmtree(work, ignore_errors=True)
    finally:
        near.stop()


def measure_starts(aicr: str, env: dict[str, str], runs: int, got: Figures) -> None:
    for _ in range(runs + 1):  # one warm-up
        dashboard = Dashboard.start([aicr, "dashboard", "--contexts", "c*"], env)
        got.starts.append(dashboard.seconds_to_url)
        dashboard.stop()
    got.starts = got.starts[1:]


def measure_views(fleet: Fleet, dashboard: Dashboard) -> dict[str, list[str]]:
    """The API requests the stand-ins received for each page view or JSON read (the rollout page's Events aside)."""
    context, name = standins.context_name(0, len(fleet.members)), fleet.waiting(0)
    views: dict[str, list[str]] = {}
    for label, path, events in (("GET / (the inbox)", "/", False), ("GET /api/rollouts", "/api/rollouts", False),
                                ("GET /api/rollouts?pending=true", "/api/rollouts?pending=true", False),
                                ("GET /c/CONTEXT/r/NAME (a rollout)", path_of(context, name), True),
                                ("GET /api/c/CONTEXT/r/NAME", "/api" + path_of(context, name), True)):
        before = fleet.requests()
        status, _ = dashboard.get(path)
        if status != 200:
            raise SystemExit(f"GET {path}: {status}")
        time.sleep(0.3)  # anything the view set off reaches the stand-ins
        views[label] = fleet.new_paths(before, events_aside=events)
    return views


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clusters", type=int, default=50)
    parser.add_argument("--rollouts", type=int, default=ROLLOUTS, help="rollouts a cluster, each waiting")
    parser.add_argument("--idle", type=float, default=60, help="seconds of the idle CPU figure")
    parser.add_argument("--runs", type=int, default=5, help="runs of list, describe and the start")
    parser.add_argument("--changes", type=int, default=20, help="changes timed to the page")
    parser.add_argument("--quick", action="store_true", help="10 clusters, 10 s idle, 3 runs, 10 changes")
    options = parser.parse_args()
    if options.quick:
        options.clusters, options.idle, options.runs, options.changes = 10, 10, 3, 10
    aicr = shutil.which("kubectl-aicr")
    if aicr is None:
        raise SystemExit("kubectl-aicr must be on PATH: run with PATH=$PWD/.venv/bin:$PATH")
    helped = subprocess.run([aicr, "dashboard", "--help"], capture_output=True, text=True)
    if helped.returncode != 0:
        raise SystemExit(f"this kubectl-aicr has no dashboard command: {(helped.stderr or helped.stdout)[-400:]}")
    n, began = options.clusters, time.monotonic()
    print(f"kubectl aicr dashboard across {n} clusters ({options.rollouts} rollouts each), "
          f"{dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M}Z, {os.cpu_count()} CPUs, Python "
          f"{sys.version.split()[0]}; stand-ins answer after {LATENCY * 1000:.0f} ms; {load()} at the start",
          flush=True)
    work = Path(tempfile.mkdtemp(prefix="aicr-bench-dashboard-"))
    loop = standins.StandIns(LATENCY)
    got = Figures(n)
    try:
        members = standins.watched_fleet(loop, n, options.rollouts)
        fleet = Fleet(loop, members, standins.kubeconfig(work / "kc", members, None))
        env = clean_env(fleet.kubeconfig)
        contexts = [standins.context_name(i, n) for i in range(n)]
        measure_list(fleet, aicr, env, options.runs, got)
        print(f"  (list --contexts measured after {time.monotonic() - began:.0f} s; {load()})", flush=True)
        measure_describe(aicr, options.runs, got)
        measure_starts(aicr, env, options.runs, got)
        print(f"  (describe and the start measured after {time.monotonic() - began:.0f} s; {load()})", flush=True)

        loop.clear()
        dashboard = Dashboard.start([aicr, "dashboard", "--contexts", "c*"], env)
        try:
            got.warm = wait_warm(dashboard, contexts)
            time.sleep(1)  # the access reviews and who-am-I of each cluster, after its list
            got.connections_warm = [m.connections for m in members]
            measure_views(fleet, dashboard)  # the first round: a cluster's connection for reads by name opens
            got.connections_viewed = [m.connections for m in members]
            got.views = measure_views(fleet, dashboard)
            with browser_page(dashboard) as page:
                if page is not None:
                    got.paints = first_paints(page, dashboard.origin, options.runs * 4)
                    got.changes = changes_to_page(page, fleet, dashboard.origin, options.changes)
                    page.goto(dashboard.origin + "/")
                print(f"  (the browser's figures measured after {time.monotonic() - began:.0f} s; {load()}; "
                      f"idle for {options.idle:g} s now)", flush=True)
                before, requests = cpu_seconds(dashboard.proc.pid), fleet.requests()
                accepted = sum(m.connections for m in members)
                idle_began = time.perf_counter()
                time.sleep(options.idle)
                got.idle_seconds = time.perf_counter() - idle_began
                got.idle_cpu = cpu_seconds(dashboard.proc.pid) - before
                got.idle_requests = fleet.new_requests(requests)
                got.connections_idle = sum(m.connections for m in members) - accepted
            got.connections_end = [m.connections for m in members]
            got.connections_open = [m.open_connections for m in members]
            got.rss = peak_rss_mib(dashboard.proc.pid)
        finally:
            got.exit_code = dashboard.stop()
        report(got)
        print(f"\n(finished in {time.monotonic() - began:.0f} s; {load()}; the dashboard exited {got.exit_code})")
    finally:
        loop.stop()
        shutil.rmtree(work, ignore_errors=True)
    return 0


def report(got: Figures) -> None:
    n = got.n
    print(f"\n  {'figure':<44} {'dashboard':>22}  {'target':<26} {'list --contexts':>18}")
    views = max(len(paths) for paths in got.views.values()) if got.views else -1
    print(f"  {'API requests per view (warm)':<44} {views:>22}  {'0 (Events aside)':<26} "
          f"{'/'.join(map(str, got.list_requests)) + ' a cluster':>18}   {verdict(views == 0)}")
    for label, paths in got.views.items():
        print(f"    {label:<42} {len(paths):>22}  {', '.join(sorted(set(paths)))}")
    if got.paints:
        paint50, paint95 = statistics.median(got.paints), p95(got.paints)
        print(f"  {'warm inbox, request to first paint':<44} {f'{paint50:.0f} ms (p95 {paint95:.0f})':>22}  "
              f"{'<= 150 ms':<26} {f'{got.list_wall * 1000:.0f} ms':>18}   {verdict(paint50 <= 150)}")
    else:
        print(f"  {'warm inbox, request to first paint':<44} {'not measured':>22}  {'<= 150 ms':<26} "
              "(no Chromium or no playwright)")
    if got.changes:
        shown = [c for c in got.changes if math.isfinite(c)]
        change95 = p95(got.changes) if len(shown) == len(got.changes) else math.inf
        text = f"{statistics.median(shown) * 1000:.0f} ms (p95 {change95 * 1000:.0f})" if shown else "never shown"
        print(f"  {'a change in a cluster to the page':<44} {text:>22}  {'<= 1 s p95':<26} {'-':>18}   "
              f"{verdict(change95 <= 1)}")
        if len(shown) < len(got.changes):
            print(f"    {len(got.changes) - len(shown)} of {len(got.changes)} changes not shown within 10 s")
    else:
        print(f"  {'a change in a cluster to the page':<44} {'not measured':>22}  {'<= 1 s p95':<26} "
              "(no Chromium or no playwright)")
    idle_target = 0.6 * got.idle_seconds / 60
    print(f"  {f'idle {got.idle_seconds:.0f} s, one page open: user+sys CPU':<44} "
          f"{f'{got.idle_cpu:.2f} s':>22}  {f'<= {idle_target:.2f} s (0.6 s a minute)':<26} {'-':>18}   "
          f"{verdict(got.idle_cpu <= idle_target)}")
    print(f"    requests to the stand-ins while idle: {got.idle_requests}")
    # Kept: every connection accepted is still open at the end (none closed and made again, no TLS
    # handshake per view), and the idle minute opened none.
    most = max(got.connections_end)
    kept = got.connections_open == got.connections_end and got.connections_idle == 0
    spread = f"{min(got.connections_end)}-{most} a cluster"
    print(f"  {'connections, accepted over the run':<44} {spread:>22}  {'<= 3 a cluster, kept':<26} "
          f"{'/'.join(map(str, got.list_connections)) + ' a run':>18}   {verdict(most <= 3 and kept)}")
    print(f"    after every watch listed: {min(got.connections_warm)}-{max(got.connections_warm)} a cluster; "
          f"after the first views: {min(got.connections_viewed)}-{max(got.connections_viewed)}; at the end "
          f"(after more views, the browser's and the idle minute): {spread}")
    opened = {standins.context_name(i, n): end - viewed for i, (viewed, end)
              in enumerate(zip(got.connections_viewed, got.connections_end, strict=True)) if end != viewed}
    print(f"    opened since the first views: {sum(opened.values())} ({opened or 'none'}: reads of new reports); "
          f"during the idle minute: {got.connections_idle}; still open at the end: "
          f"{sum(got.connections_open)} of {sum(got.connections_end)} accepted")
    start = statistics.median(got.starts)
    print(f"  {'start: command to URL printed':<44} {f'{start * 1000:.0f} ms':>22}  "
          f"{f'<= {(got.describe + 0.3) * 1000:.0f} ms (describe + 300)':<26} {f'{got.list_wall * 1000:.0f} ms':>18}   "
          f"{verdict(start <= got.describe + 0.3)}")
    print(f"    describe NAME (bench.py's way): {got.describe * 1000:.0f} ms; every cluster listed "
          f"{got.warm:.1f} s after the URL")
    ratio = got.rss / got.list_rss if got.list_rss else math.inf
    print(f"  {f'peak RSS at {n} clusters':<44} {f'{got.rss:.0f} MiB ({ratio:.2f}x)':>22}  "
          f"{f'<= 2x list ({2 * got.list_rss:.0f} MiB)':<26} {f'{got.list_rss:.0f} MiB':>18}   {verdict(ratio <= 2)}")
    print(f"  (list --contexts: median wall {got.list_wall * 1000:.0f} ms, CPU {got.list_cpu * 1000:.0f} ms; {load()})")


if __name__ == "__main__":
    sys.exit(main())
