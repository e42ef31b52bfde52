"""The leaves (and the mappings) of a nested JSON value, for checks over every value a plan or
report holds."""


def walk(value):
    if isinstance(value, dict):
        for v in value.values():
            yield from walk(v)
    elif isinstance(value, list):
        for v in value:
            yield from walk(v)
    else:
        yield value


def walk_dicts(value):
    """Every mapping inside a nested JSON value, the value itself first when it is one."""
    if isinstance(value, dict):
        yield value
        for v in value.values():
            yield from walk_dicts(v)
    elif isinstance(value, list):
        for v in value:
            yield from walk_dicts(v)
