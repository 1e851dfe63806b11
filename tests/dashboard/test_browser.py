"""`kubectl aicr dashboard` in a real browser (Debian's Chromium through Playwright) on real control planes.

Two planes make the fleet: the session's (`gpu-lab-1`) and one started here (`gpu-fleet/eu-2`, a context
that must be percent-encoded in the page's addresses), each with the testbed's users. The real command
runs as a subprocess with a user's own kubeconfig (alice, an approver; victor, a viewer) and
`--all-contexts`; the browser opens the URL it printed. What is written is checked on the cluster, as
the admin reads it, never on the page alone.

No `bypass_csp`, and no string predicate of Playwright (the page's CSP blocks eval): function
predicates and `expect()` only.
"""
from __future__ import annotations

import datetime as dt
import http.server
import json
import re
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import envtest
import pytest
from testfixtures import compare

import demo_fleet
import demo_operator
from support.browser import EVIL_HOST, Api, Dashboard, chromium, eventually, rollout_path

try:
    from playwright.sync_api import Browser, BrowserContext, Page, expect
except ImportError:  # the browser fixture skips (or, under CI, fails) saying so
    pass

pytestmark = pytest.mark.cluster

LAB, EU = "gpu-lab-1", "gpu-fleet/eu-2"
LIVE_SECONDS = 10  # the target is 2 s from a change to the page; the assertion allows a loaded machine
DISCONNECTED_SECONDS = 25  # shown disconnected at its first failed reconnect, within 15 s
RECONNECTED_SECONDS = 45  # shown connected again within 30 s of answering
MS = 1000
APPROVED = {"user": "bob", "expires": "2099-01-01T00:00:00Z", "reason": "maintenance window"}


class Clusters:
    """The fleet of the module: {context: (plane, seeder)} and a kubeconfig per user naming both."""

    def __init__(self, planes: dict[str, envtest.ControlPlane], folder: Path) -> None:
        self.planes = planes
        self.seeders = {context: envtest.Seeder(plane) for context, plane in planes.items()}
        self.folder = folder

    def kubeconfig(self, user: str) -> Path:
        path = self.folder / f"kubeconfig-{user}"
        if not path.exists():
            path.write_text(json.dumps(demo_fleet.kubeconfig_doc(list(self.planes.items()), user=user)))
            path.chmod(0o600)
        return path

    def stored(self, context: str, name: str) -> dict[str, Any]:
        return json.loads(self.planes[context].kubectl("get", "runtimerollout", name, "-o", "json").stdout)  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def clusters(plane: envtest.ControlPlane, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Clusters]:
    extra = envtest.ControlPlane().start()  # on this thread: its processes die with the thread that started them
    try:
        clusters = Clusters({LAB: plane, EU: extra}, tmp_path_factory.mktemp("dashboard-fleet"))
        for seeder in clusters.seeders.values():
            # A rollout in each before the dashboard starts: a cluster without any was never shown as listed
            # (test_a_cluster_without_rollouts_is_listed says so on its own).
            seeder.rollout()
        yield clusters
    finally:
        extra.stop()


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    yield from chromium()


def start_dashboard(kubectl: str, clusters: Clusters, user: str, folder: Path, *args: str) -> Dashboard:
    (folder / "home").mkdir(exist_ok=True)
    return Dashboard.start(kubectl, folder / "home", folder, clusters.kubeconfig(user), "--all-contexts", *args)


@pytest.fixture(scope="module")
def alice(kubectl: str, clusters: Clusters, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Dashboard]:
    dashboard = start_dashboard(kubectl, clusters, "alice", tmp_path_factory.mktemp("alice"))
    yield dashboard
    dashboard.stop()


@pytest.fixture(scope="module")
def victor(kubectl: str, clusters: Clusters, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Dashboard]:
    dashboard = start_dashboard(kubectl, clusters, "victor", tmp_path_factory.mktemp("victor"))
    yield dashboard
    dashboard.stop()


