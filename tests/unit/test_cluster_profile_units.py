"""The provider file and the provider choice, against the rules of KEP-5339's reference library
(`pkg/access` of kubernetes-sigs/cluster-inventory-api), and the waves' label selectors. Pure logic.
"""
from __future__ import annotations

import json
from typing import Any

import pytest
from testfixtures import ShouldRaise, compare

from aicr_core.errors import AicrError, Code, UsageError
from aicr_core.fleet import access_providers as providers
from aicr_core.fleet import hub_limits, waves_file
from aicr_core.fleet.access_providers import Offered
from aicr_core.fleet.cluster_profiles import parse_profile

V1 = "client.authentication.k8s.io/v1"


def provider(name: str, **more: Any) -> dict[str, Any]:
    return {"name": name, "execConfig": {"apiVersion": V1, "command": f"{name}-plugin"}, **more}


def file_of(*entries: dict[str, Any]) -> providers.ProviderFile:
    return providers.parse(json.dumps({"providers": list(entries)}), "providers.json")


def offered(name: str, server: str = "https://a.example", **cluster: Any) -> Offered:
    return Offered(name, {"server": server, **cluster})


# -- the provider choice ------------------------------------------------------------------------------

def test_the_first_provider_of_the_file_that_the_profile_offers_wins_whatever_the_profiles_order() -> None:
    chosen = file_of(provider("b"), provider("a"), provider("c")).choose([offered("a"), offered("c"), offered("b")])
    assert chosen is not None
    compare((chosen[0].name, chosen[1].name), expected=("b", "b"))
    chosen = file_of(provider("x"), provider("c"), provider("a")).choose([offered("a"), offered("c")])
    assert chosen is not None
    compare(chosen[0].name, expected="c")


def test_credential_providers_are_read_too_and_access_providers_win_on_a_name_in_both() -> None:
    rules = file_of(provider("gke"), provider("token"))
    chosen = rules.choose([], [offered("token", "https://deprecated.example")])
    assert chosen is not None
    compare((chosen[0].name, chosen[1].cluster["server"]), expected=("token", "https://deprecated.example"))
    chosen = rules.choose([offered("token", "https://access.example")], [offered("token", "https://old.example")])
    assert chosen is not None
    compare(chosen[1].cluster["server"], expected="https://access.example")
    # Both lists count for the file's order: gke, offered only under the deprecated field, still comes first.
    chosen = rules.choose([offered("token")], [offered("gke", "https://gke.example")])
    assert chosen is not None
    compare((chosen[0].name, chosen[1].cluster["server"]), expected=("gke", "https://gke.example"))


def test_no_provider_of_the_file_offered_is_no_choice() -> None:
    compare(file_of(provider("a")).choose([offered("b")], [offered("c")]), expected=None)
    compare(file_of(provider("a")).choose([]), expected=None)


# -- the member's user: policies and extensions ----------------------------------------------------------

def exec_of(entry: dict[str, Any], *extensions: tuple[str, Any]) -> dict[str, Any]:
    rules = file_of(entry)
    offer = offered(entry["name"], extensions=[{"name": n, "extension": e} for n, e in extensions])
    user = providers.member_user(rules.providers[0], offer, "ns/member")
    return dict(user["exec"])


ARGS = (providers.ARGS_EXTENSION, ["--audience", "gpu-eu-1"])
ENVS = (providers.ENVS_EXTENSION, {"TENANT": "from-profile", "CLIENT": "from-profile"})


def test_profile_sourced_args_are_appended_only_when_the_provider_says_append() -> None:
    base = provider("p", execConfig={"apiVersion": V1, "command": "p", "args": ["token"]})
    compare(exec_of({**base, "profileSourcedCLIArgsPolicy": "Append"}, ARGS)["args"],
            expected=["token", "--audience", "gpu-eu-1"])
    for policy in ({}, {"profileSourcedCLIArgsPolicy": "Ignore"}):
        compare(exec_of({**base, **policy}, ARGS)["args"], expected=["token"])


