"""`verify engines`: adapters, installed or not, version, capabilities."""

from __future__ import annotations

from verify.commands import EXIT_OK


def add_parser(sub) -> None:
    sub.add_parser("engines", help="list engine adapters, whether installed, capabilities")


def run(args) -> int:
    from verify.engines.registry import list_adapters
    from verify.engines.registry_entry import describe_adapter

    for entry in list_adapters():
        print(describe_adapter(entry))
    return EXIT_OK