def signed_in(browser: Browser, dashboard: Dashboard) -> tuple[BrowserContext, Page]:
    """A fresh browser profile that opened the printed URL: the token exchanged for the session cookie."""
    context = browser.new_context()
    page = context.new_page()
    page.goto(dashboard.url)
    compare(page.url, expected=f"{dashboard.origin}/")  # the token is out of the address bar
    return context, page


@pytest.fixture
def as_alice(browser: Browser, alice: Dashboard) -> Iterator[tuple[BrowserContext, Page]]:
    context, page = signed_in(browser, alice)
    yield context, page
    context.close()


@pytest.fixture
def as_victor(browser: Browser, victor: Dashboard) -> Iterator[tuple[BrowserContext, Page]]:
    context, page = signed_in(browser, victor)
    yield context, page
    context.close()


def link(page: Page, context: str, name: str) -> Any:
    """The inbox's link to a rollout's page (its address ends with the rollout's path)."""
    return page.locator(f'a[href$="{rollout_path(context, name)}"]')


def settled(clusters: Clusters, api: Api, context: str, name: str) -> None:
    """The dashboard's model has the rollout as the cluster holds it now (the seeder creates it, then writes
    its status: a page rendered between the two would show the first): what the page shows next is no race."""
    status = clusters.stored(context, name).get("status", {})

    def current() -> bool:
        code, _, body = api.request("/api" + rollout_path(context, name))
        if code != 200:
            return False
        document = json.loads(body)
        return bool(document.get("phase") == status.get("phase") and document.get("message") == status.get("message"))

    eventually(current, LIVE_SECONDS, f"{context}/{name} as the cluster holds it, in /api/c/CONTEXT/r/NAME")


def form(page: Page, action: str) -> Any:
    """The form whose action ends with /ACTION (approve, revoke, acknowledge, check)."""
    return page.locator(f'form[action$="/{action}"]')


def submit(form_locator: Any) -> None:
    form_locator.locator('button[type="submit"], input[type="submit"], button:not([type])').first.click()


def ends_no_navigation(page: Page) -> None:
    """A mark in the page's window: a reload would lose it. (A function, not a string: the CSP blocks eval.)"""
    page.evaluate("() => { window.__aicrNotReloaded = true; }")


def not_reloaded(page: Page) -> bool:
    return bool(page.evaluate("() => window.__aicrNotReloaded === true"))


# -- the inbox ---------------------------------------------------------------------------------------

def test_alice_sees_the_inbox(clusters: Clusters, alice: Dashboard, as_alice: tuple[BrowserContext, Page]) -> None:
    context, page = as_alice
    now = dt.datetime.now(dt.timezone.utc)
    later = clusters.seeders[LAB].rollout(deadline=now + dt.timedelta(hours=5))
    sooner = clusters.seeders[EU].rollout(deadline=now + dt.timedelta(hours=1))
    approved = clusters.seeders[LAB].rollout(approval=APPROVED)  # waits for nobody: not in the inbox
    api = Api(alice)
    settled(clusters, api, LAB, later)
    settled(clusters, api, EU, sooner)
    page.reload()
    expect(link(page, LAB, later)).to_have_count(1)
    expect(link(page, EU, sooner)).to_have_count(1)
    expect(link(page, LAB, approved)).to_have_count(0)
    # soonest deadline first, across clusters
    hrefs = page.eval_on_selector_all('a[href*="/r/"]', "links => links.map(a => a.getAttribute('href'))")
    mine = [h for h in hrefs if h.endswith((rollout_path(LAB, later), rollout_path(EU, sooner)))]
    compare(mine, expected=[rollout_path(EU, sooner), rollout_path(LAB, later)])
    # one line a cluster, who alice is there; the title carries how many wait
    body = page.locator("body")
    expect(body).to_contain_text(LAB)
    expect(body).to_contain_text(EU)
    expect(body).to_contain_text("alice")
    waiting = len(api.rollouts(pending=True)["items"])
    expect(page).to_have_title(re.compile(rf"\b{waiting}\b"))
    # the session cookie, as docs/dashboard.md has it
    cookie = next(c for c in context.cookies() if str(alice.port) in c["name"])
    compare((cookie["httpOnly"], cookie["sameSite"], cookie["path"]), expected=(True, "Strict", "/"))
    assert alice.token not in json.dumps(context.cookies())
    # the rollout's page, through its link
    link(page, EU, sooner).first.click()
    compare(page.url, expected=alice.page_url(EU, sooner))
    expect(page.locator("body")).to_contain_text(sooner)


