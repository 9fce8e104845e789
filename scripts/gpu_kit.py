"""The GPU kit: what travels to a GPU machine without network for `bash scripts/gpu_check.sh`, and whether it fits
the 64 MiB a working tree may carry there (issue 61).

    python scripts/gpu_kit.py --download     # with network: the kit's wheels into .whl/ (gitignored), bitsandbytes trimmed
    python scripts/gpu_kit.py --dry-run      # the files that would travel + the kit against 64 MiB; exit 1 if over

The GPU machine (DEVELOPERS.md) has torch 2.11, transformers 5.17, peft and accelerate; no bitsandbytes, datasets or
gguf. The check needs bitsandbytes, transformers and peft at requirements.txt's pins (its setup stage asserts them) and
carries tokenizers, safetensors and huggingface_hub at theirs, installed only where the machine's are older. datasets and
gguf stay behind: the check runs twins (random weights, a byte tokenizer), never the hub's GSM8K or the GGUF model.
bitsandbytes' wheel holds one library per CUDA and ROCm release (41 MiB); the kit keeps the CUDA builds torch ships
(`--cuda`, default 12.6, 12.8 and 13.0: the setup row prints the machine's) and the CPU one. studies/ and pilots/
(LEAVE_BEHIND, 36 MiB of study data nothing of the check reads) must not travel: docs/gpu.md has the checkout without them.
"""

from __future__ import annotations

import re
import subprocess
import sys
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from minipods.cli import Parser, fail  # noqa: E402

PROG = "python scripts/gpu_kit.py"
ROOT = Path(__file__).resolve().parent.parent
LIMIT = 64 * 2**20  # what a working tree may carry to the GPU machine, the kit included
KIT = ("bitsandbytes", "transformers", "peft", "tokenizers", "safetensors", "huggingface_hub")
LEAVE_BEHIND = ("studies/", "pilots/")
# the kit's wheel sizes (bytes), bitsandbytes trimmed to CUDA 12.6, 12.8, 13.0 and its CPU library: measured 2026-12-05
# with `python scripts/gpu_kit.py --download` (Linux x86_64, Python 3.11); the dry run uses .whl/'s own when it has them
KIT_BYTES = {"bitsandbytes": 16_148_223, "transformers": 13_336_114, "peft": 835_427, "tokenizers": 3_396_193,
             "safetensors": 516_040, "huggingface_hub": 857_021}


def kit_pins(requirements: Path = ROOT / "requirements.txt") -> list[str]:
    """`name==version` of each kit package: requirements.txt's pin, else the version installed here (huggingface_hub)."""
    from importlib.metadata import version

    pins = dict(re.findall(r"^([\w-]+)==(\S+)", requirements.read_text(), re.M))
    return [f"{name}=={pins.get(name) or version(name)}" for name in KIT]


def trim_wheel(src: Path, dst: Path, cuda: list[str]) -> list[str]:
    """Copy wheel `src` to `dst` without the bitsandbytes libraries of other CUDA releases, ROCm and XPU (its
    RECORD without them too, so pip installs it as whole); returns the names left out."""
    keep = {f"libbitsandbytes_cuda{v.replace('.', '')}.so" for v in cuda} | {"libbitsandbytes_cpu.so"}
    drop = lambda name: Path(name).name.startswith("libbitsandbytes_") and Path(name).name not in keep  # noqa: E731
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w", zipfile.ZIP_DEFLATED) as zout:
        left = [i.filename for i in zin.infolist() if drop(i.filename)]
        for i in zin.infolist():
            if drop(i.filename):
                continue
            data = zin.read(i)
            if i.filename.endswith(".dist-info/RECORD"):
                data = "".join(line for line in data.decode().splitlines(True) if not drop(line.split(",")[0])).encode()
            zout.writestr(i, data)
    return left


def travelling_files(root: Path = ROOT) -> dict[str, int]:
    """{path: bytes} of what a working tree carries: tracked files and untracked ones git does not ignore, on disk."""
    out = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"], cwd=root,
                         capture_output=True, check=True).stdout.decode().split("\0")
    return {p: (root / p).stat().st_size for p in out if p and (root / p).is_file()}


def plan(files: dict[str, int], kit: dict[str, int], limit: int = LIMIT) -> dict:
    """The arithmetic: what travels (files outside LEAVE_BEHIND, and the kit) against `limit` bytes."""
    behind = {d: sum(s for p, s in files.items() if p.startswith(d)) for d in LEAVE_BEHIND}
    tree = sum(files.values()) - sum(behind.values())
    total = tree + sum(kit.values())
    return {"tree": tree, "left_behind": behind, "kit": dict(kit), "total": total, "limit": limit, "fits": total < limit}


def dry_run(whl: Path) -> int:
    wheels = {w.name.split("-")[0]: w.stat().st_size for w in whl.glob("*.whl")}
    kit = {name: wheels.get(name, KIT_BYTES[name]) for name in KIT}
    p = plan(travelling_files(), kit)
    mib = lambda b: f"{b / 2**20:.1f} MiB"  # noqa: E731
    print(f"the tree that travels: {mib(p['tree'])} (left behind: " +
          ", ".join(f"{d} {mib(b)}" for d, b in p["left_behind"].items()) + ")")
    for name, b in kit.items():
        print(f"  {name}: {mib(b)} ({'.whl/' if name in wheels else 'recorded size: no wheel in .whl/'})")
    print(f"total {mib(p['total'])} of {mib(p['limit'])}: {'fits' if p['fits'] else 'DOES NOT FIT'}")
    if any(p["left_behind"].values()):
        print("this checkout still has " + " and ".join(LEAVE_BEHIND) + ": send the check from one without them "
              "(docs/gpu.md, 'The GPU kit')")
    return 0 if p["fits"] else 1


def download(whl: Path, cuda: list[str]) -> int:
    whl.mkdir(exist_ok=True)
    subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:", "-d", str(whl),
                    *kit_pins()], check=True)
    for w in whl.glob("bitsandbytes-*.whl"):
        tmp = w.with_suffix(".trim")
        left = trim_wheel(w, tmp, cuda)
        tmp.replace(w)
        print(f"{w.name}: left out {len(left)} libraries, kept CUDA {', '.join(cuda)} and the CPU one")
    return dry_run(whl)


def main(argv=None) -> int:
    parser = Parser(prog=PROG, description="The GPU kit: download it, or check that it fits.")
    parser.add_argument("--dry-run", action="store_true", help="sizes against 64 MiB (exit 1 if over)")
    parser.add_argument("--download", action="store_true", help="pip download the kit into --whl-dir, trimmed")
    parser.add_argument("--whl-dir", default=str(ROOT / ".whl"), help="where the kit's wheels are")
    parser.add_argument("--cuda", default="12.6,12.8,13.0", help="bitsandbytes' CUDA libraries to keep")
    args = parser.parse_args(argv)
    cuda = [v.strip() for v in args.cuda.split(",") if v.strip()]
    if args.dry_run == args.download:
        return fail(PROG, "give one of --dry-run or --download")
    if not cuda or not all(re.fullmatch(r"\d+\.\d", v) for v in cuda):
        return fail(PROG, f"--cuda must be CUDA releases such as 12.8,13.0, got {args.cuda!r}")
    return download(Path(args.whl_dir), cuda) if args.download else dry_run(Path(args.whl_dir))


if __name__ == "__main__":
    sys.exit(main())
