"""Print a fenced block of README.md as a user would copy it: `readme_blocks.py LANG TEXT [PORT]`
prints the first ```LANG block holding TEXT, with the hub's default port replaced by PORT.
tests/e2e/agent_clis runs what it prints, so a README that drifts from the real CLIs fails there."""

from __future__ import annotations

import re
import sys
from pathlib import Path

language, text, *port = sys.argv[1:]
readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
blocks = [b for b in re.findall(rf"```{language}\n(.*?)```", readme, flags=re.DOTALL) if text in b]
if not blocks:
    sys.exit(f"README.md has no ```{language} block holding {text!r}")
block = blocks[0].replace("127.0.0.1:8000", f"127.0.0.1:{port[0]}") if port else blocks[0]
print(block, end="")
