"""`verify engines [--pip REQ] [--python PATH]`: adapters, installed or not, the distribution
and version that provides each here, capabilities; with ``--pip``/``--python``, as a private
environment (``verify.engines.environments``) provides them."""

from __future__ import annotations

from verify.commands import EXIT_OK


def add_parser(sub) -> None:
    p = sub.add_parser("engines", help="list engine adapters: installed or not, distribution and version, "
                                       "capabilities")
    p.add_argument("--pip", metavar="REQ[,REQ]",
                   help="list them as the private environment of SPEC?pip=REQ provides them (built once, cached)")
    p.add_argument("--python", metavar="PATH", help="list them as the environment of this interpreter provides them")


def run(args) -> int:
    from verify.engines.registry import list_adapters
    from verify.engines.registry_entry import describe_adapter

    wanted = {k: v for k, v in (("pip", args.pip), ("python", args.python)) if v}
    if wanted:
        from verify.engines.environments import environment_for, environment_summary

        env = environment_for(wanted)
        env.activate()  # this process only lists: the adapters below are seen from inside it
        print(environment_summary(env))
    for entry in list_adapters():
        print(describe_adapter(entry))
    return EXIT_OK
