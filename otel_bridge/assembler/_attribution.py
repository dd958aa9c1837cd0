"""Attribution: which repository, branch, commit and client a session's work belongs to.

The CLI writes its `WorkingDirectoryContext` in `session.start`, again in every
`session.resume` (a resumed session may be on another branch or commit by then) and in
`session.context_changed` (the working directory moved): `cwd` always, and in a git checkout
`gitRoot`, `repository` (`owner/name` on GitHub, `org/project/repo` on Azure DevOps),
`repositoryHost`, `hostType` (github or ado), `branch`, `headCommit`, `baseCommit`. Here it
becomes the attributes every span of the session carries (`SpanFactory.emit`), under the
OpenTelemetry VCS names where they exist (semconv.py cites them). The client that ran the
session (`client_name` of the session's workspace.yaml: github/cli, sdk) is read by the source
through `AssemblerConfig.client_name_of`, since the assembler does no I/O.

These attributes are also what a checkpoint saves for attribution (`snapshot`, `restore`): a
session restored after eviction or a restart goes on carrying them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .. import semconv as sc
from .._records import AttributeValue
from ._fields import read_str

__all__ = ["ATTRIBUTION_KEYS", "context_attributes", "restore_attribution"]

#: Every key the attribution puts on spans (and the only ones a checkpoint may restore).
ATTRIBUTION_KEYS = frozenset(
    {
        sc.VCS_REPOSITORY_NAME,
        sc.VCS_OWNER_NAME,
        sc.VCS_REPOSITORY_URL_FULL,
        sc.VCS_PROVIDER_NAME,
        sc.VCS_REF_HEAD_NAME,
        sc.VCS_REF_HEAD_REVISION,
        sc.VCS_REF_HEAD_TYPE,
        sc.VCS_REF_BASE_REVISION,
        sc.COPILOT_REPOSITORY,
        sc.COPILOT_REPOSITORY_HOST,
        sc.COPILOT_CWD,
        sc.COPILOT_GIT_ROOT,
        sc.COPILOT_CLIENT_NAME,
    }
)
#: The CLI's `hostType` values and their `vcs.provider.name` (the convention has no value for
#: Azure DevOps: its `ado` is kept as the CLI writes it).
_PROVIDERS = {"github": "github"}
#: Longest value taken from a context field: a repository, branch or path longer than this is
#: not a real one (logs are untrusted; the exporters would carry it on every span).
_MAX_VALUE = 1024


def context_attributes(context: Any) -> dict[str, AttributeValue] | None:
    """The span attributes a `WorkingDirectoryContext` gives; None when `context` is not one,
    or is the CLI's preliminary notice of a change (`pendingGitContext`: a settled one follows).
    """
    if not isinstance(context, Mapping) or context.get("pendingGitContext") is True:
        return None

    def field(key: str) -> str | None:
        value = read_str(context, key)
        return value if value is not None and len(value) <= _MAX_VALUE else None

    out: dict[str, AttributeValue] = {}
    repository = field("repository")
    host = field("repositoryHost")
    host_type = field("hostType")
    if repository is not None:
        owner, _, name = repository.rpartition("/")
        out[sc.COPILOT_REPOSITORY] = repository
        out[sc.VCS_REPOSITORY_NAME] = name or repository
        if owner:
            out[sc.VCS_OWNER_NAME] = owner
        url = _repository_url(host, host_type, repository)
        if url is not None:
            out[sc.VCS_REPOSITORY_URL_FULL] = url
    if host is not None:
        out[sc.COPILOT_REPOSITORY_HOST] = host
    if host_type is not None:
        out[sc.VCS_PROVIDER_NAME] = _PROVIDERS.get(host_type, host_type)
    branch = field("branch")
    if branch is not None:
        out[sc.VCS_REF_HEAD_NAME] = branch
        out[sc.VCS_REF_HEAD_TYPE] = sc.VCS_REF_TYPE_BRANCH
    for key, attribute in (
        ("headCommit", sc.VCS_REF_HEAD_REVISION),
        ("baseCommit", sc.VCS_REF_BASE_REVISION),
        ("cwd", sc.COPILOT_CWD),
        ("gitRoot", sc.COPILOT_GIT_ROOT),
    ):
        value = field(key)
        if value is not None:
            out[attribute] = value
    return out


def _repository_url(host: str | None, host_type: str | None, repository: str) -> str | None:
    """`vcs.repository.url.full`: the repository's canonical HTTPS address (no `.git`), made
    from the host and the `owner/name` the CLI derived from the remote, never from the remote
    URL itself (which may hold credentials). GitHub (and GHE hosts): `https://host/owner/name`;
    Azure DevOps: `https://host/org/project/_git/repo`."""
    if host is None or "/" in host or "@" in host:
        return None
    parts = repository.split("/")
    if host_type == "ado" and len(parts) == 3:
        return f"https://{host}/{parts[0]}/{parts[1]}/_git/{parts[2]}"
    if host_type in (None, "github") and len(parts) == 2:
        return f"https://{host}/{repository}"
    return None


def restore_attribution(saved: Any) -> dict[str, AttributeValue]:
    """A checkpoint's attribution back: known keys with string values only."""
    if not isinstance(saved, Mapping):
        return {}
    return {
        key: value
        for key, value in saved.items()
        if key in ATTRIBUTION_KEYS and isinstance(value, str) and len(value) <= _MAX_VALUE
    }
