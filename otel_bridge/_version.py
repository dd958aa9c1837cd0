"""The package's version, which the git tag gives: a release is the tag v<version>.

setuptools-scm computes it when the package is built (pyproject.toml, [tool.setuptools_scm]):
at the tag v1.2.3 it is 1.2.3, N commits after it 1.2.4.devN+g<commit>. The build writes it
into _scm_version.py beside this module (git ignores that file), so that reading it costs one
small import. A checkout used without being built or installed (PYTHONPATH=.) has no such
file: the installed distribution's metadata says the version then (importlib.metadata, imported
only in that case, since it is not free at start), and "0+unknown" when nothing is installed.
An editable install (pip install -e .) writes the file once: it keeps the version of that
install until the next one.
"""

from __future__ import annotations

from importlib import import_module

__all__ = ["__version__"]


def _installed_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("otel-bridge")
    except PackageNotFoundError:
        return "0+unknown"


try:
    # By name at run time, not an import statement: the package's import graph, which
    # import-linter checks (pyproject.toml), is then the same whether a build wrote it or not.
    __version__: str = import_module("._scm_version", __package__).__version__
except ImportError:  # not built: a checkout on the path
    __version__ = _installed_version()
