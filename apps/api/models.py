"""API access keys: how an application (an SDK worker, a deployment script) signs in.

An ``AccessKey`` belongs to one application (``name``) with one ``role``; the SDKs trade
its ``key_id`` and secret at ``POST /api/token`` for a JWT (Orkes Conductor's scheme). The
secret is shown once when the key is created and only its SHA-256 is stored (the secret is
256 random bits, so a slow password hash would add nothing but latency to each exchange). A revoked key (``active`` false) can no longer get tokens, and tokens it
got are refused at their next use.
"""
from __future__ import annotations

import hashlib
import hmac
import secrets

from django.db import models

ROLE_READ_ONLY, ROLE_WORKER, ROLE_OPERATOR, ROLE_ADMIN = "read_only", "worker", "operator", "admin"
# Each role may do everything the roles before it may.
ROLES = (ROLE_READ_ONLY, ROLE_WORKER, ROLE_OPERATOR, ROLE_ADMIN)
ROLE_CHOICES = [
    (ROLE_READ_ONLY, "read-only: every GET except polling"),
    (ROLE_WORKER, "worker: also poll and update tasks"),
    (ROLE_OPERATOR, "operator: also start, pause, resume, terminate, retry... workflows"),
    (ROLE_ADMIN, "admin: also register and delete definitions and event handlers"),
]


class AccessKey(models.Model):
    """One key of one application: ``key_id`` (public), the secret's hash, the role,
    when it was created and last used (exchanged for a token)."""

    key_id = models.CharField(max_length=64, primary_key=True)
    name = models.CharField("application", max_length=150, db_index=True)
    role = models.CharField(max_length=16, choices=ROLE_CHOICES, default=ROLE_WORKER)
    secret_hash = models.CharField(max_length=256, editable=False)
    active = models.BooleanField(default=True, help_text="Unset to revoke the key: its tokens stop working.")
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True, editable=False)

    class Meta:
        ordering = ["name", "created_at"]
        verbose_name = "API access key"

    def __str__(self) -> str:
        return f"{self.name} ({self.role}, {self.key_id})"

    @classmethod
    def create(cls, *, name: str, role: str = ROLE_WORKER) -> tuple["AccessKey", str]:
        """A new active key; returns ``(key, secret)``: the secret is not stored and
        cannot be shown again. ValueError for an unknown role."""
        if role not in ROLES:
            raise ValueError(f"role must be one of {', '.join(ROLES)}")
        key = cls(key_id=secrets.token_hex(12), name=name, role=role)
        secret = key.set_new_secret()
        key.save()
        return key, secret

    def set_new_secret(self) -> str:
        """Give the key a fresh random secret (stored hashed); return it."""
        secret = secrets.token_urlsafe(32)
        self.secret_hash = _digest(secret)
        return secret

    def check_secret(self, secret: str) -> bool:
        """Whether ``secret`` is this key's secret (constant-time comparison)."""
        return bool(self.secret_hash) and hmac.compare_digest(self.secret_hash, _digest(secret))


def _digest(secret: str) -> str:
    return "sha256$" + hashlib.sha256(secret.encode("utf-8", "surrogatepass")).hexdigest()