def test_a_rollout_created_after_the_page_loaded_appears_without_a_reload(
        clusters: Clusters, alice: Dashboard, as_alice: tuple[BrowserContext, Page]) -> None:
    _, page = as_alice
    Api(alice).wait_listed([LAB, EU])
    ends_no_navigation(page)
    for context in (LAB, EU):
        name = clusters.seeders[context].rollout()
        expect(link(page, context, name)).to_have_count(1, timeout=LIVE_SECONDS * MS)
    assert not_reloaded(page), "the page was reloaded"


# -- writes ------------------------------------------------------------------------------------------

def test_alice_approves_with_a_reason_and_a_second_tab_follows(
        clusters: Clusters, alice: Dashboard, as_alice: tuple[BrowserContext, Page]) -> None:
    context, inbox = as_alice
    name = clusters.seeders[EU].rollout()
    settled(clusters, Api(alice), EU, name)
    inbox.reload()
    expect(link(inbox, EU, name)).to_have_count(1)
    ends_no_navigation(inbox)
    page = context.new_page()  # the first tab: the rollout's page
    page.goto(alice.page_url(EU, name))
    reason = "CHG-4711 browser test window"
    approve = form(page, "approve")
    expect(approve).to_have_count(1)
    approve.locator('[name="reason"]').fill(reason)
    approve.locator('[name="expires"]').fill("1h")
    submit(approve)
    expect(page.locator("body")).to_contain_text(
        re.compile(rf"rollout {re.escape(name)} approved by alice until \d{{4}}-\d\d-\d\dT"))
    compare(page.url, expected=alice.page_url(EU, name))  # the outcome is kept on the server, not in the URL
    written = clusters.stored(EU, name)["spec"]["approval"]
    compare((written["user"], written["reason"]), expected=("alice", reason))
    expect(page.locator("body")).to_contain_text(f"kubectl aicr approve {name}")  # the command that does the same
    # the other tab follows: the rollout no longer waits for a person
    expect(link(inbox, EU, name)).to_have_count(0, timeout=LIVE_SECONDS * MS)
    assert not_reloaded(inbox), "the second tab was reloaded"
    # the CLI's line is shown once
    page.reload()
    expect(page.locator("body")).not_to_contain_text(f"rollout {name} approved by alice")


def test_victor_sees_why_he_may_not_approve_and_a_forced_post_is_forbidden(
        clusters: Clusters, victor: Dashboard, as_victor: tuple[BrowserContext, Page]) -> None:
    _, page = as_victor
    name = clusters.seeders[LAB].rollout()
    settled(clusters, Api(victor), LAB, name)
    page.reload()
    expect(page.locator("body")).to_contain_text("victor")  # the cluster lines: who the API server says he is
    page.goto(victor.page_url(LAB, name))
    expect(form(page, "approve")).to_have_count(0)  # no button his RBAC would refuse
    expect(page.locator("body")).to_contain_text(re.compile(r"may not approve|not allowed|cannot approve", re.I))
    before = clusters.stored(LAB, name)["metadata"]["resourceVersion"]
    # forced: the form the page would not offer, with the session's form token from the page (the Check's)
    with page.expect_navigation():
        page.evaluate("""([action, reason]) => {
            const token = document.querySelector('input[name="csrf"]');
            const forced = document.createElement('form');
            forced.method = 'post';
            forced.action = action;
            for (const [key, value] of [['csrf', token ? token.value : ''], ['reason', reason], ['expires', '1h']]) {
                const input = document.createElement('input');
                input.type = 'hidden';
                input.name = key;
                input.value = value;
                forced.appendChild(input);
            }
            document.body.appendChild(forced);
            forced.submit();
        }""", [f"{rollout_path(LAB, name)}/approve", "CHG-1 forced"])
    expect(page.locator("body")).to_contain_text("error: [FORBIDDEN]")
    compare(clusters.stored(LAB, name)["metadata"]["resourceVersion"], expected=before)
    compare(clusters.stored(LAB, name)["spec"].get("approval"), expected=None)


