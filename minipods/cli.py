"""Command-line helpers: `setting(default, help)` fields become flags defaulting to None, so `overrides` is
exactly what the user typed (laid over a preset); a bad argument is one line `PROG: error: WHAT`, exit 2."""

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


def first_line(err: BaseException | str) -> str:
    """The first line of an error's message (its type's name when the message is empty)."""
    text = str(err).strip()
    return text.splitlines()[0] if text else type(err).__name__


def fail(prog: str, err: BaseException | str) -> int:
    """Print `prog: error: <first line of err>` on stderr; return exit status 2."""
    print(f"{prog}: error: {first_line(err)}", file=sys.stderr)
    return 2


def check_choices(cfg, choices: dict) -> None:
    """ValueError naming the flag when a field of `cfg` is not one of its allowed values."""
    for name, ok in choices.items():
        if getattr(cfg, name) not in ok:
            raise ValueError(f"--{name.replace('_', '-')} must be one of {', '.join(ok)}, got {getattr(cfg, name)!r}")


def check_positive(cfg, names) -> None:
    """ValueError naming the flag when one of the whole-number fields `names` of `cfg` is below 1."""
    for name in names:
        if getattr(cfg, name) < 1:
            raise ValueError(f"--{name.replace('_', '-')} must be >= 1, got {getattr(cfg, name)}")


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
        how = {"action": argparse.BooleanOptionalAction} if kind is bool else {"type": kind}
        parser.add_argument(flag, default=None, help=help, **how)
    parser.formatter_class = argparse.HelpFormatter  # defaults are already in each help string


def overrides(args: argparse.Namespace, cls, skip=()) -> dict:
    """The fields of `cls` the user gave on the command line (None = not given)."""
    return {f.name: getattr(args, f.name) for f in dataclasses.fields(cls)
            if f.name not in skip and getattr(args, f.name, None) is not None}
