"""How often one `approve --plan DIGEST --contexts a,b --yes` crosses between aicr_commands and aicr_core.

A crossing is a call from a function of one package into a function of the other (the framework
calling the command's `add_arguments` and `take_action` included), counted by a profile hook on
every thread, in-process, against one local control plane whose one rollout to the plan the two
contexts share (the first approves it, the second finds it approved). It prints each call site
and how often it ran. docs/architecture.md, "The fleet's runner", has the figures.

    KUBEBUILDER_ASSETS=$(python tools/build_testbin.py) .venv/bin/python bench/crossings.py
"""
from __future__ import annotations

import collections
import io
import json
import sys
import threading
from pathlib import Path
from types import FrameType
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import envtest  # noqa: E402

PACKAGES = ("aicr_commands", "aicr_core")
sites: collections.Counter[tuple[str, str]] = collections.Counter()


def package(frame: FrameType) -> str | None:
    name = str(frame.f_globals.get("__name__", ""))
    return name.split(".", 1)[0] if name.startswith(PACKAGES) else None


def count(frame: FrameType, event: str, _arg: Any) -> None:
    caller = frame.f_back
    if event != "call" or caller is None:
        return
    here, there = package(caller), package(frame)
    if here and there and here != there:
        sites[(f"{caller.f_globals['__name__']}:{caller.f_code.co_name}",
               f"{frame.f_globals['__name__']}:{frame.f_code.co_name}")] += 1


def main() -> None:
    plane = envtest.ControlPlane().start()
    try:
        digest = envtest.random_digest()
        envtest.Seeder(plane).rollout(to=digest)
        config = yaml.safe_load(plane.kubeconfig_for("alice").read_text())
        context = config["contexts"][0]["context"]
        config["contexts"] = [{"name": "a", "context": context}, {"name": "b", "context": context}]
        config["current-context"] = "a"
        two = plane.workdir / "two-contexts.yaml"
        two.write_text(yaml.safe_dump(config))
        from aicr_core.framework.app import AicrApp

        out, err = io.StringIO(), io.StringIO()
        sys.setprofile(count)
        threading.setprofile(count)
        code = AicrApp(stdout=out, stderr=err).run(["approve", "--plan", digest, "--contexts", "a,b", "--reason",
                                                    "count", "--yes", "-o", "json", "--kubeconfig", str(two)])
        sys.setprofile(None)
        threading.setprofile(None)  # type: ignore[arg-type]
        results = [i["result"] for i in json.loads(out.getvalue())["items"]] if code == 0 else err.getvalue()
        print(f"exit {code}: {results}")  # noqa: T201
        print(f"call sites crossing: {len(sites)}; calls crossing: {sum(sites.values())}")  # noqa: T201
        for (caller, callee), calls in sorted(sites.items()):
            print(f"  {calls:3d}  {caller} -> {callee}")  # noqa: T201
    finally:
        plane.stop()


if __name__ == "__main__":
    main()