@pytest.fixture
def reason_policy(clusters: Clusters) -> Iterator[str]:
    """The lab cluster's policy file: a reason must cite a change ticket. Removed after, whatever happens."""
    message = "cite a change ticket (CHG-1234) first"
    policy = {"apiVersion": "aicr.run/v1alpha1", "kind": "ApprovalPolicy",
              "policies": {"reason-format": {"pattern": "^CHG-[0-9]+", "message": message}}}
    configmap = {"apiVersion": "v1", "kind": "ConfigMap",
                 "metadata": {"name": "aicr-approval-policy", "namespace": "aicr-system"},
                 "data": {"policy.yaml": json.dumps(policy)}}
    plane = clusters.planes[LAB]
    plane.kubectl("delete", "configmap", "-n", "aicr-system", "aicr-approval-policy", "--ignore-not-found")
    plane.kubectl("create", "-f", "-", input=json.dumps(configmap))
    yield message
    plane.kubectl("delete", "configmap", "-n", "aicr-system", "aicr-approval-policy", "--ignore-not-found")


def test_a_policy_denial_shows_policy_denied_with_its_message(
        clusters: Clusters, alice: Dashboard, as_alice: tuple[BrowserContext, Page], reason_policy: str) -> None:
    _, page = as_alice
    name = clusters.seeders[LAB].rollout()
    settled(clusters, Api(alice), LAB, name)
    page.goto(alice.page_url(LAB, name))
    # the Check first: it decides before the click, and writes nothing
    check = form(page, "check")
    expect(check).to_have_count(1)
    check.locator('[name="reason"]').fill("no ticket")
    submit(check)
    expect(page.locator("body")).to_contain_text("reason-format")
    expect(page.locator("body")).to_contain_text(reason_policy)
    approve = form(page, "approve")
    approve.locator('[name="reason"]').fill("no ticket")
    submit(approve)
    expect(page.locator("body")).to_contain_text("error: [POLICY_DENIED]")
    expect(page.locator("body")).to_contain_text(f"reason-format: {reason_policy}")
    compare(clusters.stored(LAB, name)["spec"].get("approval"), expected=None)


def test_a_read_only_dashboard_offers_no_action_and_refuses_a_forced_write(
        kubectl: str, clusters: Clusters, browser: Browser, tmp_path: Path) -> None:
    dashboard = start_dashboard(kubectl, clusters, "alice", tmp_path, "--read-only")
    context = None
    try:
        name = clusters.seeders[LAB].rollout()
        settled(clusters, Api(dashboard), LAB, name)
        context, page = signed_in(browser, dashboard)
        page.goto(dashboard.page_url(LAB, name))
        for action in ("approve", "revoke", "acknowledge"):
            expect(form(page, action)).to_have_count(0)
        with page.expect_response(lambda r: r.url.endswith("/approve")) as answered:
            page.evaluate("""(action) => {
                const forced = document.createElement('form');
                forced.method = 'post';
                forced.action = action;
                const input = document.createElement('input');
                input.name = 'reason';
                input.value = 'CHG-1 read-only';
                forced.appendChild(input);
                document.body.appendChild(forced);
                forced.submit();
            }""", f"{rollout_path(LAB, name)}/approve")
        compare(answered.value.status, expected=403)
        expect(page.locator("body")).to_contain_text(re.compile("read-only", re.I))
        compare(clusters.stored(LAB, name)["spec"].get("approval"), expected=None)
    finally:
        if context is not None:
            context.close()
        dashboard.stop()


# -- the page follows the clusters -----------------------------------------------------------------

