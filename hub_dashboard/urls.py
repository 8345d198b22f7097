from __future__ import annotations

from django.contrib.auth import views as auth
from django.urls import path
from django.views.decorators.gzip import gzip_page

from hub_dashboard import approvals, channels, limits, nodes, schedules, tokens, views, webhooks
from hub_dashboard import search as search_views
from hub_dashboard.forms import LoginForm

app_name = "dashboard"

# Pages and live fragments are compressed (a fleet region of 50 agents is ~32 KB of HTML, ~4 KB
# gzipped). BREACH needs a secret repeated in a compressed body beside text an attacker chooses:
# the only secret here is the CSRF token, which Django masks afresh in every response, and Django's
# GZipMiddleware pads each body with random bytes besides. Streams (SSE, /mcp) are not wrapped.
urlpatterns = [
    path("", views.home, name="home"),
    path("favicon.ico", views.favicon, name="favicon"),
    path("login/", gzip_page(auth.LoginView.as_view(authentication_form=LoginForm)), name="login"),
    path("logout/", auth.LogoutView.as_view(), name="logout"),
    path("fleet/", gzip_page(views.fleet_page), name="fleet"),
    path("nodes/", gzip_page(nodes.nodes_page), name="nodes"),
    path("nodes/<str:node_id>/command/", nodes.node_command_action, name="node_command"),
    path("limits/", gzip_page(limits.limits_page), name="limits"),
    path("limits/caps/", limits.cap_set_action, name="cap_set"),
    path("limits/caps/<str:cap_id>/delete/", limits.cap_delete_action, name="cap_delete"),
    path("limits/budgets/", limits.budget_set_action, name="budget_set"),
    path("limits/budgets/<str:budget_id>/delete/", limits.budget_delete_action, name="budget_delete"),
    path("tasks/", gzip_page(views.tasks_page), name="tasks"),
    path("tasks/<str:task_id>/", gzip_page(views.task_detail), name="task"),
    path("tasks/<str:task_id>/<str:action>/", views.task_action, name="task_action"),
    path("dispatch/", gzip_page(views.dispatch_page), name="dispatch"),
    path("broadcast/", views.broadcast_action, name="broadcast"),
    path("completions/", gzip_page(views.completions_page), name="completions"),
    path("questions/", gzip_page(views.questions_page), name="questions"),
    path("questions/<str:question_id>/answer/", views.question_answer_action, name="question_answer"),
    path("approvals/", gzip_page(approvals.approvals_page), name="approvals"),
    path("approvals/rules/new/", gzip_page(approvals.approval_rule_page), name="approval_rule_new"),
    path("approvals/rules/<int:rule_id>/", gzip_page(approvals.approval_rule_page), name="approval_rule"),
    path("approvals/rules/<int:rule_id>/delete/", approvals.approval_rule_delete_action, name="approval_rule_delete"),
    path("approvals/<str:approval_id>/decide/", approvals.approval_decide_action, name="approval_decide"),
    path("schedules/", gzip_page(schedules.schedules_page), name="schedules"),
    path("schedules/<str:schedule_id>/<str:action>/", schedules.schedule_action, name="schedule_action"),
    path("channels/", gzip_page(channels.channels_page), name="channels"),
    path("channels/<str:channel_id>/", gzip_page(channels.channel_page), name="channel"),
    path("channels/<str:channel_id>/leave/", channels.channel_leave_action, name="channel_leave"),
    path("audit/", gzip_page(views.audit_page), name="audit"),
    path("webhooks/", gzip_page(webhooks.webhooks_page), name="webhooks"),
    path("webhooks/<int:subscription_id>/", gzip_page(webhooks.webhook_page), name="webhook"),
    path("webhooks/<int:subscription_id>/<str:action>/", webhooks.webhook_action, name="webhook_action"),
    # Not compressed: the page that shows a new token's raw value echoes the form beside it.
    path("tokens/", tokens.tokens_page, name="tokens"),
    path("tokens/policy/", gzip_page(tokens.policy_page), name="token_policy"),
    path("tokens/<int:token_id>/revoke/", tokens.token_revoke_action, name="token_revoke"),
    path("search/", gzip_page(search_views.search_page), name="search"),
]
