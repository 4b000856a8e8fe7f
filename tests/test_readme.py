"""The READMEs against the product: every `slacknet ...` command they show names a command and
options that exist (and, in a code block, parses as written), every `make` target and variable
exists, and every repository path they name is there. A renamed flag or moved file fails here
instead of in a user's shell. Nothing is run: only the CLI's parser is consulted."""

from __future__ import annotations

import argparse
import glob
import re
import shlex
from pathlib import Path

import pytest

from slacknet.cli import _build_parser

REPO = Path(__file__).resolve().parents[1]
SKIP_PARTS = {"target", ".venv", ".pytest_cache", "node_modules", ".git"}
READMES = sorted(p for p in REPO.glob("**/README.md") if not SKIP_PARTS & set(p.relative_to(REPO).parts))
#: Paths a README names in another project's repository, not ours.
EXTERNAL_PATHS = {"examples/Credence/credence-evaluation.cc"}  # inet-tub/ns3-datacenter's
PATH_PREFIXES = ("experiments/", "examples/", "crates/", "bench/", "python/", "docs/", "tests/", "fuzz/", ".ci/")


def _commands(text: str) -> list[tuple[str, bool]]:
    """``(command, in_code_block)`` for each ``slacknet``/``make`` command: code-block lines
    (a ``$`` prompt and a trailing ``# comment`` removed) and inline code spans."""
    out: list[tuple[str, bool]] = []
    fenced = False
    for line in text.splitlines():
        if line.startswith("```"):
            fenced = not fenced
            continue
        if fenced:
            s = line.strip().removeprefix("$ ")
            s = re.split(r"\s+#\s", s, maxsplit=1)[0].strip()
            if s.startswith(("slacknet ", "make ")) or s in ("slacknet", "make"):
                out.append((s, True))
        else:
            for span in re.findall(r"`([^`\n]+)`", line):
                if span.startswith(("slacknet ", "make ")):
                    out.append((span, False))
    return out