def operator_moves(clusters: Clusters, context: str, name: str) -> tuple[str, str]:
    """One step of the demo's operator stand-in on this rollout alone (the session's plane is shared, so its
    loop, which moves every rollout, stays off); the phase and message written."""
    from aicr_core.domain import rollouts

    cluster = demo_operator.Cluster(context, clusters.planes[context])
    obj = cast(dict[str, Any], cluster.custom.get_cluster_custom_object(envtest.GROUP, envtest.VERSION,
                                                                        "runtimerollouts", name))
    rollout = rollouts.parse_rollout(obj)
    status = demo_operator.next_status(rollout, dt.datetime.now(dt.timezone.utc))
    assert status is not None, f"the operator has nothing to do for {name} in {rollout.phase}"
    version = cluster.write_status(name, rollout.resource_version, status)
    if status["phase"] == "Ended":
        cluster.label_outcome(name, version, status["outcome"])
    return str(status["phase"]), str(status["message"])


def test_the_operator_moves_a_rollout_and_the_page_follows(
        clusters: Clusters, alice: Dashboard, as_alice: tuple[BrowserContext, Page]) -> None:
    """The rollout's page follows its phase, and the inbox its row, as the operator stand-in moves it on."""
    context, page = as_alice
    name = clusters.seeders[EU].rollout(approval=APPROVED, records=[])  # no after-apply steps: it runs to its end
    settled(clusters, Api(alice), EU, name)
    page.goto(alice.page_url(EU, name))
    ends_no_navigation(page)
    phase = page.locator("body")
    expect(phase).to_contain_text("AwaitingApproval")
    seen = []
    while True:
        moved, _ = operator_moves(clusters, EU, name)
        seen.append(moved)
        expect(phase).to_contain_text(moved, timeout=LIVE_SECONDS * MS)
        if moved == "Ended":
            break
        assert len(seen) < 10, seen
    expect(phase).to_contain_text("Succeeded", timeout=LIVE_SECONDS * MS)
    assert "Progressing" in seen and "Validating" in seen, seen
    assert not_reloaded(page), "the page was reloaded"


def test_the_rollout_page_follows_its_steps_and_message(
        clusters: Clusters, alice: Dashboard, as_alice: tuple[BrowserContext, Page]) -> None:
    """What describe shows beside the phase follows too: the message, the steps' states (docs/dashboard.md:
    the pages update by themselves when a rollout changes)."""
    _, page = as_alice
    name = clusters.seeders[EU].rollout(approval=APPROVED, records=[])
    settled(clusters, Api(alice), EU, name)
    page.goto(alice.page_url(EU, name))
    ends_no_navigation(page)
    body = page.locator("body")
    for _ in range(2):  # Progressing, its first step in flight; then the second
        _, message = operator_moves(clusters, EU, name)
        expect(body).to_contain_text(message, timeout=LIVE_SECONDS * MS)
    expect(body).to_contain_text("Ready", timeout=LIVE_SECONDS * MS)
    assert not_reloaded(page), "the page was reloaded"


# -- the envelope, in a browser -----------------------------------------------------------------------

class Attacker:
    """A page served on another localhost port: it posts a form to the dashboard's approve URL on load."""

    def __init__(self, target: str, csrf: str | None) -> None:
        fields = '<input name="reason" value="CHG-666 not me"><input name="expires" value="1h">'
        if csrf is not None:
            fields += f'<input name="csrf" value="{csrf}">'
        fetch = f"fetch({json.dumps(target)}, {{method: 'POST', mode: 'no-cors', credentials: 'include', " \
                "headers: {'Content-Type': 'application/x-www-form-urlencoded'}, body: 'reason=CHG-666+fetch'})"
        page = (f'<!doctype html><title>win a prize</title><form id="f" method="post" action="{target}">{fields}'
                f'</form><script>{fetch}.finally(() => document.getElementById("f").submit());</script>').encode()

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                self.send_response(200)
                self.send_header("Content-Type", "text/html")
                self.send_header("Content-Length", str(len(page)))
                self.end_headers()
                self.wfile.write(page)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> Attacker:
        self.thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()


