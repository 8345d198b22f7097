from __future__ import annotations

import sys

from commhub_agent.cli import main

sys.exit(main())
