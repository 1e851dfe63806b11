"""The provider file's schema (`ProviderFileDocument`, pydantic, as the waves file's) and its problems' words.

KEP-5339's provider file, as its reference library reads it: `providers`, each a name, an
`execConfig` (a kubeconfig exec config, checked as kubectl checks a kubeconfig user's: its
apiVersion, a command without NUL, args, env, ...; a null is as absent) and the two policies of
what a profile may add. Strict types, unknown keys forbidden. `problem` says the first of
pydantic's errors as the provider file has always said it (`provider 'a': execConfig.command:
every provider needs the command of its credentials plugin`): an unknown key first, the shallowest
first, then in the document's order. `access_providers` reads the file and turns it into providers.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, model_validator

from aicr_core.errors import shown, shown_argument
from aicr_core.fleet import hub_limits
from aicr_core.fleet.waves_schema import UNKNOWN, Whole, first, known

EXEC_API_VERSIONS = ("client.authentication.k8s.io/v1", "client.authentication.k8s.io/v1beta1")
INTERACTIVE_MODES = ("Never", "IfAvailable", "Always")
ARGS_POLICIES = ("Append", "Ignore")                       # "" (absent) is Ignore
ENV_POLICIES = ("AppendIfNotExists", "Replace", "Ignore")  # "" (absent) is Ignore


def _nonblank(text: str) -> str:
    if not text.strip():
        raise ValueError("empty")
    return text


def _command(text: str) -> str:
    _nonblank(text)
    if "\0" in text:
        raise Whole("a command holds no NUL character")
    return text


def _no_nul(text: str) -> str:
    if "\0" in text:
        raise ValueError("holds a NUL character")
    return text


def _env_name(text: str) -> str:
    if not hub_limits.env_name(text):
        raise ValueError("not an environment variable's name")
    return text


NoNul = Annotated[str, AfterValidator(_no_nul)]


class _Document(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True, populate_by_name=False)


class EnvVar(_Document):
    name: Annotated[str, AfterValidator(_env_name)]
    value: NoNul


class ExecConfig(_Document):
    """A kubeconfig user's exec config (client-go's ExecConfig as JSON names it); a null is as absent."""

    api_version: Literal["client.authentication.k8s.io/v1", "client.authentication.k8s.io/v1beta1"] = Field(
        alias="apiVersion")
    command: Annotated[str, AfterValidator(_command)]
    args: list[NoNul] | None = None
    env: list[EnvVar] | None = None
    provide_cluster_info: bool | None = Field(default=None, alias="provideClusterInfo")
    interactive_mode: Literal["Never", "IfAvailable", "Always"] | None = Field(default=None, alias="interactiveMode")
    install_hint: str | None = Field(default=None, alias="installHint")

    @model_validator(mode="before")
    @classmethod
    def _nulls_absent(cls, value: Any) -> Any:
        return {k: v for k, v in value.items() if v is not None} if isinstance(value, dict) else value


class ProviderDocument(_Document):
    name: Annotated[str, AfterValidator(_nonblank)]
    exec_config: ExecConfig = Field(alias="execConfig")
    args_policy: Literal["Append", "Ignore", ""] | None = Field(default=None, alias="profileSourcedCLIArgsPolicy")
    env_policy: Literal["AppendIfNotExists", "Replace", "Ignore", ""] | None = Field(
        default=None, alias="profileSourcedEnvVarsPolicy")


class ProviderFileDocument(_Document):
    providers: Annotated[list[ProviderDocument], Field(min_length=1)]

    @model_validator(mode="after")
    def _names_once(self) -> ProviderFileDocument:
        seen: set[str] = set()
        for provider in self.providers:
            if provider.name in seen:
                raise Whole(f"provider {shown(provider.name)}: two providers have that name")
            seen.add(provider.name)
        return self


# -- the words of a problem ------------------------------------------------------------------------

def _key(key: Any) -> str:
    return shown_argument(key) if isinstance(key, str) else shown(key)


def problem(err: ValidationError, doc: Mapping[str, Any]) -> str:
    """The first problem of a provider file, in the provider file's words."""
    error = first(err.errors())
    loc, kind = tuple(error["loc"]), error["type"]
    raised = (error.get("ctx") or {}).get("error")
    if isinstance(raised, Whole) and not loc:
        return str(raised)
    if len(loc) >= 2 and loc[0] == "providers" and isinstance(loc[1], int):
        return _provider_problem(error, loc[1], loc[2:], doc["providers"][loc[1]])
    if kind in UNKNOWN:
        return f"unknown key {_key(loc[0])} (known: {known(ProviderFileDocument)})"
    return "providers: at least one provider is needed (a list of {name, execConfig})"


def _provider_problem(error: Any, index: int, loc: tuple[Any, ...], raw: Any) -> str:
    where = f"providers[{index}]"
    if not loc:
        return f"{where}: a provider is an object with name and execConfig"
    field = loc[0]
    if error["type"] in UNKNOWN and len(loc) == 1:
        return f"unknown key {where}.{_key(field)} (known: {known(ProviderDocument)})"
    if field == "name":
        return f"{where}.name: every provider needs a name"
    name = f"provider {shown(raw.get('name'))}"
    if field == "profileSourcedCLIArgsPolicy":
        return f"{name}: {field} must be {', '.join(ARGS_POLICIES)} or absent (got {shown(raw.get(field))})"
    if field == "profileSourcedEnvVarsPolicy":
        return f"{name}: {field} must be {', '.join(ENV_POLICIES)} or absent (got {shown(raw.get(field))})"
    return f"{name}: {_exec_problem(error, loc[1:], raw.get('execConfig'))}"


def _exec_problem(error: Any, loc: tuple[Any, ...], raw: Any) -> str:
    where = "execConfig"
    if not loc:
        return f"{where}: every provider needs an execConfig with a command"
    field = loc[0]
    if error["type"] in UNKNOWN and len(loc) == 1:
        return f"unknown key {where}.{_key(field)} (known: {known(ExecConfig)})"
    config = {k: v for k, v in raw.items() if v is not None}
    if field == "command":
        raised = (error.get("ctx") or {}).get("error")
        if isinstance(raised, Whole):
            return f"{where}.command: {raised}"
        return f"{where}.command: every provider needs the command of its credentials plugin"
    if field == "apiVersion":
        return f"{where}.apiVersion must be {' or '.join(EXEC_API_VERSIONS)} (got {shown(config.get('apiVersion'))})"
    if field == "args":
        return f"{where}.args: a list of strings (without NUL characters)"
    if field == "env":
        return f"{where}.env: a list of {{name, value}} strings (a name without '=' or NUL, a value without NUL)"
    if field == "provideClusterInfo":
        return f"{where}.provideClusterInfo: true or false"
    if field == "interactiveMode":
        return (f"{where}.interactiveMode must be {', '.join(INTERACTIVE_MODES)} "
                f"(got {shown(config.get('interactiveMode'))})")
    return f"{where}.installHint: a string"
