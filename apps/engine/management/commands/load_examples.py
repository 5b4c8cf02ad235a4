"""``manage.py load_examples``: register the example definitions shipped in
``examples/definitions/*.json`` through the metadata services.

Each file is one JSON object ``{"taskDefs": [TaskDef, ...], "workflowDefs": [WorkflowDef, ...]}``
(both keys optional), in Conductor's camelCase form. Definitions that already exist
(TaskDef by name, WorkflowDef by name and version) are left alone, so running the
command again changes nothing and keeps any edits made since; ``--overwrite`` replaces
them with the files' versions.
"""
from __future__ import annotations

import json
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from apps.core.errors import ConductorError
from apps.metadata import services


def _workflow_def_exists(workflow_def: dict) -> bool:
    try:
        version = int(workflow_def.get("version") or 1)
    except (TypeError, ValueError):
        return False  # invalid: let validation report it
    return services.workflow_def_row(name=workflow_def.get("name"), version=version) is not None


class Command(BaseCommand):
    help = "Register the example TaskDefs and WorkflowDefs from examples/definitions/*.json (idempotent)."

    def add_arguments(self, parser):
        parser.add_argument("--dir", default=str(Path(settings.BASE_DIR) / "examples" / "definitions"),
                            help="folder of definition files (default: examples/definitions)")
        parser.add_argument("--overwrite", action="store_true",
                            help="replace definitions that already exist")

    def handle(self, *args, dir: str, overwrite: bool, **options):
        files = sorted(Path(dir).glob("*.json"))
        if not files:
            raise CommandError(f"no *.json definition files in {dir}")
        task_defs: list[dict] = []
        workflow_defs: list[dict] = []
        for path in files:
            try:
                content = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError) as exc:
                raise CommandError(f"{path}: {exc}") from exc
            if not isinstance(content, dict) or set(content) - {"taskDefs", "workflowDefs"}:
                raise CommandError(f'{path}: expected an object with "taskDefs" and/or "workflowDefs" lists')
            task_defs += content.get("taskDefs") or []
            workflow_defs += content.get("workflowDefs") or []

        if not overwrite:
            present = services.task_defs_by_name({d.get("name") for d in task_defs})
            task_defs = [d for d in task_defs if d.get("name") not in present]
            workflow_defs = [d for d in workflow_defs if not _workflow_def_exists(d)]
        try:
            with transaction.atomic():
                if task_defs:
                    services.task_defs_register(task_defs=task_defs)
                if workflow_defs:
                    services.workflow_defs_update(workflow_defs=workflow_defs)
        except ConductorError as exc:
            details = "".join(f"\n  {e.get('path')}: {e.get('message')}" for e in exc.validation_errors or [])
            raise CommandError(f"{exc.message}{details}") from exc
        self.stdout.write(
            f"examples: {len(task_defs)} task definition(s) and {len(workflow_defs)} workflow definition(s) "
            f"registered from {len(files)} file(s)" + ("" if overwrite else "; existing ones left as they are")
        )