def test_profile_sourced_env_append_if_not_exists_keeps_the_files_value_and_replace_takes_the_profiles() -> None:
    base = provider("p", execConfig={"apiVersion": V1, "command": "p",
                                     "env": [{"name": "TENANT", "value": "from-file"}]})
    kept = exec_of({**base, "profileSourcedEnvVarsPolicy": "AppendIfNotExists"}, ENVS)["env"]
    compare({e["name"]: e["value"] for e in kept}, expected={"TENANT": "from-file", "CLIENT": "from-profile"})
    replaced = exec_of({**base, "profileSourcedEnvVarsPolicy": "Replace"}, ENVS)["env"]
    compare({e["name"]: e["value"] for e in replaced}, expected={"TENANT": "from-profile", "CLIENT": "from-profile"})
    for policy in ({}, {"profileSourcedEnvVarsPolicy": "Ignore"}):
        compare(exec_of({**base, **policy}, ENVS)["env"], expected=[{"name": "TENANT", "value": "from-file"}])


def test_the_plugin_runs_never_interactive_and_each_profile_starts_from_the_files_config() -> None:
    rules = file_of(provider("p", execConfig={"apiVersion": V1, "command": "p", "args": ["a"],
                                              "interactiveMode": "Always", "installHint": "brew install p"},
                             profileSourcedCLIArgsPolicy="Append"))
    offer = offered("p", extensions=[{"name": providers.ARGS_EXTENSION, "extension": ["--x"]}])
    for _ in range(2):  # the reference appends to the file's own config: a second profile would get --x twice
        user = providers.member_user(rules.providers[0], offer, "ns/m")["exec"]
        compare((user["args"], user["interactiveMode"]), expected=(["a", "--x"], "Never"))
    compare(rules.providers[0].exec_config["args"], expected=["a"])


def test_a_malformed_profile_extension_fails_that_member_with_kubeconfig() -> None:
    entry = provider("p", profileSourcedCLIArgsPolicy="Append", profileSourcedEnvVarsPolicy="Replace")
    for bad in ((providers.ARGS_EXTENSION, {"not": "a list"}), (providers.ENVS_EXTENSION, ["not", "a map"]),
                (providers.ARGS_EXTENSION, ["ok", 3])):
        with ShouldRaise(AicrError) as raised:
            exec_of(entry, bad)
        err = raised.raised
        assert isinstance(err, AicrError)
        compare(err.code, expected=Code.KUBECONFIG)
        assert err.message.startswith("ClusterProfile ns/member: its cluster extension " + bad[0]), err.message
    # Under Ignore the extension is not even read (as the reference).
    compare(exec_of(provider("p"), (providers.ARGS_EXTENSION, {"not": "a list"}))["args"], expected=[])


def test_the_members_cluster_keeps_only_what_an_inventory_may_say() -> None:
    offer = offered("p", "https://gpu.example:6443", **{
        "certificate-authority-data": "Q0E=", "tls-server-name": "gpu", "proxy-url": "http://proxy:3128",
        "insecure-skip-tls-verify": True, "certificate-authority": "/etc/hub-owner/ca.crt",
        "extensions": [{"name": providers.EXEC_EXTENSION, "extension": {"clusterName": "gpu"}}]})
    compare(providers.member_cluster(offer, "ns/m"), expected={
        "server": "https://gpu.example:6443", "certificate-authority-data": "Q0E=", "tls-server-name": "gpu",
        "proxy-url": "http://proxy:3128",
        "extensions": [{"name": providers.EXEC_EXTENSION, "extension": {"clusterName": "gpu"}}]})
    with ShouldRaise(AicrError(Code.KUBECONFIG, "ClusterProfile ns/m: provider 'p' gives no cluster.server")):
        providers.member_cluster(Offered("p", {}), "ns/m")


