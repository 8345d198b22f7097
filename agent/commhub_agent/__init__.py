"""commhub-agent: the agent-side companion of CommHub (channel, runner, Stop hook)."""

from __future__ import annotations

__version__ = "0.1.0"
