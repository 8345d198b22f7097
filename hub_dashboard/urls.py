from __future__ import annotations

from django.contrib.auth import views as auth
from django.urls import path

from hub_dashboard import views

app_name = "dashboard"

urlpatterns = [
    path("", views.home, name="home"),
    path("login/", auth.LoginView.as_view(), name="login"),
    path("logout/", auth.LogoutView.as_view(), name="logout"),
    path("fleet/", views.fleet_page, name="fleet"),
    path("tasks/", views.tasks_page, name="tasks"),
    path("tasks/<str:task_id>/", views.task_detail, name="task"),
    path("tasks/<str:task_id>/<str:action>/", views.task_action, name="task_action"),
    path("dispatch/", views.dispatch_page, name="dispatch"),
    path("broadcast/", views.broadcast_action, name="broadcast"),
    path("completions/", views.completions_page, name="completions"),
    path("audit/", views.audit_page, name="audit"),
]
