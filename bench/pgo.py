"""`make pgo` and `make install-pgo`: profile-guided builds of the simulator (issue 15).

A profile-guided build is compiled twice: once instrumented, which then runs a training set of
scenarios and records which branches and calls are hot; then again with that profile, so that
the compiler lays out and inlines the hot paths for what a run does. On this project's
2-core machine it cut 9-14% of the CPU time of the benchmarks' scenarios (`make bench-ab
BUILD_A=target/release/slacknet-sim BUILD_B=target/pgo/slacknet-sim` measures it, and checks
that both builds print the same results: the profile changes code layout, never what a run
computes).

    python bench/pgo.py binary       # target/pgo/slacknet-sim, next to the plain target/release one
    python bench/pgo.py extension    # rebuild the installed Python extension (slacknet._native)

The training set (`TRAINING`) is `experiments/pgo/` (a leaf-spine, one under the `ns3_compat`
profile, a fat-tree and the bounded-loss ML setting, each with its own sizes and seed) and the
reduced scenarios of the Aeolus, NetApprox, Credence and pFabric reproductions, so that each
system's paths are trained.
No scenario that a benchmark times (`experiments/compare/`, `experiments/scale/`, the scale
table's fat-trees) is in it. It needs `llvm-profdata` of the Rust toolchain's own LLVM
(`rustup component add llvm-tools`); without it, one line says so and the exit code is 2.

The plain build is untouched: the two builds live in `target/pgo/` (`gen`, `use`, the merged
profile) and the result is put in place only once it is whole. `make install` puts the plain
extension back.

A finished build is kept with a digest of everything it was built from (`inputs_digest`: the
workspace's sources and manifests, `examples/` that tests include, the training scenarios, this
script, `rustc -vV`, RUSTFLAGS, and for the extension the Python version), so that the next call
on the same inputs takes minutes less: the binary is not rebuilt, and the extension is copied
back from `target/pgo/ext-<digest>.so` over the plain one that `make install` put in place.
`--rebuild` builds anyway. The digest is written only after the build is in place, and removed
before a build starts, so an interrupted build is never taken for a finished one.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

_BENCH = str(Path(__file__).resolve().parent)  # bench/: _cli (on the path when run as a script)
if _BENCH not in sys.path:
    sys.path.insert(0, _BENCH)
from _cli import UsageError, interruptible  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "target" / "pgo"

# Scenarios the instrumented build runs, relative to the repository (about 3 s of plain runs).
TRAINING = [
    "experiments/pgo/leaf_spine.toml",
    "experiments/pgo/ns3_compat.toml",
    "experiments/pgo/fat_tree.toml",
    "experiments/pgo/mlt.toml",
    "experiments/aeolus/websearch.toml",
    "experiments/netapprox/base_reduced.toml",
    "experiments/credence/bench.toml",
    "experiments/pfabric/websearch.toml",
]

# Functions the training never reached are compiled as without a profile: not worth a warning each.
USE_FLAGS = ["-Cllvm-args=-pgo-warn-missing-function=false"]


def rustc(*args: str) -> str:
    """What `rustc ARGS` prints."""
    try:
        return subprocess.run(["rustc", *args], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        raise UsageError(f"rustc {' '.join(args)} failed ({e}): install Rust (https://rustup.rs) and put rustc on PATH") from None


def rustc_field(name: str) -> str:
    """A field of `rustc -vV` (e.g. `host`)."""
    for line in rustc("-vV").splitlines():
        key, _, value = line.partition(":")
        if key.strip() == name:
            return value.strip()
    raise UsageError(f"rustc -vV printed no '{name}' field: a Rust toolchain installed with rustup is needed")


def find_profdata(explicit: Path | None) -> Path:
    """`llvm-profdata` of the toolchain's own LLVM (a profile is read only by the LLVM that wrote it)."""
    if explicit is not None:
        if not (explicit.is_file() and os.access(explicit, os.X_OK)):
            raise UsageError(f"--profdata = {explicit}: not an executable file; give the path of llvm-profdata "
                             "or leave it out to use the Rust toolchain's")
        return explicit
    path = Path(rustc("--print", "sysroot").strip()) / "lib" / "rustlib" / rustc_field("host") / "bin" / "llvm-profdata"
    if not path.is_file():
        raise UsageError(f"llvm-profdata not found at {path}: run `rustup component add llvm-tools` "
                         f"(LLVM {rustc_field('LLVM version')}, the one rustc uses), then this again")
    return path


# What a build is compiled from, relative to the repository: files, or folders taken whole (less
# any `target/` folder in them). `examples/` holds scenarios that tests include in the binary.
BUILD_INPUTS = ["Cargo.toml", "Cargo.lock", "pyproject.toml", "crates", "examples", "experiments/pgo"]