def test_the_exec_extension_reaches_the_plugin_as_the_clusters_config() -> None:
    from aicr_core.session.exec_plugin import exec_cluster

    cluster = {"server": "https://gpu.example", "certificate-authority-data": "Q0E=", "tls-server-name": "gpu",
               "extensions": [{"name": "other", "extension": {}},
                              {"name": providers.EXEC_EXTENSION, "extension": {"clusterName": "gpu"}}]}
    compare(exec_cluster(cluster), expected={"server": "https://gpu.example", "certificate-authority-data": "Q0E=",
                                             "tls-server-name": "gpu", "config": {"clusterName": "gpu"}})


def test_a_kubeconfig_clusters_ca_file_reaches_the_plugin_as_data(tmp_path: Any) -> None:
    from aicr_core.session.exec_plugin import exec_cluster

    (tmp_path / "ca.crt").write_text("CA")
    compare(exec_cluster({"server": "https://s", "certificate-authority": "ca.crt", "insecure-skip-tls-verify": False,
                          "proxy-url": "http://p"}, str(tmp_path)),
            expected={"server": "https://s", "certificate-authority-data": "Q0E=", "proxy-url": "http://p"})


# -- the file: [USAGE] naming what is wrong ----------------------------------------------------------------

@pytest.mark.parametrize(("text", "words"), [
    ("{", "not JSON"),
    ("[]", 'not a provider file'),
    ('{"providers": []}', "at least one provider"),
    (json.dumps({"providers": [{"execConfig": {"apiVersion": V1, "command": "c"}}]}), "providers[0].name"),
    ('{"providers": [{"name": "a"}]}', "provider 'a': execConfig: every provider needs an execConfig"),
    (json.dumps({"providers": [{"name": "a", "execConfig": {"apiVersion": V1}}]}), "provider 'a': execConfig.command"),
    ('{"providers": [{"name": "a", "execConfig": {"command": "c"}}]}', "provider 'a': execConfig.apiVersion"),
    (json.dumps({"providers": [provider("a"), provider("a")]}), "provider 'a': two providers have that name"),
    (json.dumps({"providers": [provider("a", profileSourcedCLIArgsPolicy="Prepend")]}),
     "provider 'a': profileSourcedCLIArgsPolicy must be Append, Ignore or absent"),
    (json.dumps({"providers": [provider("a", profileSourcedEnvVarsPolicy="Merge")]}),
     "profileSourcedEnvVarsPolicy must be AppendIfNotExists, Replace, Ignore or absent"),
    (json.dumps({"providers": [provider("a", execConfig={"apiVersion": V1, "command": "c", "comand": "d"})]}),
     "provider 'a': unknown key execConfig.comand"),
    (json.dumps({"providers": [provider("a", execConfig={"apiVersion": V1, "command": "c", "env": [{"name": "X"}]})]}),
     "execConfig.env"),
    (json.dumps({"providers": [provider("a")], "provider": []}), "unknown key provider"),
])
def test_a_malformed_provider_file_is_usage_naming_what_is_wrong(text: str, words: str) -> None:
    with ShouldRaise(UsageError) as raised:
        providers.parse(text, "p.json")
    assert isinstance(raised.raised, UsageError)
    message = raised.raised.message
    assert message.startswith("--cluster-profile-providers p.json: ") and words in message, message


def test_the_references_own_example_file_is_accepted() -> None:
    text = json.dumps({"providers": [{"name": "secretreader", "execConfig": {
        "apiVersion": V1, "args": None, "command": "./bin/secretreader-plugin", "env": None,
        "provideClusterInfo": True}}]})
    rules = providers.parse(text)
    compare(dict(rules.providers[0].exec_config), expected={"apiVersion": V1, "command": "./bin/secretreader-plugin",
                                                            "provideClusterInfo": True})


# -- profiles -----------------------------------------------------------------------------------------------

def test_only_control_plane_healthy_false_keeps_a_member_from_being_contacted() -> None:
    def profile(*conditions: dict[str, str]) -> Any:
        return parse_profile({"metadata": {"name": "m", "namespace": "ns"}, "status": {"conditions": list(conditions)}})

    compare(profile({"type": "ControlPlaneHealthy", "status": "False", "reason": "LeaseExpired",
                     "message": "no lease for 5m"}).unhealthy(), expected="LeaseExpired: no lease for 5m")
    for healthy in ({"type": "ControlPlaneHealthy", "status": "Unknown"},
                    {"type": "ControlPlaneHealthy", "status": "True"}, {"type": "Joined", "status": "False"}):
        compare(profile(healthy).unhealthy(), expected=None)
    compare(profile().unhealthy(), expected=None)


