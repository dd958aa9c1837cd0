"""Paths people name are not secrets: the directories of real machines (home directories,
monorepos with versions and underscores, Windows and macOS paths) come through the scrubber
untouched, as text, as the session's working directory and git root (`copilot.cwd`,
`copilot.git.root`) and under every `--paths` mode; a secret inside a path is still found, and
only it goes (docs/privacy.md)."""

from __future__ import annotations

import pytest

from otel_bridge.processors import Scrubber, ScrubberConfig

#: Working directories as they are on people's machines; none holds a secret.
REAL_PATHS = (
    "/home/alice/src/acme-widgets_backend2024/services",
    "/home/alice/src/acme-widgets_backend2024/services/InvoiceService2023/src/main/java/com/acme",
    "/home/alice/src/monorepo/packages/@acme/widgets-core_v2.3.1-rc.2/node_modules/.pnpm",
    "/home/alice/src/monorepo/node_modules/.pnpm/react@18.2.0_react-dom@18.2.0/node_modules",
    "/home/alice/go/pkg/mod/github.com/aws/aws-sdk-go-v2/service/s3@v1.58.2/internal",
    "/home/alice/.cache/pypoetry/virtualenvs/acme-widgets-backend-Xy3kLm9Q-py3.12/lib/python3.12",
    "/home/alice/.vscode-server/bin/e170252f762678dec6ca2cc69aba1570769a5d39/extensions",
    "/home/alice/.nvm/versions/node/v20.11.1/lib/node_modules/@github/copilot",
    "/home/alice/projects/k8s-manifests/overlays/prod-eu-west-1/apps/web-v2",
    "/home/alice/src/acme_widgets_2024_backend_v2_services_invoice_generator_3",
    "/home/alice/src/AcmeWidgets2024Backend/Services2023Invoice",
    "/workspaces/acme-widgets_backend2024/apps/admin-portal_v2/src",
    "/mnt/c/Users/alice/source/repos/Acme.Widgets_v2.3/src",
    r"C:\Users\alice\source\repos\Acme.Widgets_v2.3\src",
    r"C:\Users\alice.smith\source\repos\AcmeWidgets.Backend_v2.3.1\src\Services\InvoiceService2023",
    r"C:\Users\alice\AppData\Local\Packages\Microsoft.WindowsTerminal_8wekyb3d8bbwe\LocalState",
    r"D:\a\acme-widgets\acme-widgets\services\billing_service_v2\src",
    "C:/Users/alice/source/repos/Acme.Widgets_v2.3/src",
    "/Users/alice/Library/Mobile Documents/com~apple~CloudDocs/Projects/acme-widgets_v2.3.1",
    "/Users/alice/Library/Mobile Documents/iCloud~md~obsidian/Documents/notes",
    "/Users/alice/Library/CloudStorage/OneDrive-AcmeCorp/Projects/widgets_backend2024",
    "/Volumes/External SSD/src/acme-widgets_backend2024/packages/api-gateway_v3",
    "/Volumes/Macintosh HD/Users/alice/dev/monorepo/packages/web-app_v12.4.0/src/components",
)


@pytest.mark.parametrize("path", REAL_PATHS)
def test_real_paths_are_not_secrets(path: str) -> None:
    scrubber = Scrubber()
    assert scrubber.text(path) == path
    assert scrubber.text(f"cd {path} && make test") == f"cd {path} && make test"
    assert scrubber.path(path) == path
    attributes = {"copilot.cwd": path, "copilot.git.root": path, "gen_ai.tool.name": "bash"}
    assert scrubber.attributes(attributes) == attributes


@pytest.mark.parametrize("path", REAL_PATHS)
def test_the_paths_modes_give_a_real_paths_own_last_part_or_hash(path: str) -> None:
    last = path.replace("\\", "/").rsplit("/", 1)[-1]
    basename = Scrubber(ScrubberConfig(paths="basename"))
    assert basename.path(path) == last
    assert basename.attributes({"copilot.cwd": path}) == {"copilot.cwd": last}
    hashed = Scrubber(ScrubberConfig(paths="hash"))
    digest = hashed.path(path)
    assert digest.startswith("path:") and "REDACTED" not in digest
    assert hashed.path(path) == digest != Scrubber(ScrubberConfig(paths="hash")).path(path + "x")


@pytest.mark.parametrize(
    ("text", "basename"),
    [
        (r"cd C:\Users\alice\source\repos\Acme.Widgets_v2.3\src && dotnet build", "cd src && "),
        ("open /Users/alice/Library/Mobile Documents/com~apple~CloudDocs/notes.md now", "open "),
        ("cd ~/src/acme/app && ls", "cd app && ls"),
        (r"copy \\fileserver\share\team\plan.docx here", "copy plan.docx here"),
        ("edit C:/Users/alice/source/repos/app/Program.cs", "edit Program.cs"),
    ],
)
def test_paths_in_text_of_every_shape_follow_the_paths_mode(text: str, basename: str) -> None:
    # a path the text pattern did not know (Windows, a space in a directory, ~) stayed whole
    # under --paths basename and hash
    cut = Scrubber(ScrubberConfig(paths="basename")).text(text)
    assert cut.startswith(basename) or basename in cut
    for name in ("alice", "Users", "fileserver", "Mobile", "Documents", "CloudDocs", "acme/"):
        assert name not in cut
        assert name not in Scrubber(ScrubberConfig(paths="hash")).text(text)


KEY = "Xk9mP2qL7vR4tW8nB3cF6hJ1dG5sA0zYab"


@pytest.mark.parametrize(
    ("path", "kept"),
    [
        (f"/home/alice/src/{KEY}/services", "/home/alice/src/[REDACTED:high_entropy]/services"),
        (f"/home/alice/src/acme-widgets_backend2024/{KEY}", "/home/alice/src/acme-widgets_"),
        (rf"C:\Users\alice\source\repos\{KEY}\src", r"C:\Users\alice\source\repos\[REDACTED:"),
        (f"src/{KEY}/app", "src/[REDACTED:high_entropy]/app"),
        (f"/home/alice/{KEY[:20]}/{KEY[20:]}/x", "[REDACTED:high_entropy]"),  # a key with /
        ("/home/alice/src/ghp_" + "a1B2" * 9 + "/app", "/home/alice/src/[REDACTED:github_token]/"),
    ],
)
def test_a_key_as_a_directory_is_redacted_and_only_it(path: str, kept: str) -> None:
    scrubber = Scrubber()
    for scrubbed in (scrubber.text(path), scrubber.path(path), scrubber.text(f"cd {path}")):
        assert KEY[:12] not in scrubbed and KEY[-12:] not in scrubbed and "a1B2a1B2" not in scrubbed
        assert kept in scrubbed
    assert "Xk9mP2qL" not in Scrubber(ScrubberConfig(paths="basename")).path(path)


def test_a_password_in_a_url_as_the_working_directory_is_redacted() -> None:
    url = "https://alice:hunter2pass@git.example.com/acme/widgets.git"
    for mode in ("keep", "basename", "hash"):
        scrubber = Scrubber(ScrubberConfig(paths=mode))
        assert "hunter2pass" not in str(scrubber.attributes({"copilot.cwd": url}))
    keep = Scrubber().path(url)
    assert keep == "https://alice:[REDACTED:url_password]@git.example.com/acme/widgets.git"