def input_files(root: Path) -> list[Path]:
    """The files of `BUILD_INPUTS` under `root`, and the training scenarios, sorted."""
    files: set[Path] = set()
    for name in BUILD_INPUTS:
        p = root / name
        if p.is_file():
            files.add(p)
        elif p.is_dir():
            files.update(f for f in p.rglob("*") if f.is_file() and "target" not in f.relative_to(root).parts)
    files.update(p for p in (root / t for t in TRAINING) if p.is_file())
    return sorted(files)


def inputs_digest(root: Path, what: str, toolchain: str) -> str:
    """A digest of everything a `what` ("binary" or "extension") build is made from: its input
    files (names and contents), this script, the toolchain's `rustc -vV`, RUSTFLAGS and, for the
    extension, the Python version. Same digest, same build."""
    h = hashlib.sha256()
    for part in (what, toolchain, rustflags(USE_FLAGS), sys.version if what == "extension" else ""):
        h.update(part.encode() + b"\0")
    for f in [*input_files(root), Path(__file__).resolve()]:
        data = f.read_bytes()
        h.update(f"{f.relative_to(root) if f.is_relative_to(root) else f.name}\0{len(data)}\0".encode() + data)
    return h.hexdigest()[:24]


def stamp_path(artefact: Path) -> Path:
    """The file beside a build that holds the digest of its inputs."""
    return artefact.with_name(artefact.name + ".inputs")


def is_current(artefact: Path, digest: str) -> bool:
    """Whether `artefact` exists and was built from inputs with this digest."""
    stamp = stamp_path(artefact)
    return artefact.is_file() and stamp.is_file() and stamp.read_text().strip() == digest


def write_stamp(artefact: Path, digest: str) -> None:
    """Record the inputs' digest of a build now in place (whole, as the build itself)."""
    stamp, tmp = stamp_path(artefact), stamp_path(artefact).with_suffix(".tmp")
    tmp.write_text(digest + "\n")
    os.replace(tmp, stamp)


def training_set(root: Path) -> list[Path]:
    paths = [root / t for t in TRAINING]
    missing = [str(p) for p in paths if not p.is_file()]
    if missing:
        raise UsageError(f"training scenario missing: {', '.join(missing)}; run from a complete checkout")
    return paths


def rustflags(extra: list[str]) -> str:
    """The user's RUSTFLAGS, if any, with `extra` after them."""
    return " ".join([os.environ.get("RUSTFLAGS", "").strip(), *extra]).strip()


def run(cmd: list[str], env: dict[str, str], what: str) -> None:
    print(f"pgo: {what}", flush=True)
    try:
        r = subprocess.run(cmd, env=env, cwd=ROOT)
    except OSError as e:
        raise UsageError(f"{what}: cannot run {cmd[0]} ({e}); install it or put it on PATH") from None
    if r.returncode != 0:
        raise RuntimeError(f"{what} failed (exit {r.returncode}): {' '.join(cmd)}")


def fresh_dir(path: Path) -> Path:
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    return path


def merge(profdata: Path, raw: Path, stem: str) -> Path:
    """Merge the training's profiles into `target/pgo/<stem>-<digest>.profdata`: named by its
    content, so that a new profile changes RUSTFLAGS and cargo rebuilds with it."""
    files = sorted(raw.glob("*.profraw"))
    if not files:
        raise RuntimeError(f"the training runs wrote no profile into {raw}")
    tmp = OUT / f"{stem}.profdata.tmp"
    run([str(profdata), "merge", "-o", str(tmp), *map(str, files)], dict(os.environ), f"merge {len(files)} profiles")
    out = OUT / f"{stem}-{hashlib.sha256(tmp.read_bytes()).hexdigest()[:16]}.profdata"
    os.replace(tmp, out)
    for old in OUT.glob(f"{stem}-*.profdata"):  # earlier trainings' (about 3 MB each)
        if old != out:
            old.unlink()
    return out