# -- waves by selector --------------------------------------------------------------------------------------

WAVES = """apiVersion: aicr.run/v1alpha1
kind: Waves
waves:
  - name: canary
    selector: {matchLabels: {aicr.run/wave: canary}}
  - name: eu
    contexts: ["gpu-fleet/*"]
    selector: {matchExpressions: [{key: region, operator: In, values: [eu-west, eu-north]}]}
  - name: rest
    contexts: ["*"]
"""
LABELS = {"gpu-fleet/eu-1": {"region": "eu-west"}, "gpu-fleet/eu-2": {"region": "eu-north", "aicr.run/wave": "canary"},
          "gpu-fleet/us-1": {"region": "us-east"}, "gpu-lab/eu-9": {"region": "eu-west"}}


def test_waves_choose_by_selector_patterns_or_both_and_a_member_goes_to_the_first_that_chooses_it() -> None:
    plan = waves_file.parse(WAVES)
    assigned = waves_file.assign(plan, list(LABELS), LABELS.__getitem__, kind="ClusterProfile", among="on the hub")
    compare([(wave.name, members) for wave, members in assigned], expected=[
        ("canary", ["gpu-fleet/eu-2"]), ("eu", ["gpu-fleet/eu-1"]), ("rest", ["gpu-fleet/us-1", "gpu-lab/eu-9"])])
    with ShouldRaise(UsageError("--waves w.yaml: wave 'canary': selector needs --cluster-profiles (it chooses "
                                "ClusterProfiles by their labels)")):
        waves_file.check_selectors(plan, profiles=False, source="w.yaml")
    waves_file.check_selectors(plan, profiles=True, source="w.yaml")


@pytest.mark.parametrize(("expression", "labels", "expected"), [
    ({"key": "r", "operator": "In", "values": ["a", "b"]}, {"r": "b"}, True),
    ({"key": "r", "operator": "In", "values": ["a"]}, {}, False),
    ({"key": "r", "operator": "NotIn", "values": ["a"]}, {}, True),
    ({"key": "r", "operator": "NotIn", "values": ["a"]}, {"r": "a"}, False),
    ({"key": "r", "operator": "Exists"}, {"r": ""}, True),
    ({"key": "r", "operator": "DoesNotExist"}, {"r": "x"}, False),
])
def test_match_expressions_mean_what_kubernetes_means(expression: dict[str, Any], labels: dict[str, str],
                                                       expected: bool) -> None:
    selected = json.dumps({"name": "w", "selector": {"matchExpressions": [expression]}})
    text = f"apiVersion: aicr.run/v1alpha1\nkind: Waves\nwaves: [{selected}]"
    selector = waves_file.parse(text).waves[0].selector
    assert selector is not None
    compare(selector.matches(labels), expected=expected)


@pytest.mark.parametrize(("selector", "words"), [
    ("{matchLabel: {a: b}}", "wave 'w': selector: unknown key matchLabel"),
    ("{matchLabels: {a: 1}}", "wave 'w': selector: matchLabels: 'a': keys and values are strings"),
    ("{matchLabels: {'a b': c}}", "wave 'w': selector: key 'a b'"),
    ("{matchExpressions: [{key: a, operator: Has}]}", "operator must be In, NotIn, Exists, DoesNotExist"),
    ("{matchExpressions: [{key: a, operator: In}]}", "operator In needs values"),
    ("{matchExpressions: [{key: a, operator: Exists, values: [x]}]}", "operator Exists takes no values"),
    ("[a]", "wave 'w': selector: a label selector is a mapping"),
])
def test_a_selector_that_does_not_parse_is_usage_naming_the_wave(selector: str, words: str) -> None:
    text = f"apiVersion: aicr.run/v1alpha1\nkind: Waves\nwaves: [{{name: w, selector: {selector}}}]"
    with ShouldRaise(UsageError) as raised:
        waves_file.parse(text, "w.yaml")
    assert isinstance(raised.raised, UsageError)
    assert raised.raised.message.startswith("--waves w.yaml: ") and words in raised.raised.message, raised.raised


