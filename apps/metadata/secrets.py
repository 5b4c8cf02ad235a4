"""The secrets store (``/api/secrets``) and ``${workflow.secrets.NAME}``.

* Values are encrypted at rest with Fernet (``cryptography``): ``settings.SECRETS_KEYS``
  (``CONDUCTOR_SECRETS_KEYS``, comma-separated; the first encrypts, all decrypt, a
  ``MultiFernet``), or a key generated once into ``VAR_DIR/secrets_key`` when unset.
  ``secret_rotate`` re-encrypts every row with the first key.
* ``${workflow.secrets.NAME}`` (optionally ``${workflow.secrets.NAME.json.path}`` into a
  JSON value) is left literal when a task is scheduled, so stored executions keep the
  expression (Conductor's ParametersUtils defers it the same way). ``resolve`` puts the
  values in only where they are used: the inputData a worker receives when it polls
  (Conductor's ExecutionService.poll, ``substituteSecrets``) and the request an HTTP task
  sends. A name with no secret raises ``MissingSecret`` naming it.
* ``mask`` replaces each value of the secrets a task was given with ``***`` in what the
  task sends back (a worker's output, reason and logs; an HTTP response), before it is
  stored: nothing stored, hence nothing shown (API, UI, listeners, audit log), holds it.
"""
from __future__ import annotations

import json
import re
from functools import lru_cache
from typing import Any

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from django.conf import settings
from django.db import transaction

from apps.core.clock import now_ms
from apps.engine.params import evaluate_path
from apps.metadata.models import Secret

MASK = "***"
# Conductor's SecretsService.ALLOWED_SECRET_NAME_PATTERN (SecretController.KEY_PATTERN)
NAME_PATTERN = re.compile(r"[a-zA-Z0-9_-]+\Z")
MARKER = "${workflow.secrets."
_REFERENCE = re.compile(r"\$\{workflow\.secrets\.([a-zA-Z0-9_-]+)((?:\.[^}]*)?)\}")
MAX_VALUE_CHARS = 65535


class SecretUnreadable(RuntimeError):
    """A stored secret that no key of ``CONDUCTOR_SECRETS_KEYS`` decrypts (a key dropped
    before ``manage.py rotate_secrets`` ran); the message names the setting, never a value."""


class MissingSecret(Exception):
    """A ``${workflow.secrets.NAME}`` names no stored secret; ``name`` is that name."""

    def __init__(self, name: str):
        super().__init__(f"Secret '{name}' referenced by the task does not exist")
        self.name = name


@lru_cache(maxsize=4)
def _fernet_for(keys: tuple[str, ...]) -> MultiFernet:
    return MultiFernet([Fernet(k.encode()) for k in keys])


def fernet() -> MultiFernet:
    """The MultiFernet of ``settings.SECRETS_KEYS`` or, when that is empty (the embedded
    setup), of one random key generated once into ``VAR_DIR/secrets_key`` (mode 0600,
    shared by the server and cluster of one machine). Raises ValueError for a key that is
    not 32 url-safe base64-encoded bytes."""
    keys = tuple(settings.SECRETS_KEYS)
    if not keys:
        from conductor_web.settings import generated_once

        keys = (generated_once("secrets_key", lambda: Fernet.generate_key().decode()),)
    return _fernet_for(keys)


def valid_name(name: str) -> bool:
    """Whether ``name`` is a secret name Conductor accepts (``[a-zA-Z0-9_-]+``, at most 255)."""
    return bool(name) and len(name) <= 255 and NAME_PATTERN.match(name) is not None


def secret_put(*, name: str, value: str) -> None:
    """Create or replace the secret ``name`` (``PUT /api/secrets/{key}``), encrypted."""
    token = fernet().encrypt(value.encode()).decode()
    now = now_ms()
    # update_or_create: two first PUTs of one name at once do not end in an IntegrityError
    Secret.objects.update_or_create(name=name, defaults={"token": token, "update_time": now},
                                    create_defaults={"token": token, "create_time": now, "update_time": now})


def _decrypt(token: str) -> str:
    try:
        return fernet().decrypt(token.encode()).decode()
    except InvalidToken as exc:  # a key dropped from CONDUCTOR_SECRETS_KEYS too early
        raise SecretUnreadable("A stored secret cannot be decrypted with CONDUCTOR_SECRETS_KEYS") from exc


def secret_get(name: str) -> str | None:
    """The decrypted value of ``name``, or None when there is no such secret."""
    token = Secret.objects.filter(pk=name).values_list("token", flat=True).first()
    return None if token is None else _decrypt(token)


def secret_values(names, *, readable_only: bool = False) -> dict[str, str]:
    """``{name: value}`` of those of ``names`` that exist (one query). Raises
    SecretUnreadable for a value no key decrypts (``readable_only``: left out instead)."""
    names = set(names)
    if not names:
        return {}
    values = {}
    for name, token in Secret.objects.filter(pk__in=names).values_list("name", "token"):
        try:
            values[name] = _decrypt(token)
        except SecretUnreadable:
            if not readable_only:
                raise
    return values