def build_binary(profdata: Path, scenarios: list[Path]) -> Path:
    """Instrumented build, training, profile-guided build; returns target/pgo/slacknet-sim."""
    raw = OUT / "profraw"
    env = dict(os.environ)
    gen = dict(env, CARGO_TARGET_DIR=str(OUT / "gen"), RUSTFLAGS=rustflags([f"-Cprofile-generate={raw}"]))
    run(["cargo", "build", "--release", "--quiet", "-p", "slacknet-sim"], gen, "instrumented build")
    # Build scripts ran instrumented too: only the training's profiles count.
    fresh_dir(raw)
    exe = OUT / "gen" / "release" / "slacknet-sim"
    for s in scenarios:
        train = dict(env, LLVM_PROFILE_FILE=str(raw / "sim-%p-%m.profraw"))
        r = subprocess.run([str(exe), str(s)], env=train, cwd=s.parent, capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError(f"training run on {s} failed (exit {r.returncode}): {r.stderr.strip()[-300:]}")
        print(f"pgo: trained on {s.relative_to(ROOT)}", flush=True)
    profile = merge(profdata, raw, "sim")
    use = dict(env, CARGO_TARGET_DIR=str(OUT / "use"), RUSTFLAGS=rustflags([f"-Cprofile-use={profile}", *USE_FLAGS]))
    run(["cargo", "build", "--release", "--quiet", "-p", "slacknet-sim"], use, "profile-guided build")
    # Put in place whole: an interrupted copy never looks like a finished build.
    dest, tmp = OUT / "slacknet-sim", OUT / "slacknet-sim.tmp"
    shutil.copy2(OUT / "use" / "release" / "slacknet-sim", tmp)
    os.replace(tmp, dest)
    return dest


TRAIN_PY = "import sys, slacknet\nfor p in sys.argv[1:]:\n    slacknet.run(p)\n    print('pgo: trained on', p, flush=True)\n"


def installed_extension() -> Path:
    """Where the installed `slacknet._native` is (after `make install`)."""
    r = subprocess.run([sys.executable, "-c", "import slacknet._native as m; print(m.__file__)"],
                       capture_output=True, text=True, cwd=ROOT)
    if r.returncode != 0 or not r.stdout.strip():
        raise UsageError(f"slacknet._native cannot be imported with {sys.executable}: run `make install` first")
    return Path(r.stdout.strip())


def keep_extension(installed: Path, digest: str) -> Path:
    """Copy the extension just built to `target/pgo/ext-<digest>.so` (the only one kept)."""
    kept = OUT / f"ext-{digest}.so"
    for old in [*OUT.glob("ext-*.so"), *OUT.glob("ext-*.so.inputs")]:
        old.unlink()
    shutil.copy2(installed, kept.with_suffix(".tmp"))
    os.replace(kept.with_suffix(".tmp"), kept)
    return kept


def put_back(kept: Path, installed: Path) -> None:
    """Install a kept extension over the one in place, whole (a copy beside it, then a rename)."""
    tmp = installed.with_name(installed.name + ".pgo.tmp")
    shutil.copy2(kept, tmp)
    os.replace(tmp, installed)


def build_extension(profdata: Path, scenarios: list[Path]) -> None:
    """As `build_binary`, for the installed Python extension: trained through the Python API."""
    raw = OUT / "ext-profraw"
    env = dict(os.environ)
    pip = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "-e", str(ROOT)]
    gen = dict(env, CARGO_TARGET_DIR=str(OUT / "ext-gen"), RUSTFLAGS=rustflags([f"-Cprofile-generate={raw}"]))
    run(pip, gen, "instrumented extension")
    fresh_dir(raw)
    train = dict(env, LLVM_PROFILE_FILE=str(raw / "ext-%p-%m.profraw"))
    run([sys.executable, "-c", TRAIN_PY, *map(str, scenarios)], train, "training runs")
    profile = merge(profdata, raw, "ext")
    use = dict(env, CARGO_TARGET_DIR=str(OUT / "ext-use"), RUSTFLAGS=rustflags([f"-Cprofile-use={profile}", *USE_FLAGS]))
    run(pip, use, "profile-guided extension")


@interruptible
def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("what", choices=["binary", "extension"],
                   help="binary: target/pgo/slacknet-sim; extension: the installed slacknet._native")
    p.add_argument("--profdata", type=Path, default=None, help="llvm-profdata to use (default: the Rust toolchain's)")
    p.add_argument("--rebuild", action="store_true",
                   help="build even if a build of the same inputs is kept (see the module's docs)")
    args = p.parse_args(argv)
    try:
        profdata = find_profdata(args.profdata)
        scenarios = training_set(ROOT)
        digest = inputs_digest(ROOT, args.what, rustc("-vV"))
        if args.what == "binary":
            dest = OUT / "slacknet-sim"
            if is_current(dest, digest) and not args.rebuild:
                print(f"pgo: {dest.relative_to(ROOT)} is up to date (inputs {digest}; --rebuild to build anyway)")
                return 0
            stamp_path(dest).unlink(missing_ok=True)
            dest = build_binary(profdata, scenarios)
            write_stamp(dest, digest)
            print(f"pgo: {dest.relative_to(ROOT)} built (plain build: target/release/slacknet-sim)")
        else:
            installed = installed_extension()
            kept = OUT / f"ext-{digest}.so"
            if is_current(kept, digest) and not args.rebuild:
                put_back(kept, installed)
                print(f"pgo: slacknet._native: the profile-guided build of these inputs put back from "
                      f"{kept.relative_to(ROOT)} (--rebuild to build anyway; `make install` puts the plain build back)")
                return 0
            stamp_path(kept).unlink(missing_ok=True)
            build_extension(profdata, scenarios)
            write_stamp(keep_extension(installed, digest), digest)
            print("pgo: slacknet._native rebuilt profile-guided (`make install` puts the plain build back)")
    except UsageError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except RuntimeError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