# -- what a hub writer may not decide ------------------------------------------------------------------------

ACCEPTED_SERVERS = ["https://a.example", "https://a.example:6443", "https://10.0.0.1:443/prefix/",
                    "https://[fd00::1]:6443", "HTTPS://a.example", "https://a.example/x@y"]
REFUSED_SERVERS = [
    ("http://a.example", "not an https:// server"), ("a.example:6443", "not an https:// server"),
    ("https://a.example\\@b.example", "holds a backslash"), ("https://u@a.example", "holds userinfo"),
    ("https://u:p@a.example", "holds userinfo"), ("https://a.example\r\nX: 1", "holds whitespace"),
    ("https://a.example/ x", "holds whitespace"), ("https://a.exam\x00ple", "holds whitespace, a control"),
    ("https://a.example/?q", "holds a query or a fragment"), ("https://a.example#f", "holds a query or a fragment"),
    ("https://a.example:0", "port 0 is out of 1-65535"), ("https://a.example:65536", "out of 1-65535"),
    ("https://a.example:", "not https://HOST[:PORT][/PATH]"), ("https://", "not https://HOST[:PORT][/PATH]"),
    ("https://[fd00::1::2]:1", "is not an IPv6 address"), ("https://[fd00::zz]:1", "not https://HOST"),
    ("https://a%2eexample", "not https://HOST"),
    ("https://ä.example", "non-ASCII"), ("https://a.example\u2028", "non-ASCII"),
]


@pytest.mark.parametrize("server", ACCEPTED_SERVERS)
def test_a_members_server_that_every_parser_reads_alike_is_accepted(server: str) -> None:
    compare(hub_limits.strict_server(server), expected=None)
    compare(providers.member_cluster(offered("p", server), "ns/m")["server"], expected=server)


@pytest.mark.parametrize(("server", "why"), REFUSED_SERVERS)
def test_any_other_server_is_kubeconfig_for_that_member(server: str, why: str) -> None:
    reason = hub_limits.strict_server(server)
    assert reason is not None and why in reason, (server, reason)
    with ShouldRaise(AicrError) as raised:
        providers.member_cluster(offered("p", server), "ns/m")
    compare(raised.raised.code, expected=Code.KUBECONFIG)


@pytest.mark.parametrize("variable", ["PATH", "Path", "LD_PRELOAD", "LD_LIBRARY_PATH", "DYLD_INSERT_LIBRARIES",
                                      "BASH_ENV", "ENV", "SHELLOPTS", "PS4", "IFS", "PYTHONPATH", "PYTHONSTARTUP",
                                      "NODE_OPTIONS", "PERL5OPT", "RUBYOPT", "BASH_FUNC_x%%"])
@pytest.mark.parametrize("policy", ["AppendIfNotExists", "Replace"])
def test_a_profile_may_not_set_a_variable_that_chooses_or_loads_programs(variable: str, policy: str) -> None:
    rules = file_of({"name": "p", "execConfig": {"apiVersion": V1, "command": "/usr/bin/p"},
                     "profileSourcedEnvVarsPolicy": policy})
    offer = offered("p", extensions=[{"name": providers.ENVS_EXTENSION, "extension": {variable: "/tmp/x"}}])
    with ShouldRaise(AicrError) as raised:
        providers.member_user(rules.providers[0], offer, "ns/m")
    compare(raised.raised.code, expected=Code.KUBECONFIG)
    assert f"sets {variable!r}, a variable that chooses or loads programs" in raised.raised.message


