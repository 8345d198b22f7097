"""The browser harness itself: a real Chromium, logged in through a session cookie, on a live hub."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_logged_in_operator_sees_the_admin_index(hub_server, page_for, screenshot_dir, django_user_model):
    hub = hub_server()
    operator = django_user_model.objects.create_superuser("root", password="unused-in-tests")
    page = page_for(hub, operator)
    static = []
    page.on("response", lambda response: static.append(response) if "/static/" in response.url else None)

    page.goto("/admin/")

    assert page.url == f"{hub.url}/admin/"  # not bounced to the login form: the session cookie worked
    assert page.get_by_role("heading", name="Site administration").is_visible()
    assert static, "the admin page loaded no stylesheets"
    assert [r.url for r in static if r.status != 200] == []
    shot = screenshot_dir / "admin.png"
    shot.unlink(missing_ok=True)
    page.screenshot(path=shot, full_page=True)
    assert shot.stat().st_size > 0


@pytest.mark.parametrize("path", ["/api/v1/docs", "/admin/hub_agents/apitoken/add/", "/fleet/"])
def test_pages_work_under_the_content_security_policy(hub_server, page_for, django_user_model, path):
    hub = hub_server()
    operator = django_user_model.objects.create_superuser("root", password="unused-in-tests")
    page = page_for(hub, operator)
    blocked = []
    page.on("console", lambda message: blocked.append(message.text) if "Content Security Policy" in message.text else 0)
    page.on("pageerror", lambda error: blocked.append(str(error)))

    response = page.goto(path)
    page.wait_for_load_state("networkidle")

    assert response is not None
    assert "script-src 'self'" in response.headers["content-security-policy"]
    if path == "/api/v1/docs":
        page.locator(".opblock").first.wait_for(timeout=10_000)  # Swagger UI ran and drew the operations
    assert blocked == []
