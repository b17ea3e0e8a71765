"""``python -m sdfg_offload.npbench install PATH``: installs this project as
NPBench's framework ``sdfg_offload`` into the checkout at PATH."""

import argparse
import sys

from . import NAME, NotAnNpbenchCheckout, install


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sdfg_offload.npbench")
    commands = parser.add_subparsers(dest="command", required=True)
    installing = commands.add_parser("install", help="install the framework into an NPBench checkout")
    installing.add_argument("path", help="the NPBench checkout")
    args = parser.parse_args(argv)
    try:
        changed = install(args.path)
    except NotAnNpbenchCheckout as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    for path in changed:
        print(f"wrote {path}")
    print(f"framework `{NAME}` installed: python run_benchmark.py -b gemm -f {NAME} -p S")
    return 0


if __name__ == "__main__":
    sys.exit(main())