def test_under_ignore_the_profiles_environment_never_reaches_the_plugin_so_nothing_is_refused() -> None:
    rules = file_of({"name": "p", "execConfig": {"apiVersion": V1, "command": "/usr/bin/p"}})
    offer = offered("p", extensions=[{"name": providers.ENVS_EXTENSION, "extension": {"PATH": "."}}])
    compare(providers.member_user(rules.providers[0], offer, "ns/m")["exec"]["env"], expected=[])


def test_a_bare_command_is_resolved_through_the_approvers_path(tmp_path: Any, monkeypatch: Any) -> None:
    plugin = tmp_path / "bin" / "p"
    plugin.parent.mkdir()
    plugin.write_text("#!/bin/sh\n")
    plugin.chmod(0o755)
    rules = file_of({"name": "p", "execConfig": {"apiVersion": V1, "command": "p"}})
    monkeypatch.setenv("PATH", f"/nonexistent:{plugin.parent}")
    compare(providers.member_user(rules.providers[0], offered("p"), "ns/m")["exec"]["command"], expected=str(plugin))
    monkeypatch.chdir(plugin.parent)
    for path in (f".:{plugin.parent}", f"bin:{plugin.parent}", f":{plugin.parent}"):
        monkeypatch.chdir(tmp_path if path.startswith("bin") else plugin.parent)
        monkeypatch.setenv("PATH", path)
        with ShouldRaise(AicrError) as raised:
            providers.member_user(rules.providers[0], offered("p"), "ns/m")
        assert "found through the relative PATH entry" in raised.raised.message, raised.raised.message
    monkeypatch.setenv("PATH", "/nonexistent")  # found nowhere: left to the session's "not found"
    compare(providers.member_user(rules.providers[0], offered("p"), "ns/m")["exec"]["command"], expected="p")


def test_a_relative_command_is_taken_from_the_provider_files_folder(tmp_path: Any, monkeypatch: Any) -> None:
    path = tmp_path / "conf" / "providers.json"
    path.parent.mkdir()
    path.write_text(json.dumps({"providers": [{"name": "p", "execConfig": {"apiVersion": V1,
                                                                           "command": "./bin/p"}}]}))
    monkeypatch.chdir(tmp_path)
    rules = providers.load("conf/providers.json")
    compare(rules.providers[0].exec_config["command"], expected=f"{tmp_path / 'conf'}/./bin/p")
    without_folder = providers.parse(path.read_text())
    with ShouldRaise(AicrError) as raised:
        providers.member_user(without_folder.providers[0], offered("p"), "ns/m")
    compare(raised.raised.code, expected=Code.KUBECONFIG)


# -- a member's server, as the list before a fleet write shows and compares it ------------------------------

@pytest.mark.parametrize(("server", "shown"), [
    ("https://Prod.Example:6443", "prod.example:6443"), ("https://prod.example", "prod.example:443"),
    ("https://prod.example:443/k8s/clusters/c-1", "prod.example:443"), ("https://[::1]:8443", "[::1]:8443"),
    ("HTTPS://10.0.0.7:06443", "10.0.0.7:6443")])
def test_a_server_is_shown_as_its_host_and_port(server: str, shown: str) -> None:
    compare((hub_limits.strict_server(server), hub_limits.host_port(server)), expected=(None, shown))


def test_one_warning_a_shared_server_or_runtime_and_none_for_contexts() -> None:
    from aicr_core.fleet.write_items import shared_clusters

    servers = {"f/lab-1": "prod:443", "f/prod": "prod:443", "f/eu": "eu:443", "f/ap": "ap:443"}
    runtimes = {"f/lab-1": "u-1", "f/prod": "u-1", "f/eu": "u-2", "f/ap": "u-2"}
    compare(shared_clusters(servers, runtimes), expected=[
        "f/lab-1, f/prod resolve to one server, prod:443: 2 members of the inventory are one cluster",
        "f/eu, f/ap hold one ClusterRuntime (UID u-2): 2 members of the inventory are one cluster"])
    contexts: dict[str, str | None] = {"a": None, "b": None}  # the user wrote these servers: never flagged
    compare(shared_clusters(contexts, {"a": "u-1", "b": "u-1"}), expected=[])
