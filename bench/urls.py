from __future__ import annotations

from django.urls import include, path

from bench import views

urlpatterns = [
    path("bench/insert", views.insert_select),
    path("bench/select", views.select_one),
    path("", include("commhub.urls")),
]