def secret_delete(*, name: str) -> bool:
    """Remove the secret ``name``; whether there was one."""
    deleted, _ = Secret.objects.filter(pk=name).delete()
    return deleted > 0


def secret_exists(name: str) -> bool:
    """Whether a secret ``name`` is stored."""
    return Secret.objects.filter(pk=name).exists()


def secret_names() -> list[str]:
    """Every secret's name, sorted."""
    return list(Secret.objects.order_by("name").values_list("name", flat=True))


def secret_metadata() -> list[dict]:
    """``GET /api/secrets/v2``: ``[{"name", "createTime", "updateTime"}]`` (epoch ms; no
    part of any value: Conductor's CredentialMeta.partial is left out)."""
    return [{"name": n, "createTime": c, "updateTime": u}
            for n, c, u in Secret.objects.order_by("name").values_list("name", "create_time", "update_time")]


def secret_rotate() -> int:
    """Re-encrypt every secret with the first key of ``SECRETS_KEYS``; the number of rows."""
    f = fernet()
    count = 0
    with transaction.atomic():
        for name, token in Secret.objects.select_for_update().values_list("name", "token"):
            Secret.objects.filter(pk=name).update(token=f.rotate(token.encode()).decode())
            count += 1
    return count


# --- references -------------------------------------------------------------------------------

def references(value: Any) -> bool:
    """Whether a JSON value holds a ``${workflow.secrets.`` reference anywhere (cheap: a
    substring test per string; no database)."""
    if isinstance(value, str):
        return MARKER in value
    if isinstance(value, dict):
        return any(references(v) for v in value.values())
    if isinstance(value, list):
        return any(references(v) for v in value)
    return False


def referenced_names(value: Any, found: set[str] | None = None) -> set[str]:
    """The secret names referenced in a JSON value."""
    found = set() if found is None else found
    if isinstance(value, str):
        if MARKER in value:
            found.update(m.group(1) for m in _REFERENCE.finditer(value))
    elif isinstance(value, dict):
        for v in value.values():
            referenced_names(v, found)
    elif isinstance(value, list):
        for v in value:
            referenced_names(v, found)
    return found