@pytest.mark.parametrize("csrf", [None, "guessed-form-token"])
def test_a_page_on_another_localhost_port_that_auto_submits_an_approval_writes_nothing(
        clusters: Clusters, alice: Dashboard, as_alice: tuple[BrowserContext, Page], csrf: str | None) -> None:
    context, _ = as_alice  # signed in: the browser holds the session cookie (SameSite=Strict: ports are one site)
    name = clusters.seeders[LAB].rollout()
    settled(clusters, Api(alice), LAB, name)
    before = clusters.stored(LAB, name)["metadata"]["resourceVersion"]
    page = context.new_page()
    with Attacker(alice.page_url(LAB, name) + "/approve", csrf) as attacker:
        with page.expect_response(lambda r: r.url.endswith("/approve") and r.request.method == "POST"
                                  and r.request.resource_type == "document") as answered:
            page.goto(attacker.url)
        compare(answered.value.status, expected=403)
    compare(clusters.stored(LAB, name)["metadata"]["resourceVersion"], expected=before)
    compare(clusters.stored(LAB, name)["spec"].get("approval"), expected=None)


def test_a_host_name_mapped_to_loopback_is_refused(clusters: Clusters, alice: Dashboard, browser: Browser) -> None:
    """DNS rebinding: evil.test resolves to 127.0.0.1 in this browser; the dashboard refuses its Host, token or not."""
    name = clusters.seeders[LAB].rollout()
    settled(clusters, Api(alice), LAB, name)
    context = browser.new_context()
    try:
        page = context.new_page()
        for path in (f"/?token={alice.token}", "/", "/api/rollouts", rollout_path(LAB, name), "/events"):
            answer = page.goto(f"http://{EVIL_HOST}:{alice.port}{path}")
            assert answer is not None
            assert 400 <= answer.status < 500, (path, answer.status)
            assert name not in answer.text(), path
        compare([c for c in context.cookies() if str(alice.port) in c["name"]], expected=[])
    finally:
        context.close()


def test_an_injected_inline_script_does_not_run(clusters: Clusters, alice: Dashboard,
                                                as_alice: tuple[BrowserContext, Page]) -> None:
    context, page = as_alice
    script = "<script>window.__aicrInjected = 'script'; alert('script')</script>"
    handler = "<img src=x onerror=\"window.__aicrInjected = 'handler'; alert('handler')\">"
    waiting = clusters.seeders[LAB].rollout(message=f"waits {script}{handler}")
    approved = clusters.seeders[LAB].rollout(phase="Progressing", message=f"moves {handler}",
                                          approval={**APPROVED, "reason": f"CHG-1 {script}"})
    api = Api(alice)
    settled(clusters, api, LAB, waiting)
    settled(clusters, api, LAB, approved)
    dialogs: list[str] = []

    def record(dialog: Any) -> None:  # an alert() that ran
        dialogs.append(dialog.message)
        dialog.dismiss()

    page.on("dialog", record)
    for target in (alice.page_url(LAB, waiting), alice.page_url(LAB, approved)):
        page.goto(target)
        expect(page.locator("body")).to_contain_text("<script>window.__aicrInjected")  # shown, as text
        compare(page.evaluate("() => window.__aicrInjected === undefined"), expected=True)
    # an escape sequence and a bidirectional override: shown escaped, as the CLI escapes them
    steering = clusters.seeders[LAB].rollout(message="red \x1b[31malert\x1b[0m \u202eevil")
    settled(clusters, api, LAB, steering)
    page.goto(alice.page_url(LAB, steering))
    body = page.locator("body")
    expect(body).to_contain_text("\\x1b[31malert")
    expect(body).to_contain_text("\\u202eevil")
    compare([c for c in ("\x1b", "\u202e") if c in body.inner_text()], expected=[])
    # the live rows too: text arriving by the event stream (here what the inbox shows of an acknowledgement
    # that waits: the release, from the cluster) stays text
    page.goto(f"{alice.origin}/")
    ends_no_navigation(page)
    late = clusters.seeders[LAB].rollout(phase="AwaitingAcknowledgement", approval=APPROVED,
                                      awaiting_release=f"nvsentinel{script}{handler}")
    expect(link(page, LAB, late)).to_have_count(1, timeout=LIVE_SECONDS * MS)
    expect(page.locator("body")).to_contain_text("nvsentinel<script>window.__aicrInjected")
    compare(page.evaluate("() => window.__aicrInjected === undefined"), expected=True)
    assert not_reloaded(page), "the page was reloaded"
    compare(dialogs, expected=[])


