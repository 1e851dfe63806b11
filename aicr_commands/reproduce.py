"""`kubectl aicr reproduce [PLAN]`: check a plan's bundle against the AICR CLI yourself."""
from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aicr_commands._rollout_args import session
from aicr_core.errors import AicrError, Code, UsageError, shown, shown_argument
from aicr_core.framework.command import AicrCommand
from aicr_core.framework.result import Result

if TYPE_CHECKING:
    from aicr_core.domain import operator_api as api  # imported when the command runs, so `help` stays fast


class Reproduce(AicrCommand):
    """Write a plan's recipe and print the commands that re-render and compare its bundle.

    PLAN is sha256:<digest> or a plan ConfigMap name (aicr-plan-<16 hex>);
    without it, the active plan, else the candidate. Changes nothing in the cluster.

    Examples:
      # The plan the cluster runs (else the one it moves to)
      kubectl aicr reproduce

      # A given plan (by digest or ConfigMap name), into a folder of your choice
      kubectl aicr reproduce aicr-plan-3f9a1c0d2b7e4a51 --dir /tmp/check

    Codes:
      NO_PLAN
      NO_RECIPE
      NO_RENDER_FLAGS
      DIGEST_MISMATCH
      INVALID_PLAN
      WRITE_FAILED
      NOT_FOUND
      API
    """

    uses_flags = ("operator_namespace", "dir")

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        action = parser.add_argument(
            "plan", metavar="PLAN", nargs="?",
            help="sha256:<64 hex> or aicr-plan-<16 hex> (default: the active plan, else the candidate)")
        action.completer = complete_plans  # type: ignore[attr-defined]

    def take_action(self, args: argparse.Namespace) -> Result:
        from aicr_core.domain import operator_api as api

        wanted = api.plan_names(args.plan) if args.plan else None
        from aicr_core.domain.rollouts import get_object

        mountable_dir(Path(args.dir))  # before any call: a usage error writes and asks nothing
        cluster = session(args)
        if wanted is None:
            runtime = api.parse_runtime(get_object(cluster, api.runtime_path(), f"ClusterRuntime {api.RUNTIME_NAME}"))
            digest = runtime.active_plan or runtime.candidate_plan
            if not digest:
                raise AicrError(Code.NO_PLAN, "the ClusterRuntime has neither an active nor a candidate plan")
            wanted = (api.plan_configmap_name(digest), digest)
        name, digest = wanted
        where = f"{args.operator_namespace}/{name}"
        plan = api.parse_plan(get_object(cluster, api.configmap_path(args.operator_namespace, name), f"plan {where}"))
        recipe = checked_recipe(plan, name, digest)
        target = write_atomically(Path(args.dir) / "recipe.json", recipe)
        return Result("Reproduction", {
            "plan": plan.digest, "configMap": where, "aicrImage": plan.aicr_image, "bundle": plan.bundle,
            "recipe": str(target), "renderFlags": list(plan.render_flags or ()),
            "commands": commands(plan, Path(args.dir))}, names=(f"configmap/{name}",))


def mountable_dir(directory: Path) -> None:
    """A --dir the printed `docker run -v DIR:/work` mounts as written: docker splits -v at every colon."""
    work = str(directory.resolve())
    if ":" in work:
        raise UsageError(f"--dir {shown_argument(str(directory))} is {shown_argument(work)}, whose colon docker run -v "
                         "would split the mount at; "
                         "choose a directory without one")


def complete_plans(prefix: str, parsed_args: argparse.Namespace, **_: Any) -> list[str]:
    """PLAN for TAB: the digests and ConfigMap names of the plans in the operator namespace (one LIST)."""
    from aicr_core.domain import operator_api as api
    from aicr_core.framework.completion import API_SECONDS
    from aicr_core.session.deadline import Deadline

    namespace = parsed_args.operator_namespace
    configmaps, _version = session(parsed_args, Deadline(API_SECONDS)).list(
        api.configmaps_path(namespace), {"labelSelector": api.PLAN_SELECTOR})
    words = []
    for configmap in configmaps:
        name, digest = api.metadata_name(configmap), api.plan_digest(configmap)
        if api.is_digest(digest):
            words.append(f"{digest}\tplan in ConfigMap {name}")
        words.append(f"{name}\tplan ConfigMap")
    return words


