#!/usr/bin/env python3
"""The screenshots docs/dashboard.md shows, taken from the demo's planes by the real dashboard in Chromium.

    PATH=$PWD/.venv/bin:$PATH python tools/dashboard_screenshots.py [--clusters 3] [--out docs/images]

Starts what `tools/testbed.py demo --clusters N` starts (N control planes as one fleet, the demo's
rollouts, the same names every time), runs `kubectl aicr dashboard --all-contexts` as alice with the
demo's kubeconfig, and has Debian's Chromium (/usr/bin/chromium, through Playwright; never
`playwright install`) open the URL it printed. Once every cluster has listed it writes:

    dashboard-inbox.png     the inbox: one line a cluster, what waits for a person, soonest deadline first
    dashboard-rollout.png   the first cluster's rollout waiting for approval: describe's content, its
                            verified assessment, the forms alice's RBAC allows and the Check

Everything it started is stopped at the end (or on Ctrl-C); nothing is left but the PNGs.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

TOOLS = Path(__file__).resolve().parent
ROOT = TOOLS.parent
sys.path.insert(0, str(TOOLS))

import envtest  # noqa: E402

import demo_fleet  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
URL_LINE = re.compile(r"(http://(\[[0-9a-fA-F:]+\]|[0-9.]+):(\d+)/\?token=([A-Za-z0-9_-]{32,}))")
VIEWPORT: Any = {"width": 1280, "height": 800}  # Playwright's ViewportSize
WAIT_SECONDS = 120
SETTLE_MS = 1000


MAX_CLUSTERS = 8  # as tools/testbed.py demo allows: each plane is an etcd and a kube-apiserver


def cluster_count(text: str) -> int:
    if not text.isascii() or not text.isdigit() or not 1 <= int(text) <= MAX_CLUSTERS:
        raise argparse.ArgumentTypeError(f"must be a whole number from 1 to {MAX_CLUSTERS}")
    return int(text)


def start_dashboard(kubeconfig: Path, home: Path) -> tuple[subprocess.Popen[str], str, str]:
    """`kubectl-aicr dashboard --all-contexts` as the kubeconfig's user: the process, its URL and its token."""
    program = shutil.which("kubectl-aicr")
    if program is None:
        raise SystemExit("error: kubectl-aicr is not on PATH: run with PATH=$PWD/.venv/bin:$PATH")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KUBE", "AICR_"))}
    env.update(KUBECONFIG=str(kubeconfig), HOME=str(home), XDG_CACHE_HOME=str(home / ".cache"))
    proc = subprocess.Popen([program, "dashboard", "--all-contexts"], env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    found: list[str] = []
    printed: list[str] = []
    seen = threading.Event()

    def drain() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            printed.append(line)
            match = URL_LINE.search(line)
            if match and not found:
                found.extend([match.group(1), match.group(4)])
                seen.set()
        seen.set()

    threading.Thread(target=drain, daemon=True).start()
    if not seen.wait(60) or not found:
        stop(proc)
        raise SystemExit(f"error: kubectl aicr dashboard printed no URL:\n{''.join(printed)}")
    return proc, found[0], found[1]


def stop(proc: subprocess.Popen[str]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def wait_listed(origin: str, token: str, contexts: list[str]) -> None:
    """Until /api/rollouts says every cluster's watch has listed."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    ends = time.monotonic() + WAIT_SECONDS
    while time.monotonic() < ends:
        request = urllib.request.Request(f"{origin}/api/rollouts", headers={"Authorization": f"Bearer {token}"})
        with opener.open(request, timeout=30) as answer:
            if set(contexts) <= set(json.loads(answer.read()).get("read", [])):
                return
        time.sleep(0.3)
    raise SystemExit(f"error: not every cluster listed within {WAIT_SECONDS}s")


def encoded(context: str) -> str:
    return "".join(c if c.isascii() and (c.isalnum() or c in "_~-") else f"%{ord(c):02X}" for c in context)


def shoot(url: str, origin: str, rollout: str, out: Path) -> list[Path]:
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        raise SystemExit("error: the playwright package is missing: pip install -e '.[test]'") from None
    if not os.access(CHROMIUM, os.X_OK):
        raise SystemExit(f"error: {CHROMIUM} is missing: apt-get install chromium")
    written = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--no-proxy-server"])
        try:
            page: Any = browser.new_page(viewport=VIEWPORT, device_scale_factor=1)
            # Loaded, then a moment for the live rows' first events (the event stream never goes idle:
            # no "networkidle" here).
            page.goto(url)  # the token exchanged for the session cookie, then the inbox
            page.wait_for_timeout(SETTLE_MS)
            written.append(out / "dashboard-inbox.png")
            page.screenshot(path=str(written[-1]), full_page=True)
            page.goto(f"{origin}{rollout}")
            page.wait_for_timeout(SETTLE_MS)
            written.append(out / "dashboard-rollout.png")
            page.screenshot(path=str(written[-1]), full_page=True)
        finally:
            browser.close()
    return written


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python tools/dashboard_screenshots.py", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clusters", type=cluster_count, default=3, metavar="N",
                        help=f"how many of the demo's control planes (1 to {MAX_CLUSTERS}; default 3)")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "images", help="where the PNGs go")
    args = parser.parse_args(argv)
    os.environ["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"  # kubectl
    args.out.mkdir(parents=True, exist_ok=True)
    folder = Path(tempfile.mkdtemp(prefix="aicr-screenshots-"))
    threads: list[Any] = []
    proc = None
    try:
        envtest.find_binaries(build=True)
        members, threads = demo_fleet.start_planes(folder, args.clusters)
        names = demo_fleet.seed(members)
        kubeconfig = folder / "kubeconfig"
        planes = [(m.context, m.plane) for m in members]
        demo_fleet.write_private(kubeconfig, json.dumps(demo_fleet.kubeconfig_doc(planes)))
        (folder / "home").mkdir()
        proc, url, token = start_dashboard(kubeconfig, folder / "home")
        origin = url.split("/?", 1)[0]
        wait_listed(origin, token, [m.context for m in members])
        first = members[0].context
        rollout = f"/c/{encoded(first)}/r/{names[first]['waiting']}"
        for path in shoot(url, origin, rollout, args.out):
            print(f"wrote {path}")
        return 0
    except envtest.TestbedError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    finally:
        if proc is not None:
            stop(proc)
        demo_fleet.stop_planes(threads)
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
