"""One command-line helper for every minipods CLI (train, compare, evaluate, bench).

A settings dataclass whose fields are declared with `setting(default, help)` becomes an argparse
parser with `add_dataclass_args`: one `--flag-name` per field, typed from the annotation
(int, float, str, bool as --x/--no-x, list[int] as "2,4,8"), the field's help as the flag's help.
Every flag defaults to None, so `overrides(args, cls)` returns exactly what the user typed, to be
laid over a preset.

One error style everywhere: a bad argument prints one line `PROG: error: WHAT` on stderr and the
process exits with status 2; no traceback, no usage dump (`Parser.error`, `fail`).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import typing
from dataclasses import field


def setting(default, help: str, **kw):
    """A dataclass field that documents itself: `lr: float = setting(5e-6, "learning rate")`."""
    if isinstance(default, list):
        return field(default_factory=lambda: list(default), metadata={"help": help, **kw})
    return field(default=default, metadata={"help": help, **kw})


class Parser(argparse.ArgumentParser):
    """argparse, but a bad argument is one line on stderr and exit status 2 (no usage dump)."""

    def __init__(self, *a, **kw):
        kw.setdefault("formatter_class", argparse.ArgumentDefaultsHelpFormatter)
        super().__init__(*a, **kw)

    def error(self, message):
        print(f"{self.prog}: error: {message}", file=sys.stderr)
        sys.exit(2)


def fail(prog: str, err: BaseException | str) -> int:
    """Print `prog: error: <first line of err>` on stderr; return exit status 2."""
    msg = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
    print(f"{prog}: error: {msg}", file=sys.stderr)
    return 2


def int_list(s: str) -> list[int]:
    """'2,4,8' -> [2, 4, 8] (argparse turns a ValueError here into a one-line error)."""
    try:
        return [int(float(x)) for x in s.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {s!r}") from None


def _kind(cls, f: dataclasses.Field):
    hint = typing.get_type_hints(cls)[f.name]
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    if typing.get_origin(hint) is list or any(typing.get_origin(a) is list for a in args):
        return int_list
    base = args[0] if args else hint
    return base if base in (int, float, str, bool) else str


def add_dataclass_args(parser: argparse.ArgumentParser, cls, skip=(), default_label: str = "default") -> None:
    """One flag per field of `cls` (except `skip`); each defaults to None (= not given)."""
    for f in dataclasses.fields(cls):
        if f.name in skip or not f.metadata.get("help"):
            continue
        flag = "--" + f.name.replace("_", "-")
        default = f.default if f.default is not dataclasses.MISSING else f.default_factory()
        if isinstance(default, list):
            default = ",".join(map(str, default))
        help = f.metadata["help"].replace("%", "%%") + f" ({default_label}: {default})"
        kind = _kind(cls, f)
        if kind is bool:
            parser.add_argument(flag, action=argparse.BooleanOptionalAction, default=None, help=help)
        else:
            parser.add_argument(flag, type=kind, default=None, help=help)
    parser.formatter_class = argparse.HelpFormatter  # defaults are already in each help string


def overrides(args: argparse.Namespace, cls, skip=()) -> dict:
    """The fields of `cls` the user gave on the command line (None = not given)."""
    return {f.name: getattr(args, f.name) for f in dataclasses.fields(cls)
            if f.name not in skip and getattr(args, f.name, None) is not None}
