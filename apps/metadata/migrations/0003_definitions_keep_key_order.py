# definition columns keep the key order the user wrote (#32): json instead of jsonb on
# PostgreSQL (ALTER ... TYPE json USING definition::json; rows stored before keep their
# content, in jsonb's order); SQLite's column is text either way.

import apps.core.jsonfield
from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('metadata', '0002_event_handlers'),
    ]

    operations = [
        migrations.AlterField(
            model_name='eventhandler',
            name='definition',
            field=apps.core.jsonfield.KeyOrderJSONField(),
        ),
        migrations.AlterField(
            model_name='taskdef',
            name='definition',
            field=apps.core.jsonfield.KeyOrderJSONField(),
        ),
        migrations.AlterField(
            model_name='workflowdef',
            name='definition',
            field=apps.core.jsonfield.KeyOrderJSONField(),
        ),
    ]
