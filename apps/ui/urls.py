from django.urls import path

from apps.ui import views

urlpatterns = [
    path("", views.home, name="home"),
]
