"""The house's layers (docs/architecture.md, "Layers"): every module of harness/ sits on one, imports only
from its own layer or below, and no import circle exists, function-level imports included. Read from
the source with `ast`, so a new module or import is checked the day it is written."""

import ast
from fnmatch import fnmatchcase
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "harness"

# Bottom first. A module matches the first pattern that names it (fnmatch on the dotted name).
LAYERS = [
    ("vocabulary", ["harness.version", "harness.errors", "harness.dtypes", "harness.sparsity", "harness.stats", "harness.queueing", "harness.l2lines", "harness.smgroups", "harness.layouts",
                    "harness.swizzles", "harness.smembanks", "harness.cells", "harness.texttable",
                    "harness.output", "harness.environment", "harness.spec", "harness.datasheets", "harness.paper",
                    "harness.seed_chapter", "harness.metrics", "harness.verdicts", "harness.plotting"]),
    ("build", ["harness.build", "harness.build.*"]),
    ("measurement vocabulary", ["harness.families.base", "harness.families.probes", "harness.families.references",
                                "harness.families.commands", "harness.families.models", "harness.families.pipeline",
                                "harness.measure", "harness.measure.*", "harness.tensormaps", "harness.anchors", "harness.anchors.*"]),
    ("store", ["harness.provenance", "harness.migrations", "harness.migrations.*", "harness.db", "harness.db.*"]),
    ("families", ["harness.families", "harness.families.*"]),
    ("registry", ["harness.registry", "harness.published", "harness.suites"]),
    ("orchestration", ["harness.orchestration", "harness.orchestration.*", "harness.analysis", "harness.analysis.*"]),
    ("face", ["harness", "harness.cli", "harness.cli.*", "harness.__main__"]),
]


def modules() -> dict[str, Path]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


def imports(name: str, path: Path, known: dict) -> set[str]:
    """The modules of harness/ that `name` imports anywhere in its source. `from P import x` names the
    module P.x where that is a module, else P itself (x is defined in P)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names if alias.name in known}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            subs = [f"{base}.{alias.name}" for alias in node.names]
            found |= {sub for sub in subs if sub in known}
            if any(sub not in known for sub in subs) and base in known:
                found.add(base)
    found.discard(name)
    return found


def layer_of(name: str) -> int:
    for number, (_, patterns) in enumerate(LAYERS):
        if any(fnmatchcase(name, pattern) for pattern in patterns):
            return number
    raise AssertionError(f"{name} is on no layer: add it to LAYERS here and to docs/architecture.md")


def graph() -> dict[str, set[str]]:
    known = modules()
    return {name: imports(name, path, known) for name, path in known.items()}


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index, low, on_stack, stack, found, counter = {}, {}, set(), [], [], [0]
    for root in edges:
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
            elif child not in index:
                index[child] = low[child] = counter[0]
                counter[0] += 1
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(sorted(edges[child]))))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return found


def test_every_module_is_on_a_layer():
    unplaced = []
    for name in modules():
        try:
            layer_of(name)
        except AssertionError:
            unplaced.append(name)
    assert not unplaced, f"modules on no layer (add them to LAYERS): {unplaced}"


def test_no_module_imports_from_a_higher_layer():
    upward = sorted(f"{a} ({LAYERS[layer_of(a)][0]}) imports {b} ({LAYERS[layer_of(b)][0]})"
                    for a, targets in graph().items() for b in targets if layer_of(b) > layer_of(a))
    assert not upward, "imports that run up:\n" + "\n".join(upward)


def test_there_is_no_import_circle():
    assert circles(graph()) == []


def test_the_checker_sees_a_circle_and_an_upward_import(tmp_path):
    """The rules fail where they should: a made-up circle is found, and a module of the vocabulary
    that imported the CLI or a family would be reported as importing upward."""
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert layer_of("harness.spec") < layer_of("harness.families.wgmma") < layer_of("harness.registry") \
        < layer_of("harness.orchestration.run") < layer_of("harness.cli")
    fake = tmp_path / "spec.py"
    fake.write_text("from harness.cli import cli\nfrom harness.families.wgmma import model\n"
                    "def late():\n    from harness import registry\n")
    found = imports("harness.spec", fake, modules())
    assert found == {"harness.cli", "harness.families.wgmma.model", "harness.registry"}
    assert all(layer_of(target) > layer_of("harness.spec") for target in found)


def test_only_the_registry_names_a_family_package():
    """A family is a folder (docs/architecture.md, "Families as plug-ins"): the shared stages, the CLI
    included, reach a family through the registry's Family objects, never by importing its package."""
    named = sorted(f"{a} imports {b}" for a, targets in graph().items()
                   if not a.startswith("harness.families.") and a != "harness.registry"
                   for b in targets if b.startswith("harness.families.") and b != "harness.families.base")
    assert not named, "\n".join(named)


def test_a_family_imports_no_other_family():
    """What two families share (the L2 map's lines, read by a plain load and by a TMA copy) lives below them
    (harness/l2lines.py), not in one family that the other imports."""
    def family(name: str) -> str | None:
        parts = name.split(".")
        return (parts[2] if len(parts) > 2 and parts[:2] == ["harness", "families"]
                and parts[2] not in ("base", "probes", "references", "commands", "models", "pipeline", "chains")
                else None)

    crossing = sorted(f"{a} imports {b}" for a, targets in graph().items() if family(a)
                      for b in targets if family(b) and family(b) != family(a))
    assert not crossing, "\n".join(crossing)


def test_the_folders_import_each_other_in_one_direction():
    """Drawn a folder to a room (harness/measure/, db/, families/, ...), the house has no circle either:
    no folder holds modules of two layers with a third folder between them (measure/ once held both
    the measurement vocabulary and the orchestration, now orchestration/)."""
    def room(name: str) -> str:
        parts = name.split(".")
        return ".".join(parts[:2]) if len(parts) > 2 or (PACKAGE / parts[-1]).is_dir() else name

    folders: dict[str, set[str]] = {}
    for a, targets in graph().items():
        folders.setdefault(room(a), set()).update(room(b) for b in targets if room(b) != room(a))
    for targets in list(folders.values()):
        for b in targets:
            folders.setdefault(b, set())
    assert circles(folders) == []
