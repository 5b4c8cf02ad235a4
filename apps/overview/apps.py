from django.apps import AppConfig


class OverviewConfig(AppConfig):
    """The Overview page's per-interval counts (``apps.overview.rollup``), written in the
    engine's transaction through its transition recorders, and the page that reads them."""

    name = "apps.overview"
    label = "overview"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from apps.engine import metrics, notify, sweeper
        from apps.overview import gauges, rollup

        notify.add_transition_recorder(rollup.record)
        sweeper.add_tick_hook(rollup.fold_and_prune_tick)
        metrics.registry.register(gauges.OverviewGauges())
