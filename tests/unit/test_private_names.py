"""Every private name of the Kubernetes client, urllib3 and CPython that the session touches exists, with the
parameters we call it with: a library bump that moves one fails here, in one place.

The names are listed where they are used (`PRIVATE_NAMES` of `client_adapter` and `connections`, the only
modules that may touch them); `Class()` in a name stands for an instance made here, whose attribute is checked.
"""
from __future__ import annotations

import importlib
import inspect
import re
from typing import Any

import pytest
from testfixtures import compare

from aicr_core.session import client_adapter, connections

NAMES = [*client_adapter.PRIVATE_NAMES, *connections.PRIVATE_NAMES]

# An instance of each class whose instance attributes are listed, made as the session makes one.
_LOADER_CONFIG = {"current-context": "c", "contexts": [{"name": "c", "context": {"cluster": "k", "user": "u"}}],
                  "clusters": [{"name": "k", "cluster": {"server": "https://127.0.0.1:6443"}}],
                  "users": [{"name": "u", "user": {"token": "t"}}]}


def _instance(module: Any, class_name: str) -> Any:
    cls = getattr(module, class_name)
    if class_name == "KubeConfigLoader":
        return cls(config_dict=_LOADER_CONFIG, config_base_path=None)
    if class_name == "ExecProvider":
        from kubernetes.config.kube_config import ConfigNode

        config = ConfigNode("exec", {"apiVersion": "client.authentication.k8s.io/v1", "command": "true"})
        return cls(config, "/", ConfigNode("cluster", {"server": "https://127.0.0.1:6443"}))
    if class_name == "ApiClient":
        from kubernetes.client import Configuration

        return cls(configuration=Configuration(host="https://127.0.0.1:6443"))
    if class_name == "RESTClientObject":
        from kubernetes.client import Configuration

        return cls(Configuration(host="https://127.0.0.1:6443"))
    if class_name in ("HTTPConnection", "HTTPSConnection"):
        return cls("127.0.0.1", 6443)
    return cls()


def _resolve(module_name: str, dotted: str) -> Any:
    module = importlib.import_module(module_name)
    head, *rest = dotted.split(".")
    value = _instance(module, head[:-2]) if head.endswith("()") else getattr(module, head)
    for part in rest:
        if not hasattr(value, part):
            owner = value.__name__ if isinstance(value, type) else type(value).__name__
            raise AssertionError(f"{module_name}.{dotted}: {owner} has no {part!r} "
                                 "(the library moved it: adapt the module that lists it)")
        value = getattr(value, part)
    return value


@pytest.mark.parametrize(("module_name", "dotted", "parameters"), NAMES, ids=[f"{m}.{d}" for m, d, _ in NAMES])
def test_each_private_name_exists_with_the_parameters_we_use(module_name: str, dotted: str,
                                                             parameters: tuple[str, ...] | None) -> None:
    value = _resolve(module_name, dotted)
    if parameters is not None:
        compare(tuple(inspect.signature(value).parameters), expected=parameters)


def test_only_the_adapters_touch_the_clients_private_names() -> None:
    """No other module of the session names a private method of the client or urllib3 (direct_get takes the
    pool's `_get_conn`/`_put_conn`, which `connections` lists and watches)."""
    import pathlib

    import aicr_core.session as package

    private = {d.rsplit(".", 1)[-1] for _, d, _ in NAMES if d.rsplit(".", 1)[-1].startswith("_")} - {"__init__"}
    allowed = {"client_adapter.py", "connections.py", "direct_get.py", "test_private_names.py"}
    found = {path.name: sorted(n for n in private if re.search(rf"\.{n}\b", path.read_text()))
             for path in pathlib.Path(package.__file__).parent.glob("*.py") if path.name not in allowed}
    compare({name: names for name, names in found.items() if names}, expected={})


def test_urllib3_is_in_the_range_setup_cfg_pins() -> None:
    import configparser
    import pathlib

    import urllib3
    from packaging.specifiers import SpecifierSet

    setup = configparser.ConfigParser()
    setup.read(pathlib.Path(__file__).parents[2] / "setup.cfg")
    pinned = [line.strip() for line in setup["options"]["install_requires"].splitlines()
              if line.strip().startswith("urllib3")]
    compare(len(pinned), expected=1)
    assert urllib3.__version__ in SpecifierSet(pinned[0][len("urllib3"):]), (urllib3.__version__, pinned)


def test_the_kubeconfig_files_and_overrides_need_no_client() -> None:
    """Completion reads kubeconfigs through `kubeconfig_files`: importing it (and the overrides) loads neither
    the Kubernetes client nor urllib3."""
    import subprocess
    import sys

    probe = ("import sys; import aicr_core.session.kubeconfig_files, aicr_core.session.kubeconfig_overrides, "
             "aicr_core.session.exec_plugin; "
             "print(sorted(n for n in sys.modules if n.split('.')[0] in ('kubernetes', 'urllib3')))")
    compare(subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout,
            expected="[]\n")


def test_a_name_that_moved_fails_naming_it() -> None:
    with pytest.raises(AssertionError, match=r"HTTPConnectionPool has no '_get_connection'"):
        _resolve("urllib3.connectionpool", "HTTPConnectionPool._get_connection")
    with pytest.raises(AssertionError, match="no '_cluster_info'"):
        _resolve("kubernetes.config.kube_config", "KubeConfigLoader()._cluster_info")
