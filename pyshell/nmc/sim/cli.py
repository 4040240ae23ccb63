"""`nmc sim notifynl|profielservice|ldv`: run one simulator in the foreground."""

import argparse
import os
from pathlib import Path

from nmc.errors import NmcError
from nmc.sim.server import serve_forever


def add_arguments(name: str, parser: argparse.ArgumentParser) -> None:
    parser.set_defaults(sim=name)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="default: a free port")
    if name == "notifynl":
        parser.add_argument(
            "--api-key",
            action="append",
            dest="api_keys",
            help="an API key it accepts (repeatable; default NMC_NOTIFYNL_API_KEY)",
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
        from nmc.sim.notifynl import NotifySim, SimConfig

        keys = args.api_keys or [k for k in [os.environ.get("NMC_NOTIFYNL_API_KEY")] if k]
        if not keys:
            raise NmcError("give --api-key or set NMC_NOTIFYNL_API_KEY")
        config = SimConfig(
            api_keys=keys,
            callback_url=args.callback_url,
            callback_token=args.callback_token or os.environ.get("NMC_NOTIFYNL_CALLBACK_TOKEN"),
            retention_s=args.retention,
            retry_gap_s=args.retry_gap,
            delivery_delay_s=args.delivery_delay,
        )
        return NotifySim(config, seed=args.seed).app
    if args.sim == "profielservice":
        from nmc.sim.profielservice import ProfielSim

        return (ProfielSim.from_file(args.parties) if args.parties else ProfielSim()).app
    from nmc.sim.ldv import LdvSim

    return LdvSim().app