def checked_recipe(plan: api.Plan, name: str, digest: str | None) -> str:
    """The recipe text, after every refusal upstream makes; nothing is written before this passes."""
    from aicr_core.domain import operator_api as api

    expected = digest or f"sha256:{api.PLAN_CONFIGMAP.fullmatch(name).group(1)}"  # type: ignore[union-attr]
    if not plan.digest.startswith(expected) or not api.is_digest(plan.digest):
        raise AicrError(Code.NOT_FOUND, f"ConfigMap {name} records plan {plan.digest or 'nothing'}, "
                        f"not {expected}: it is not that plan")
    if plan.from_applications or plan.recipe is None:
        raise AicrError(Code.NO_RECIPE, f"plan {plan.digest} was rebuilt from the Argo CD Applications; "
                        "it has no recipe to reproduce")
    if plan.render_flags is None:
        raise AicrError(Code.NO_RENDER_FLAGS, f"plan {plan.digest} does not record the flags it was rendered with")
    check_references(plan)
    actual = api.sha256_digest(plan.recipe)
    if actual != plan.recipe_digest:
        raise AicrError(Code.DIGEST_MISMATCH, f"plan {plan.digest}: recipe.json has digest {actual}, "
                        f"the plan records {plan.recipe_digest or 'none'}; nothing was written")
    return plan.recipe


def check_references(plan: api.Plan) -> None:
    """What reaches `docker run` and `oras pull` must be one pinned reference each, never an option.

    The image and the bundle come before the options the container sees, so a value such as
    `--privileged` or `-v/:/host` would be read by docker itself; quoting does not stop that.
    The render flags follow the image: docker passes them to the container, so any string is
    harmless there, as long as it holds no control or format character (the printed command
    must be the command that runs).
    """
    from aicr_core.domain.oci_reference import GRAMMAR, is_pinned_reference
    from aicr_core.framework.terminal import safe

    def invalid(field: str, value: str, why: str) -> AicrError:
        return AicrError(Code.INVALID_PLAN, f"plan {plan.digest}: {field} {shown(value)} {why}; nothing was written")

    if not is_pinned_reference(plan.aicr_image):
        raise invalid("aicrImage", plan.aicr_image, f"is not an image reference pinned by digest ({GRAMMAR})")
    if not plan.bundle.startswith("oci://") or not is_pinned_reference(plan.bundle.removeprefix("oci://")):
        raise invalid("bundle", plan.bundle, f"is not an OCI reference pinned by digest (oci://{GRAMMAR})")
    for i, flag in enumerate(plan.render_flags or ()):
        if safe(flag, allow_newlines=False) != flag:
            raise invalid(f"renderFlags[{i}]", flag, "holds a control or format character")


def write_atomically(target: Path, text: str) -> Path:
    """Write `text` to `target` through a temporary file and a rename: never a half-written recipe."""
    data = text.encode("utf-8")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.is_file() and target.read_bytes() == data:
            return target
        fd, temporary = tempfile.mkstemp(prefix=".recipe.json.", dir=target.parent)
        try:
            umask = os.umask(0)
            os.umask(umask)
            os.fchmod(fd, 0o666 & ~umask)  # mkstemp makes it 0600; a recipe is no secret, `docker run` must read it
            with os.fdopen(fd, "wb") as out:
                out.write(data)
                out.flush()
                os.fsync(out.fileno())
            os.replace(temporary, target)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
    except OSError as err:
        raise AicrError(Code.WRITE_FAILED, f"cannot write {target}: {err.strerror or err}") from None
    return target


def commands(plan: api.Plan, directory: Path) -> dict[str, str]:
    """The three commands, every argument quoted: cluster data never becomes shell syntax."""
    work = directory.resolve()
    render = ["docker", "run", "--rm", "-v", f"{work}:/work", plan.aicr_image, "bundle",
              "--recipe", "/work/recipe.json", *(plan.render_flags or ()), "--output", "/work/cli-bundle"]
    pull = ["oras", "pull", plan.bundle.removeprefix("oci://"), "--output", str(work / "operator-bundle")]
    diff = ["diff", "-r", str(work / "cli-bundle"), str(work / "operator-bundle")]
    import shlex  # here, not at the top: `help` imports every command module

    return {"render": shlex.join(render), "pull": shlex.join(pull), "diff": shlex.join(diff)}
