"""README's Architecture picture is the layers contract `lint-imports` enforces, app for app."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _readme_layers() -> list[set[str]]:
    """The numbered rows of the picture: each number starts a layer, unnumbered rows join it."""
    text = (ROOT / "README.md").read_text()
    section = text.split("## Architecture", 1)[1].split("\n## ", 1)[0]
    picture = section.split("```", 2)[1]
    layers: list[set[str]] = []
    for line in picture.splitlines():
        row = re.match(r"^\s*(\d+)?\s+(\w+)/\s", line + " ")
        if row is None or not row.group(2).startswith(("hub_", "commhub")):
            continue
        if row.group(1):
            layers.append(set())
        layers[-1].add(row.group(2))
    return layers


def _contract_layers() -> list[set[str]]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    (contract,) = [c for c in config["contracts"] if c["type"] == "layers"]
    return [{name.strip() for name in layer.split("|")} for layer in contract["layers"]]


def test_the_architecture_picture_is_the_layers_contract() -> None:
    assert _readme_layers() == _contract_layers()


def test_every_app_has_its_paragraph_in_the_architecture_section() -> None:
    section = (ROOT / "README.md").read_text().split("## Architecture", 1)[1].split("\n## ", 1)[0]
    apps = set().union(*_contract_layers())
    described = set(re.findall(r"^- \*\*`(\w+)/`\*\*", section, flags=re.MULTILINE))
    assert apps <= described, f"no paragraph for {sorted(apps - described)}"