class _Substitution:
    """One resolution: the stored values, and the texts put in (whole values and what a
    JSON path picked out of them), which are what the result is masked with. A reference
    to a name outside ``allowed`` stays as written."""

    def __init__(self, values: dict[str, str], missing_ok: bool, allowed: set[str]):
        self.values = values
        self.missing_ok = missing_ok
        self.allowed = allowed
        self.used: dict[str, str] = {}

    def lookup(self, name: str, path: str) -> Any:
        if name not in self.values:
            if self.missing_ok:
                return None
            raise MissingSecret(name)
        value = self.values[name]
        self.used[name] = value
        if not path:
            return value
        try:
            picked = evaluate_path(path[1:], json.loads(value))
        except ValueError:
            return None
        if isinstance(picked, str) and picked:
            # a picked number or boolean is put in but not masked: "3" or "true" would
            # turn every such text of the result into ***
            self.used[name + path] = picked
        return picked

    def text(self, m: re.Match) -> str:
        if m.group(1) not in self.allowed:
            return m.group(0)
        found = self.lookup(m.group(1), m.group(2))
        return "" if found is None else found if isinstance(found, str) else json.dumps(found)

    def apply(self, value: Any) -> Any:
        if isinstance(value, str):
            if MARKER not in value:
                return value
            whole = _REFERENCE.fullmatch(value)
            if whole:
                if whole.group(1) not in self.allowed:
                    return value
                return self.lookup(whole.group(1), whole.group(2))
            return _REFERENCE.sub(self.text, value)
        if isinstance(value, dict):
            return {k: self.apply(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.apply(v) for v in value]
        return value

    def apply_where(self, value: Any, template: Any) -> Any:
        """``apply`` on the strings of ``value`` whose place in ``template`` is a string
        writing a reference (not the ``$${`` escape), resolving there only the references
        that string writes itself: one planted by data in the same string (``uri:
        "${workflow.input.base}?k=${workflow.secrets.A}"`` with ``base`` holding
        ``${workflow.secrets.B}``) stays as written."""
        if isinstance(value, str):
            if not isinstance(template, str) or MARKER not in value:
                return value
            written = {m.group(0) for m in _REFERENCE.finditer(template)
                       if not (m.start() and template[m.start() - 1] == "$")}
            if not written:
                return value
            whole = _REFERENCE.fullmatch(value)
            if whole:
                return self.apply(value) if whole.group(0) in written else value
            return _REFERENCE.sub(lambda m: self.text(m) if m.group(0) in written else m.group(0), value)
        if isinstance(value, dict):
            return {k: self.apply_where(v, template.get(k) if isinstance(template, dict) else None)
                    for k, v in value.items()}
        if isinstance(value, list):
            return [self.apply_where(v, template[i] if isinstance(template, list) and i < len(template) else None)
                    for i, v in enumerate(value)]
        return value


def template_names(workflow_task: Any) -> set[str]:
    """The secret names a task's WorkflowTask (its definition's ``inputParameters``) writes:
    the only ones its inputData may be given. A ``${workflow.secrets.X}`` that reached the
    input from data (a workflow input, an upstream output, an HTTP response) names nothing
    the definition asked for and stays as written (Conductor resolves those too; here a
    caller without the admin role could read any secret by planting one); an escaped
    ``$${workflow.secrets.X}`` names nothing either."""
    if not isinstance(workflow_task, dict):
        return set()
    # ``$${workflow.secrets.X}`` is the escape of the literal text (a dynamic task made
    # from data, e.g. an agent's tool call, writes a model's ``${`` so): it names nothing
    return {name for name in referenced_names(workflow_task.get("inputParameters"))
            if _written(workflow_task.get("inputParameters"), name)}




def _written(value: Any, name: str) -> bool:
    """Whether ``value`` holds ``${workflow.secrets.<name>`` not preceded by ``$``."""
    if isinstance(value, str):
        return re.search(r"(?<!\$)\$\{workflow\.secrets\." + re.escape(name) + r"[.}]", value) is not None
    if isinstance(value, dict):
        return any(_written(v, name) for v in value.values())
    if isinstance(value, list):
        return any(_written(v, name) for v in value)
    return False


_ANY = object()


def resolve(value: Any, *, allowed: set[str], missing_ok: bool = False,
            template: Any = _ANY) -> tuple[Any, dict[str, str]]:
    """``(value with every ${workflow.secrets.NAME[.path]} of a name in ``allowed`` replaced,
    {reference: text put in})`` (``allowed``: ``template_names`` of the task's WorkflowTask;
    other references stay as written). A string that is one whole reference takes the
    secret's value (or what its JSON path selects); references inside text are replaced by
    their text. The second item maps each name (and ``name.path``) used to the text it
    gave: what to ``mask`` a result with. The input is not modified; a value without
    references is returned as it is, without a query. Raises MissingSecret for the first
    name with no stored secret, and SecretUnreadable when no key of
    ``CONDUCTOR_SECRETS_KEYS`` decrypts a stored value (``missing_ok``: either resolves to
    null instead: what masking needs, since such a value was never given). ``template``
    (the WorkflowTask's ``inputParameters``): only a string whose counterpart there (same
    keys and indexes) writes a reference itself is resolved, so data that reached another
    place of the input (a model's tool arguments beside a header the definition writes)
    is never given a secret, even one the task may use."""
    if not allowed or not references(value):
        return value, {}
    names = referenced_names(value) & allowed
    if not names:
        return value, {}
    substitution = _Substitution(secret_values(names, readable_only=missing_ok), missing_ok, allowed)
    if template is not _ANY:
        return substitution.apply_where(value, template), substitution.used
    return substitution.apply(value), substitution.used


def mask(value: Any, secrets: dict[str, str] | list[str]) -> Any:
    """``value`` with every occurrence of each secret value (longest first) replaced by
    ``***`` in its strings and keys; the input is not modified."""
    texts = sorted({s for s in (secrets.values() if isinstance(secrets, dict) else secrets)
                    if isinstance(s, str) and s}, key=len, reverse=True)
    if not texts:
        return value
    return _mask(value, texts)


def _mask(value: Any, texts: list[str]) -> Any:
    if isinstance(value, str):
        for t in texts:
            if t in value:
                value = value.replace(t, MASK)
        return value
    if isinstance(value, dict):
        return {_mask(k, texts): _mask(v, texts) for k, v in value.items()}
    if isinstance(value, list):
        return [_mask(v, texts) for v in value]
    return value


def mask_result(task_result: dict, given: dict[str, str]) -> dict:
    """A TaskResult with the values of the secrets its task was given (``given``) masked
    in what a worker or an HTTP call writes (outputData and reasonForIncompletion; logs are
    masked as they are stored): ids and status are left as sent."""
    masked = dict(task_result)
    for key in ("outputData", "reasonForIncompletion"):
        if key in masked:
            masked[key] = mask(masked[key], given)
    return masked


def values_for_task_input(input_data: Any, workflow_task: Any) -> dict[str, str]:
    """The secret texts a task with this (stored) inputData and WorkflowTask is given when
    it runs (``resolve``'s second item): what its output must be masked with. Empty,
    without a query, when it references none."""
    if not references(input_data):
        return {}
    template = workflow_task.get("inputParameters") if isinstance(workflow_task, dict) else None
    # as the task was given them: only where its definition writes a reference
    return resolve(input_data, allowed=template_names(workflow_task), missing_ok=True, template=template)[1]
