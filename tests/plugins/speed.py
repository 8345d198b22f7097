"""Two costs in-process tests (Django's test client) need not pay; tests against live hubs keep both.

- Password hashing: the production hasher (PBKDF2, a million rounds) costs a noticeable fraction of a
  second per user a test signs up, so in-process tests hash cheaply, as Django's testing docs advise.
  A live hub checks the passwords the test process stored with its production settings.
- WhiteNoise's table of static files: every test client builds the middleware chain afresh, and
  WhiteNoise then indexes every collected file (tens of milliseconds, paid by each of about a thousand
  tests). In-process tests serve no static file, so WhiteNoise looks files up on demand instead
  (its autorefresh mode); live hubs serve them from the table, as production does.

And one that transactional tests (`django_db(transaction=True)`, live hubs) pay on PostgreSQL:
Django empties the database after each with one TRUNCATE of every table, which gives each table new
files (about a second a test on CI's machine kind), then recreates the content types and permissions
it has just removed (about 0.4 s more). Here it DELETEs the rows instead, with triggers and foreign-key
checks off for that one transaction (session_replication_role; the test database's user is a
superuser), and keeps the content types and permissions that migrate made, which no test changes
(post_migrate still fills in any missing): about 0.1 s. A flush that resets sequences is Django's own.

And one for measuring them: pytest 9 reads its clock in _pytest.timing, which freezegun's ignore list
does not name, so `--durations` reported the frozen 2026 instant (1.7e9 s) for every test on a frozen
clock. freezegun answers that module with the real clock.
"""

from __future__ import annotations

from typing import Any

import freezegun
import pytest
from django.db.backends.postgresql.operations import DatabaseOperations

freezegun.configure(extend_ignore_list=["_pytest.timing"])

_KEPT = frozenset({"django_content_type", "auth_permission"})
_truncated = DatabaseOperations.sql_flush


def _emptied(self: DatabaseOperations, style: Any, tables: Any, *, reset_sequences: bool = False, **kwargs: Any) -> Any:
    if reset_sequences:
        return _truncated(self, style, tables, reset_sequences=reset_sequences, **kwargs)
    # Run by Django's flush in one transaction (execute_sql_flush): SET LOCAL ends with it.
    deletes = [f"DELETE FROM {self.quote_name(table)}" for table in tables if table not in _KEPT]
    return ["SET LOCAL session_replication_role = replica", *deletes]


DatabaseOperations.sql_flush = _emptied

FAST_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True)
def in_process_shortcuts(request: pytest.FixtureRequest) -> None:
    if "hub_server" in request.fixturenames:
        return
    settings = request.getfixturevalue("settings")
    settings.PASSWORD_HASHERS = FAST_HASHERS
    settings.WHITENOISE_AUTOREFRESH = True