def _sub(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for a in parser._actions:
        if isinstance(a, argparse._SubParsersAction):
            return dict(a.choices)
    return {}


def _options(parser: argparse.ArgumentParser) -> set[str]:
    return set(parser._option_string_actions)


# Placeholders the READMEs use for values, replaced before a code-block line is parsed.
PLACEHOLDERS = {"SCENARIO": "experiments/compare/s2.toml", "N": "3", "DIR": "/tmp/x", "...": "/tmp/x",
                "<paper>": "credence"}


def _all_commands() -> list[tuple[str, str, bool]]:
    return [(str(p.relative_to(REPO)), c, block) for p in READMES for c, block in _commands(p.read_text("utf-8"))]


def test_the_readmes_show_commands() -> None:
    cmds = _all_commands()
    # The extraction finds the quick start and the using-it block (a broken extraction would
    # make the tests below pass vacuously).
    assert ("README.md", "make demo", True) in cmds and ("README.md", "make test", True) in cmds
    assert ("README.md", "slacknet run examples/fat_tree_k4.toml --seed 3 --out /tmp/ft", True) in cmds
    assert sum(c.startswith("slacknet ") for _, c, _ in cmds) >= 40


@pytest.mark.parametrize("doc,cmd,block", [c for c in _all_commands() if c[1].startswith("slacknet")],
                         ids=lambda v: v if isinstance(v, str) else "")
def test_every_slacknet_command_shown_exists(doc: str, cmd: str, block: bool) -> None:
    words = shlex.split(cmd)[1:]
    parser = _build_parser()
    # The subcommand chain: `ml tolerance`, `credence train`, `net tc`, ...
    i = 0
    while i < len(words) and (subs := _sub(parser)):
        if words[i] not in subs:
            if words[i].startswith("-") or words[i].startswith("<"):
                break
            pytest.fail(f"{doc}: `{cmd}`: no command {words[i]!r} (there are {sorted(subs)})")
        parser = subs[words[i]]
        i += 1
    known = _options(parser)
    for w in words[i:]:
        if w.startswith("--"):
            flag = w.split("=", 1)[0]
            assert flag in known, f"{doc}: `{cmd}`: {flag} is no option of it (it has {sorted(known)})"
    if block:
        argv = [PLACEHOLDERS.get(w, w) for w in words]
        try:
            _build_parser().parse_args(argv)
        except SystemExit as e:  # argparse's usage error
            pytest.fail(f"{doc}: `{cmd}` does not parse (exit {e.code})")


def _make_targets_and_vars() -> tuple[set[str], set[str]]:
    text = (REPO / "Makefile").read_text("utf-8")
    targets = set(re.findall(r"^([A-Za-z0-9_.-]+):", text, re.M))
    variables = set(re.findall(r"^([A-Z0-9_]+)\s*[?:]?=", text, re.M))
    return targets, variables


@pytest.mark.parametrize("doc,cmd", [(d, c) for d, c, _ in _all_commands() if c.startswith("make ")])
def test_every_make_target_and_variable_shown_exists(doc: str, cmd: str) -> None:
    targets, variables = _make_targets_and_vars()
    for w in re.sub(r"<[^>]+>", "X", cmd).split()[1:]:
        if w.startswith("-") or w == "...":
            return  # `make -C <peer> ...`: another project's Makefile
        if "=" in w:
            assert w.split("=", 1)[0] in variables, f"{doc}: `{cmd}`: the Makefile has no variable {w.split('=')[0]}"
        else:
            assert w in targets, f"{doc}: `{cmd}`: the Makefile has no target {w!r}"


def _paths() -> list[tuple[str, str]]:
    out = set()
    for p in READMES:
        for span in re.findall(r"`([^`\n]+)`", p.read_text("utf-8")):
            if span.startswith(PATH_PREFIXES) and " " not in span:
                out.add((str(p.relative_to(REPO)), span))
    return sorted(out)


def test_the_readmes_name_paths() -> None:
    assert ("README.md", "crates/sim/data/default.toml") in _paths()


@pytest.mark.parametrize("doc,path", _paths())
def test_every_repository_path_named_exists(doc: str, path: str) -> None:
    if path in EXTERNAL_PATHS or "target" in Path(path).parts:
        return  # another project's, or made by a build or a fuzz run (absent from a fresh clone)
    # `<paper>`, `<target>`: any; `file.py::test`: the file.
    pattern = re.sub(r"<[^>]+>", "*", path.split("::", 1)[0])
    assert glob.glob(str(REPO / pattern)), f"{doc} names `{path}`, which is not in the repository"


def _python_blocks() -> list[tuple[str, int, str]]:
    out = []
    for p in READMES:
        lines = p.read_text("utf-8").splitlines()
        i = 0
        while i < len(lines):
            if lines[i].strip() == "```python":
                j = i + 1
                while not lines[j].startswith("```"):
                    j += 1
                out.append((str(p.relative_to(REPO)), i + 1, "\n".join(lines[i + 1:j])))
                i = j
            i += 1
    return out


@pytest.mark.parametrize("doc,line,code", _python_blocks(), ids=lambda v: str(v) if isinstance(v, int) else "")
def test_every_python_example_calls_what_exists(doc: str, line: int, code: str) -> None:
    """Each Python block compiles, its imports resolve, and every call of an imported module's
    function (``slacknet.run(...)``, ``coflow.shuffle(...)``) names a function that takes the
    keywords the block gives it. The blocks are not run: some need a second machine or the
    coflow trace."""
    import ast
    import importlib
    import importlib.util
    import inspect

    if "slacknet.torch" in code and importlib.util.find_spec("torch") is None:
        pytest.skip(f"{doc}:{line} imports slacknet.torch, which needs PyTorch (make test-torch installs it)")
    tree = ast.parse(code, filename=f"{doc}:{line}")
    names: dict[str, object] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                names[a.asname or a.name] = importlib.import_module(a.name)
        elif isinstance(node, ast.ImportFrom):
            mod = importlib.import_module(node.module or "")
            for a in node.names:
                if not hasattr(mod, a.name):  # a submodule: `from slacknet import coflow`
                    importlib.import_module(f"{node.module}.{a.name}")
                names[a.asname or a.name] = getattr(mod, a.name)
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        f = node.func
        if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and inspect.ismodule(names.get(f.value.id)):
            mod = names[f.value.id]
            if mod.__name__.split(".")[0] != "slacknet":
                continue  # numpy's and the like
            assert hasattr(mod, f.attr), f"{doc}:{line}: {mod.__name__} has no {f.attr}"
            target = getattr(mod, f.attr)
        elif isinstance(f, ast.Name) and f.id in names and not inspect.ismodule(names[f.id]):
            target = names[f.id]
        else:
            continue  # a method of a value: its type is not known without running the block
        params = inspect.signature(target).parameters
        takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
        for kw in node.keywords:
            assert kw.arg is None or takes_any or kw.arg in params, \
                f"{doc}:{line}: {getattr(target, '__qualname__', target)} takes no keyword {kw.arg!r}"


def test_the_readmes_have_python_examples() -> None:
    assert len(_python_blocks()) >= 5


def _scenarios_table() -> str:
    text = (REPO / "README.md").read_text("utf-8")
    start = text.index("### Scenarios")
    return text[start:text.index("### What a run reports", start)]


def test_the_scenarios_table_names_every_kind_and_key() -> None:
    # It omitted the mlt, expresspass and aeolus transports, symmetric_ecmp routing and the
    # switch's credit_queue_pkts and selective_drop_bytes.
    from slacknet import config

    table = _scenarios_table()
    missing = []
    for model in (config.RoutingSpec, config.SwitchSpec, config.HostSpec, config.RunSpec, config.TimeseriesSpec,
                  config.MltTransport, config.ExpressPassTransport, config.AeolusTransport, config.AtpTransport,
                  config.PfabricTransport, config.UdpTransport, config.DctcpTransport, config.PowerTcpTransport):
        for name, f in model.model_fields.items():
            key = f.alias or name
            # `key`, `key = value` or a table header naming it.
            if key != "kind" and not re.search(rf"`{key}( = [^`]*)?`|\.{key}\]", table):
                missing.append(f"{model.__name__}.{key}")
    for kind in ("dctcp", "newreno", "power_tcp", "udp", "atp", "pfabric", "mlt", "expresspass", "aeolus"):
        if f'"{kind}"' not in table:
            missing.append(f"transport kind {kind}")
    for mode in ("ecmp", "spray", "flow_index", "symmetric_ecmp"):
        if f'"{mode}"' not in table:
            missing.append(f"routing mode {mode}")
    assert not missing, f"the README's Scenarios table does not name: {missing}"
