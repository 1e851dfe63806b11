"""The demo hub's credentials plugin (KEP-5339's exec contract): `python THIS --tokens FILE`.

`kubectl aicr --cluster-profiles` runs it for each member with KUBERNETES_EXEC_INFO naming the
member's cluster; the cluster's `config` (the profile's `client.authentication.k8s.io/exec`
extension) names the member, and FILE holds each member's bearer token (the demo's `erin`, an
approver). It prints an ExecCredential; never the token anywhere else.
"""
from __future__ import annotations

import argparse
import json
import os
import sys


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", required=True, help="JSON: {member: token}")
    args = parser.parse_args()
    info = json.loads(os.environ.get("KUBERNETES_EXEC_INFO") or "{}")
    config = (info.get("spec", {}).get("cluster") or {}).get("config") or {}
    member = config.get("member") if isinstance(config, dict) else None
    with open(args.tokens, encoding="utf-8") as file:
        tokens = json.load(file)
    if member not in tokens:
        print(f"demo-credentials: no token for member {member!r} (is provideClusterInfo true?)", file=sys.stderr)
        return 3
    print(json.dumps({"apiVersion": info.get("apiVersion", "client.authentication.k8s.io/v1"),
                      "kind": "ExecCredential", "status": {"token": tokens[member]}}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
