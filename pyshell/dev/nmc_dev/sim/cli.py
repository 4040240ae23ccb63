"""`nmc sim notifynl|profielservice|ldv`: run one simulator in the foreground."""

import argparse
import json
import os
import uuid
from pathlib import Path

from nmc.errors import NmcError
from nmc_dev.sim.server import serve_forever


def add_arguments(name: str, parser: argparse.ArgumentParser) -> None:
    parser.set_defaults(sim=name)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="default: a free port")
    if name == "notifynl":
        parser.add_argument(
            "--api-key",
            action="append",
            dest="api_keys",
            help="an API key it accepts, of the service whose id it holds (repeatable)",
        )
        parser.add_argument(
            "--keys-file",
            type=Path,
            help="the NMC's NotifyNL keys file (Notify service -> API key): every key in it is "
            "accepted (default NMC_NOTIFYNL_KEYS_FILE; without keys: NMC_NOTIFYNL_API_KEY)",
        )
        parser.add_argument(
            "--template",
            action="append",
            dest="templates",
            metavar="SERVICE=TEMPLATE_ID",
            help="a template the service owns (repeatable; SERVICE: a Notify service of the "
            "keys file or a NotifyNL service id); with none, any template is accepted",
        )
        parser.add_argument("--callback-url", help="where delivery receipts go")
        parser.add_argument(
            "--callback-token", help="bearer token of the callbacks (NMC_NOTIFYNL_CALLBACK_TOKEN)"
        )
        parser.add_argument("--retention", type=float, default=7 * 86400.0, help="seconds")
        parser.add_argument(
            "--retry-gap", type=float, default=300.0, help="seconds between callback retries"
        )
        parser.add_argument(
            "--delivery-delay", type=float, default=0.05, help="seconds per status step"
        )
        parser.add_argument("--seed", type=int, help="seed of the fault dice")
    elif name == "profielservice":
        parser.add_argument("--parties", type=Path, help="JSON file with the parties to serve")


def serve(args: argparse.Namespace) -> None:
    app = _app(args)

    def announce(url: str) -> None:
        print(f"nmc sim {args.sim}: {url}", flush=True)

    serve_forever(app, args.port, args.host, on_ready=announce)


def _app(args: argparse.Namespace):
    if args.sim == "notifynl":
        from nmc_dev.sim.notifynl import NotifySim, SimConfig

        keys, templates = _services(args)
        config = SimConfig(
            api_keys=keys,
            templates=templates,
            callback_url=args.callback_url,
            callback_token=args.callback_token or os.environ.get("NMC_NOTIFYNL_CALLBACK_TOKEN"),
            retention_s=args.retention,
            retry_gap_s=args.retry_gap,
            delivery_delay_s=args.delivery_delay,
        )
        return NotifySim(config, seed=args.seed).app
    if args.sim == "profielservice":
        from nmc_dev.sim.profielservice import ProfielSim

        return (ProfielSim.from_file(args.parties) if args.parties else ProfielSim()).app
    from nmc_dev.sim.ldv import LdvSim

    return LdvSim().app


def _services(args: argparse.Namespace) -> tuple[list[str], dict[str, list[str]]]:
    """The API keys the NotifyNL simulator accepts and the templates each service owns."""
    from nmc.adapters.notifynl import read_notify_keys

    keys = list(args.api_keys or [])
    ids_by_name: dict[str, str] = {}
    keys_file = args.keys_file or os.environ.get("NMC_NOTIFYNL_KEYS_FILE")
    if keys_file:
        document = json.loads(Path(keys_file).read_text(encoding="utf-8"))
        parsed = read_notify_keys(Path(keys_file))
        for name in parsed.services:
            ids_by_name[name] = parsed.for_service(name).service_id
            keys.append(document[name])
    if not keys and os.environ.get("NMC_NOTIFYNL_API_KEY"):
        keys.append(os.environ["NMC_NOTIFYNL_API_KEY"])
    if not keys:
        raise NmcError("give --api-key or --keys-file, or set NMC_NOTIFYNL_KEYS_FILE")
    templates: dict[str, list[str]] = {}
    for item in args.templates or []:
        service, sep, template = item.partition("=")
        service_id = ids_by_name.get(service, service)
        try:
            uuid.UUID(service_id)
            uuid.UUID(template)
        except ValueError:
            raise NmcError(
                f"--template {item!r}: give SERVICE=TEMPLATE_ID, SERVICE a Notify service of "
                "the keys file or a service id"
            ) from None
        if not sep:
            raise NmcError(f"--template {item!r}: give SERVICE=TEMPLATE_ID")
        templates.setdefault(service_id, []).append(template)
    return keys, templates
