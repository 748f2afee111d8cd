"""Entry point of ``benchwarmers`` and ``bench``: one program.

Server commands run here; every other command is a client of a running server (cli/client.py).
Exit codes: 0 done, 1 refused or failed, 2 bad usage, 3 no server at the URL.
"""

from __future__ import annotations

import argparse
import gc
import sys

from benchwarmers_mcp import __version__
from benchwarmers_mcp.cli import cmd_store, server_help
from benchwarmers_mcp.settings import BadSettings, Settings

SERVER_COMMANDS = ("serve", "gateway", "demo", "init", "mcp", "doctor", *cmd_store.COMMANDS)


def server_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="benchwarmers", description="Benchwarmers: a self-hosted panel gateway for LLMs.")
    p.add_argument("--version", "-v", action="version", version=f"benchwarmers {__version__}")
    sub = p.add_subparsers(dest="command")
    raw = argparse.RawDescriptionHelpFormatter
    serve = "run the server (the default): gateway, admin API, dashboard and MCP on one port"
    sub.add_parser("serve", help=serve, description=serve, epilog=server_help.epilog("serve"), formatter_class=raw)
    gateway = "only the gateway (client formats, /bench, MCP) on a port of its own: no dashboard or admin API"
    only = sub.add_parser("gateway", help=gateway, description=gateway, epilog=server_help.epilog("gateway"),
                          formatter_class=raw)
    only.add_argument("--port", type=_port, metavar="PORT",
                      help="the port to listen on (default 8123, so `benchwarmers serve` keeps 8122)")
    only.add_argument("--bind", metavar="ADDRESS",
                      help="the address to listen on (default BENCH_BIND, else 127.0.0.1; beyond loopback it needs"
                      " BENCHWARMERS_ADMIN_TOKEN)")
    demo = "run the server on a temporary data folder with five simulated models"
    sub.add_parser("demo", help=demo, description=demo, epilog=server_help.epilog("demo"), formatter_class=raw)
    init = sub.add_parser("init", help="make the data folder")
    init.add_argument("folder", nargs="?", help="where (default: BENCHWARMERS_HOME or the OS data folder)")
    sub.add_parser("mcp", help="a stdio MCP server that forwards to a running Benchwarmers")
    cmd_store.add_parsers(sub)  # backup, restore, export, import: on the store itself
    doctor = sub.add_parser("doctor", help="check the store's file; --repair copies what is readable into a new one",
                            description="Check a SQLite store: PRAGMA integrity_check, and each table's readable "
                            "rows. It only reads the file; --repair copies what is readable into a new file beside "
                            "it, checks the copy, and puts it in place with the damaged file kept, renamed.",
                            epilog="examples:\n  benchwarmers doctor\n  benchwarmers doctor --repair\n"
                            "  benchwarmers doctor ~/backups/benchwarmers.db\n"
                            "  docker compose run --rm bench benchwarmers doctor --repair   # stop the service first",
                            formatter_class=argparse.RawDescriptionHelpFormatter)
    doctor.add_argument("database", nargs="?",
                        help="the SQLite file (default: the store of BENCHWARMERS_HOME, or BENCHWARMERS_DATABASE_URL)")
    doctor.add_argument("--repair", action="store_true",
                        help="copy what is readable into a new file and put it in place (the damaged one is kept)")
    return p


def _port(text: str) -> int:
    """A port, read as BENCH_PORT is (``Settings``)."""
    try:
        return Settings.from_env({"BENCHWARMERS_HOME": ".", "BENCH_PORT": text}).port
    except BadSettings:
        raise argparse.ArgumentTypeError(f"a port number from 1 to 65535, not {text[:40]!r}") from None


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv:
        argv = ["serve"]
    if argv[0] in SERVER_COMMANDS or argv[0] in ("--version", "-v"):
        return run_server_command(argv)
    try:
        from benchwarmers_mcp.cli import client
    except ImportError:
        print(f"benchwarmers: unknown command {argv[0]!r}", file=sys.stderr)
        return 2
    return client.main(argv)


def run_server_command(argv: list[str]) -> int:
    args = server_parser().parse_args(argv)
    command = args.command or "serve"
    if command == "mcp":
        from benchwarmers_mcp.mcp.stdio import main as mcp_main

        return mcp_main()
    # Start-up makes some 60,000 objects and frees next to none: the cyclic collector running along
    # the way (a collection per 700 allocations, the older generations again and again) was ~25 ms
    # of the cold start. ``server.settle_collector`` collects once, freezes and turns it back on
    # before serving; a command that ends without serving turns it back on here.
    gc.disable()
    try:
        return _server_command(command, args)
    finally:
        gc.enable()


def _server_command(command: str, args: argparse.Namespace) -> int:
    from benchwarmers_mcp.cli import server

    try:
        settings = Settings.from_env()
    except BadSettings as e:
        for problem in e.problems:  # one whole line per reason, as for every other refusal to start
            server.refuse(f"refusing to start: {problem}")
        return 2

    if command in cmd_store.COMMANDS:
        return cmd_store.run(command, args, settings)
    if command == "init":
        return server.init(args.folder, settings)
    if command == "doctor":
        from benchwarmers_mcp.cli.doctor import doctor

        return doctor(args.database, args.repair, settings)
    if command == "demo":
        return server.demo(settings)
    if command == "gateway":
        return server.gateway(settings, args.port, args.bind)
    return server.serve(settings)


if __name__ == "__main__":
    raise SystemExit(main())
