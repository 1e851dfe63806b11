"""A credentials plugin for the ClusterProfile tests, with KEP-5339's exec contract (run as `python THIS ...`).

It answers a member's bearer token, found by the cluster that KUBERNETES_EXEC_INFO hands it: the
cluster's `config` (the profile's `client.authentication.k8s.io/exec` extension) names the member,
and `--tokens FILE` (an argument the profile adds through its additional-args extension) holds
each member's server and token. Without the cluster, or without its exec extension, it fails: a
member reached through it proves `provideClusterInfo`. Each run is logged to
$AICR_TEST_PLUGIN_LOG (member, pid, what the profile's environment added), never the token. A
member named in $AICR_TEST_PLUGIN_HANG hangs, with a child of its own, until it is killed.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time


def fail(message: str) -> None:
    sys.stderr.write(f"profile-plugin: {message}\n")
    sys.exit(3)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tokens", required=True)
    parser.add_argument("--region", default="")
    args = parser.parse_args()
    info = json.loads(os.environ.get("KUBERNETES_EXEC_INFO") or "{}")
    if info.get("spec", {}).get("interactive") is not False:
        fail("asked to be interactive")
    cluster = info.get("spec", {}).get("cluster")
    if not isinstance(cluster, dict):
        fail("KUBERNETES_EXEC_INFO has no spec.cluster (is provideClusterInfo true?)")
    config = cluster.get("config")
    if not isinstance(config, dict) or "member" not in config:
        fail("the cluster has no client.authentication.k8s.io/exec extension naming the member")
    member = config["member"]
    with open(args.tokens, encoding="utf-8") as file:
        known = json.load(file)
    if member not in known:
        fail(f"no token for member {member}")
    if cluster.get("server") != known[member]["server"] or not cluster.get("certificate-authority-data"):
        fail(f"the cluster of {member} is not the one its profile gives")
    entry = {"member": member, "pid": os.getpid(), "region": args.region,
             "env": os.environ.get("AICR_TEST_REGION", ""), "log": os.environ.get("AICR_TEST_PLUGIN_LOG", "")}
    if member == os.environ.get("AICR_TEST_PLUGIN_HANG"):
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
        entry["child"] = child.pid
    with open(os.environ["AICR_TEST_PLUGIN_LOG"], "a", encoding="utf-8") as log:
        log.write(json.dumps(entry) + "\n")
    if "child" in entry:
        time.sleep(300)
    sys.stdout.write(json.dumps({"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential",
                                 "status": {"token": known[member]["token"]}}) + "\n")


if __name__ == "__main__":
    main()
