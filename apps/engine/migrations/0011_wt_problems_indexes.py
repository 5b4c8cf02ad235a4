# Indexes of the operator UI's problem views (issue #31, branch wt/problems): executions
# of one status newest first and their counts per status, a definition's last runs, and
# the human-task inbox.

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('engine', '0010_external_payload'),
    ]

    operations = [
        migrations.AddIndex(
            model_name='workflowexecution',
            index=models.Index(fields=['status', 'create_time'], name='wf_status_create'),
        ),
        migrations.AddIndex(
            model_name='workflowexecution',
            index=models.Index(fields=['workflow_name', 'create_time'], name='wf_name_create'),
        ),
        migrations.AddIndex(
            model_name='taskexecution',
            index=models.Index(fields=['task_type', 'status', 'scheduled_time'], name='task_inbox'),
        ),
    ]
