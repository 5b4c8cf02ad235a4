from django.apps import AppConfig


class BrokersConfig(AppConfig):
    """Event queues on RabbitMQ, NATS and Kafka (docs/events.md): EVENT task sinks
    published through an outbox, event-handler consumers in the cluster, KAFKA_PUBLISH
    and the Kafka workflow status listener."""

    name = "apps.brokers"
    label = "brokers"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        import sys

        from apps.brokers import outbox, sinks, status_listener
        from apps.brokers import kafka_publish  # noqa: F401 - registers KAFKA_PUBLISH
        from apps.engine import notify, sweeper
        from apps.engine.task_types.event import QueueType, register_queue_type

        for prefix in sinks.TYPES:
            register_queue_type(QueueType(prefix, sinks.check(prefix), sinks.check(prefix, require_enabled=False),
                                            outbox.write_event))
        sweeper.add_tick_hook(outbox.kick)
        from apps.brokers.metrics import OutboxCollector
        from apps.engine.metrics import registry

        registry.register(OutboxCollector())
        notify.add_transition_recorder(status_listener.record)
        if sys.argv[1:2] == ["qcluster"]:
            from django_q.signals import post_spawn

            from apps.brokers.consumer import start_consumer_thread

            post_spawn.connect(start_consumer_thread, dispatch_uid="conductor-broker-consumer")
