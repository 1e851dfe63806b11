"""`kubectl aicr dashboard --contexts ...` on the fleet's three planes and a down one: `list`'s selection and document.

The dashboard's `/api/rollouts` is what `kubectl aicr list --contexts ... -o json` prints for the
same selection: the items of each live cluster (with `context`), the clusters `read`, and the down
one among `errors`; its inbox names each cluster on a line of its own.
"""
from __future__ import annotations

import json
from pathlib import Path

from testfixtures import compare

from support.dashboard_process import dashboard
from support.fleet_planes import CONTEXTS, DOWN, Fleet
from support.harness import Aicr


def test_the_fleet_document_is_lists_across_contexts(aicr: Aicr, fleet: Fleet, tmp_path: Path) -> None:
    _, names = fleet.seed_plan()
    with dashboard(aicr, fleet.kubeconfig, tmp_path, "--contexts", "gpu-*") as running:
        running.sign_in()
        mine = running.until(lambda d: d["read"] == list(CONTEXTS) and len(d["errors"]) == 1, 30)
        listed = json.loads(aicr("list", "--contexts", "gpu-*", "-o", "json", kubeconfig=fleet.kubeconfig).stdout)
        compare(mine["read"], expected=listed["read"])
        compare([e["context"] for e in mine["errors"]], expected=[e["context"] for e in listed["errors"]])
        compare([e["context"] for e in mine["errors"]], expected=[DOWN])
        seeded = {(c, n) for c, n in names.items()}
        compare([i for i in mine["items"] if (i["context"], i["name"]) in seeded],
                expected=[i for i in listed["items"] if (i["context"], i["name"]) in seeded])
        _, _, inbox = running.request("GET", "/")
        for context in (*CONTEXTS, DOWN):
            assert f'<tr data-context="{context}">' in inbox, context
        assert "disconnected: [" in inbox
