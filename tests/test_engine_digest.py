"""The engine digest (``_native.engine_sha256()``, computed by ``crates/py/build.rs``) is the
SHA-256 of the sources the simulator's behaviour is built from, computed here again from this
checkout: so the build script hashes what it says it hashes, and an extension built from other
sources than the checkout's (edited since ``make install``) is caught here before a sweep
would reuse runs across the change."""

from __future__ import annotations

import hashlib
from pathlib import Path

import slacknet

ROOT = Path(__file__).resolve().parents[1]
PARTS = ("Cargo.toml", "build.rs", "src", "data")


def _files(root: Path) -> list[str]:
    """The files build.rs hashes, as `/`-separated paths relative to ``root``, in its order."""
    out: list[str] = []

    def add(rel: Path) -> None:
        p = root / rel
        if p.is_dir():
            for e in sorted(p.iterdir(), key=lambda e: e.name.encode()):
                if not e.name.startswith("."):
                    add(rel / e.name)
        elif p.is_file():
            out.append(rel.as_posix())

    for top in ("Cargo.toml", "Cargo.lock"):
        add(Path(top))
    for c in sorted((p for p in (root / "crates").iterdir() if p.is_dir()), key=lambda p: p.name.encode()):
        if c.name.startswith(".") or c.name == "fuzz-targets":
            continue
        for part in PARTS:
            add(Path("crates") / c.name / part)
    return sorted(out, key=str.encode)


def _digest(root: Path) -> str:
    h = hashlib.sha256()
    for rel in _files(root):
        data = (root / rel).read_bytes()
        h.update(rel.encode() + b"\0" + str(len(data)).encode() + b"\0" + data)
    return h.hexdigest()


def test_the_digest_covers_the_engine_and_not_its_tests() -> None:
    files = _files(ROOT)
    for must in ("Cargo.lock", "crates/sim/src/world.rs", "crates/sim/data/default.toml",
                 "crates/sim/data/profiles/ns3_compat.toml", "crates/proto/src/lib.rs", "crates/py/build.rs"):
        assert must in files
    assert not [f for f in files if f.split("/")[2:3] in (["tests"], ["examples"]) or f.startswith("crates/fuzz-targets/")]


def test_the_extension_was_built_from_this_checkout() -> None:
    assert slacknet._native.engine_sha256() == _digest(ROOT), (
        "the native extension was built from other sources than this checkout's: run `make install`")
