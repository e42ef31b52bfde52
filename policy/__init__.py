"""The CrossGuard policy pack: rules in `policy.rules`, the pack itself in `__main__.py`."""
