#!/usr/bin/env python3
"""A small argparse tool recorded by rage: try `hello`, `fail`, `chatty`, then `rage`.

    python3 examples/argparse_tool.py hello World
    python3 examples/argparse_tool.py fail          # crashes; the hint says how to report it
    python3 examples/argparse_tool.py chatty        # logs at every level; DEBUG recorded only
    python3 examples/argparse_tool.py rage --last --preview
"""

from __future__ import annotations

import argparse
import logging

import rage
from rage.integration.argparse import add_rage_subparser, dispatch_rage

log = logging.getLogger("argparse_tool")


def main(argv: list[str] | None = None) -> int:
    rage.install("argparse_tool", version="0.1",
                 issues_url="https://github.com/example/argparse_tool/issues/new")
    parser = argparse.ArgumentParser(prog="argparse_tool", description=__doc__.splitlines()[0])
    parser.add_argument("-v", "--verbose", action="store_true", help="show INFO messages")
    sub = parser.add_subparsers(dest="command", required=True)
    hello = sub.add_parser("hello", help="greet NAME")
    hello.add_argument("name", nargs="?", default="world")
    sub.add_parser("fail", help="fail with an uncaught exception")
    sub.add_parser("chatty", help="log at several levels")
    add_rage_subparser(sub, "argparse_tool")

    args = parser.parse_args(argv)
    dispatch_rage(args)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                        format="%(levelname)s: %(message)s")
    if args.command == "hello":
        log.debug("greeting %s", args.name)
        print(f"hello, {args.name}")
    elif args.command == "fail":
        log.info("loaded config %s", {"retries": 3})
        raise KeyError("timeout")
    elif args.command == "chatty":
        log.debug("a detail only the bug report needs")
        log.info("progress: halfway")
        log.warning("disk is 91% full")
        log.error("could not reach the mirror, using the cache")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
