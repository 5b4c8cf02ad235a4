"""Key rotation of the secrets store (a new key put first; ``manage.py rotate_secrets``
re-encrypts every row with it; then the old key can go), and what an event handler's
action can read of the process."""
from __future__ import annotations

import pytest
from cryptography.fernet import Fernet
from django.core.management import call_command

from apps.metadata import secrets


@pytest.mark.django_db
def test_rotation_moves_every_secret_to_the_new_key(settings):
    old, new = Fernet.generate_key().decode(), Fernet.generate_key().decode()
    settings.SECRETS_KEYS = [old]
    secrets.secret_put(name="rot_a", value="alpha")
    secrets.secret_put(name="rot_b", value="beta")

    settings.SECRETS_KEYS = [new, old]  # the new key first: both still read
    assert secrets.secret_get("rot_a") == "alpha"
    call_command("rotate_secrets")

    settings.SECRETS_KEYS = [new]  # the old key dropped
    assert (secrets.secret_get("rot_a"), secrets.secret_get("rot_b")) == ("alpha", "beta")
    settings.SECRETS_KEYS = [old]
    with pytest.raises(RuntimeError, match="CONDUCTOR_SECRETS_KEYS"):
        secrets.secret_get("rot_a")


@pytest.mark.django_db
def test_an_event_handler_action_reads_no_process_variable(monkeypatch):
    """An event handler's action input (``PayloadDocument``): bare names are payload paths,
    ``${workflow.env.X}`` reads the environment store and ``CONDUCTOR_ENV_X`` only."""
    from apps.engine import params
    from apps.engine.event_handlers import PayloadDocument

    monkeypatch.setenv("SECRET_PROBE_EVT", "hunter2")
    monkeypatch.setenv("CONDUCTOR_ENV_EVT_OK", "fine")
    doc = PayloadDocument({"order": {"id": 7}})
    assert params.resolve_value({"a": "${SECRET_PROBE_EVT}", "b": "${order.id}", "c": "${workflow.env.EVT_OK}",
                                 "d": "${workflow.env.SECRET_PROBE_EVT}", "e": "${workflow.env.SECRET_KEY}"},
                                doc) == {"a": None, "b": 7, "c": "fine", "d": None, "e": None}


@pytest.mark.django_db
def test_without_a_key_setting_one_is_generated_on_first_use_private_to_the_machine(settings, tmp_path,
                                                                                    monkeypatch):
    import conductor_web.settings as project

    monkeypatch.setattr(project, "VAR_DIR", tmp_path)
    settings.SECRETS_KEYS = []
    assert not (tmp_path / "secrets_key").exists()
    secrets.secret_put(name="gen_a", value="alpha")
    key_file = tmp_path / "secrets_key"
    assert key_file.stat().st_mode & 0o777 == 0o600
    settings.SECRETS_KEYS = [key_file.read_text().strip()]  # the generated key is the one in use
    assert secrets.secret_get("gen_a") == "alpha"