# -- a cluster that stops answering -------------------------------------------------------------------

def test_a_stopped_plane_shows_as_disconnected_and_the_others_stay(
        clusters: Clusters, alice: Dashboard, as_alice: tuple[BrowserContext, Page]) -> None:
    _, page = as_alice
    kept = clusters.seeders[EU].rollout()
    api = Api(alice)
    settled(clusters, api, EU, kept)
    page.reload()
    ends_no_navigation(page)
    expect(link(page, EU, kept)).to_have_count(1)
    body = page.locator("body")
    expect(body).not_to_contain_text(re.compile("disconnected", re.I))
    eu = clusters.planes[EU]
    eu.apiserver.kill()  # its etcd stays: restart_apiserver() brings it back on the same port, as it was
    eu.apiserver.wait()
    try:
        expect(body).to_contain_text(re.compile("disconnected", re.I), timeout=DISCONNECTED_SECONDS * MS)
        expect(link(page, EU, kept)).to_have_count(1)  # its rows kept
        errors = api.rollouts()["errors"]
        compare([e["context"] for e in errors], expected=[EU])
        # the other cluster stays live
        name = clusters.seeders[LAB].rollout()
        expect(link(page, LAB, name)).to_have_count(1, timeout=LIVE_SECONDS * MS)
    finally:
        eu.restart_apiserver()
    expect(body).not_to_contain_text(re.compile("disconnected", re.I), timeout=RECONNECTED_SECONDS * MS)
    compare(api.rollouts()["errors"], expected=[])
    assert not_reloaded(page), "the page was reloaded"


def test_a_cluster_without_rollouts_is_listed(kubectl: str, tmp_path: Path) -> None:
    """A plane of its own, holding no rollout: listed (in `read`, no error), and a rollout made then appears."""
    empty = envtest.ControlPlane().start()
    dashboard = None
    try:
        clusters = Clusters({"empty": empty}, tmp_path)
        dashboard = start_dashboard(kubectl, clusters, "alice", tmp_path)
        api = Api(dashboard)
        document = api.wait_listed(["empty"], seconds=30)
        compare((document["items"], document["errors"]), expected=([], []))
        name = clusters.seeders["empty"].rollout()
        settled(clusters, api, "empty", name)
    finally:
        if dashboard is not None:
            dashboard.stop()
        empty.stop()


# -- the process ----------------------------------------------------------------------------------------

def url_file(dashboard: Dashboard) -> Path:
    """The file the URL line names: the URL, readable by the user alone (what --open hands the browser)."""
    line = next(line for line in dashboard.lines if dashboard.url in line)
    named = [Path(word.strip("()[]'\",;:")) for word in line.split() if word.strip("('\"").startswith("/")]
    found = [path for path in named if path.is_file()]
    assert found, f"no file named in the URL line: {line!r}"
    return found[0]


def test_the_page_logs_nothing_and_sigint_stops_it(kubectl: str, clusters: Clusters, browser: Browser,
                                                   tmp_path: Path) -> None:
    dashboard = start_dashboard(kubectl, clusters, "alice", tmp_path)
    try:
        written = url_file(dashboard)
        compare((dashboard.url in written.read_text(), written.stat().st_mode & 0o777), expected=(True, 0o600))
        Api(dashboard).wait_listed([LAB, EU])
        printed = len(dashboard.lines)
        context, page = signed_in(browser, dashboard)
        page.reload()
        context.close()
        time.sleep(0.5)
        compare(dashboard.lines[printed:], expected=[])  # no access log: a URL may hold the token
    finally:
        code, stderr = dashboard.stop()
    compare(code, expected=130, suffix=stderr)
    assert "error: [INTERRUPTED]" in stderr, stderr
    assert "Traceback" not in stderr, stderr
    assert sum(dashboard.token in line for line in stderr.splitlines()) == 1, stderr  # the URL line alone
    assert not written.exists(), f"{written} is left behind"
