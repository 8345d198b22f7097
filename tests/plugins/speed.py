"""Two costs in-process tests (Django's test client) need not pay; tests against live hubs keep both.

- Password hashing: the production hasher (PBKDF2, a million rounds) costs a noticeable fraction of a
  second per user a test signs up, so in-process tests hash cheaply, as Django's testing docs advise.
  A live hub checks the passwords the test process stored with its production settings.
- WhiteNoise's table of static files: every test client builds the middleware chain afresh, and
  WhiteNoise then indexes every collected file (tens of milliseconds, paid by each of about a thousand
  tests). In-process tests serve no static file, so WhiteNoise looks files up on demand instead
  (its autorefresh mode); live hubs serve them from the table, as production does.

And one for measuring them: pytest 9 reads its clock in _pytest.timing, which freezegun's ignore list
does not name, so `--durations` reported the frozen 2026 instant (1.7e9 s) for every test on a frozen
clock. freezegun answers that module with the real clock.
"""

from __future__ import annotations

import freezegun
import pytest

freezegun.configure(extend_ignore_list=["_pytest.timing"])

FAST_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True)
def in_process_shortcuts(request: pytest.FixtureRequest) -> None:
    if "hub_server" in request.fixturenames:
        return
    settings = request.getfixturevalue("settings")
    settings.PASSWORD_HASHERS = FAST_HASHERS
    settings.WHITENOISE_AUTOREFRESH = True
