"""The observability plane: Prometheus, Grafana and their dashboards, and the GPU alerts."""
