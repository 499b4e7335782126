"""Placeholder until the metrics engine lands (issue 3): registers nothing."""


def register(subparsers) -> None:
    return None
