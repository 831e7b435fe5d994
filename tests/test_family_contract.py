"""The family contract (harness/families/base.py::Family, docs/architecture.md "Adding a family"): every
family gives the required members and no public member the contract does not declare; the shared stages
call the optional hooks without probing for them; each case-id prefix is one family's."""

import ast
import inspect
from pathlib import Path

import pytest

from harness.anchors import has_probe
from harness.families import base
from harness.families.base import HOOKS, REQUIRED, Family, overrides
from harness.registry import FAMILIES, overlapping_prefixes, parse_case_id

ROOT = Path(__file__).resolve().parent.parent
FAMILY_NAMES = sorted(FAMILIES)


def declared() -> set[str]:
    """The members the Family class declares: its annotated attributes and its public methods and values."""
    return set(Family.__annotations__) | {name for name in vars(Family) if not name.startswith("_")}


def test_the_contract_names_exactly_what_the_class_declares():
    assert len(set(REQUIRED)) == len(REQUIRED) and len(set(HOOKS)) == len(HOOKS) and not set(REQUIRED) & set(HOOKS)
    assert set(REQUIRED) | set(HOOKS) == declared()
    abstract = Family.__abstractmethods__
    assert {name for name in REQUIRED if callable(vars(Family).get(name))} == abstract
    assert {name for name in REQUIRED if name not in abstract} == {"name", "description", "id_prefixes", "example_id",
                                                                   "template"}
    assert all(hasattr(Family, hook) for hook in HOOKS), "every optional hook has its default on Family"


def test_a_family_without_a_required_method_cannot_be_made():
    class Half(Family):
        name = "half"

    with pytest.raises(TypeError, match="abstract"):
        Half()


@pytest.mark.parametrize("name", FAMILY_NAMES)
def test_every_family_gives_the_required_members(name):
    family = FAMILIES[name]
    assert isinstance(family, Family)
    missing = [member for member in REQUIRED if not hasattr(family, member)]
    assert not missing, f"{name} lacks {missing}"
    assert family.name == name and isinstance(family.description, str) and family.description
    if family.template is None:  # a family of anchors alone: host calls, no probe source
        assert not any(has_probe(case) for case in family.cases()), f"{name} has probes but no template"
    else:
        assert family.template.endswith(".cu.in") and (ROOT / "ptx" / family.template).is_file()
    assert isinstance(family.id_prefixes, tuple) and family.id_prefixes and all(family.id_prefixes)
    assert parse_case_id(family.example_id).family == name


@pytest.mark.parametrize("name", FAMILY_NAMES)
def test_every_public_member_of_a_family_is_in_the_contract(name):
    family = FAMILIES[name]
    public = {member for member in dir(family) if not member.startswith("_")}
    extra = public - set(REQUIRED) - set(HOOKS)
    assert not extra, (f"{name} has public members the Family contract does not declare: {sorted(extra)} (declare "
                       "them in harness/families/base.py, or make them private or module functions)")


def test_the_hooks_a_family_gives_are_told_from_the_defaults():
    for family in FAMILIES.values():
        for hook in HOOKS:
            assert overrides(family, hook) == any(hook in vars(k) for k in type(family).__mro__[:-3])
    with pytest.raises(ValueError):
        overrides(FAMILIES["mma"], "cases")


def _header_expressions(statement: ast.stmt):
    """The expressions a statement holds itself, not those of the statements in its body."""
    skip = {"body", "orelse", "finalbody", "handlers", "decorator_list", "args", "returns", "cases"}
    for field, value in ast.iter_fields(statement):
        if field in skip:
            continue
        for node in value if isinstance(value, list) else [value]:
            if isinstance(node, ast.AST):
                yield node


def probing_statements(source: str) -> list[tuple[int, str]]:
    """(line, hook) for each statement that calls getattr or hasattr and names a hook in a string: a
    stage asking whether a family has a hook instead of calling it."""
    found = []
    for statement in ast.walk(ast.parse(source)):
        if not isinstance(statement, ast.stmt):
            continue
        for expression in _header_expressions(statement):
            nodes = list(ast.walk(expression))
            probes = any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in ("getattr", "hasattr")
                         for n in nodes)
            named = {n.value for n in nodes if isinstance(n, ast.Constant) and n.value in HOOKS}
            if probes and named:
                found += [(statement.lineno, hook) for hook in sorted(named)]
    return found


def test_the_probe_scan_finds_the_old_forms():
    assert probing_statements('model = getattr(family, "model", None)\n') == [(1, "model")]
    assert probing_statements('if hasattr(family, "attach"):\n    family.attach(case, probe, device)\n') == \
        [(1, "attach")]
    assert probing_statements('hooks = [getattr(f, n) for f in F for n in ("paper_case", "paper_row") if hasattr(f, n)]'
                              ) == [(1, "paper_case"), (1, "paper_row")]
    assert probing_statements('x = getattr(body, "columns", [])\nfamily.attach(case, probe, device)\n') == []


def test_no_stage_probes_a_family_for_a_hook():
    """The shared stages call every hook: the defaults on Family say "none". Only base.py may look."""
    package = ROOT / "harness"
    found = [f"{path.relative_to(ROOT)}:{line}: {hook}" for path in sorted(package.rglob("*.py"))
             if path != Path(inspect.getfile(base)) for line, hook in probing_statements(path.read_text())]
    assert not found, "getattr/hasattr of a family hook (call it: Family declares its default): " + ", ".join(found)


def test_no_id_prefix_of_one_family_starts_another_family_s():
    assert overlapping_prefixes(FAMILIES.values()) == []


def test_an_overlap_is_found():
    class Fake:
        def __init__(self, name, prefixes):
            self.name, self.id_prefixes = name, prefixes

    clash = overlapping_prefixes([Fake("a", ("ld.global",)), Fake("b", ("ld.global.ca.", "mma."))])
    assert clash == [("a", "ld.global", "b", "ld.global.ca.")]


def test_every_case_id_is_parsed_by_its_own_family():
    """Ownership by prefix, checked on every id: the family that owns the id's prefix is the case's."""
    wrong = []
    for name, family in FAMILIES.items():
        for case in family.cases():
            owners = [f.name for f in FAMILIES.values() if case.case_id.startswith(f.id_prefixes)]
            if owners != [name] or parse_case_id(case.case_id).family != name:
                wrong.append((case.case_id, name, owners))
    assert not wrong, wrong[:10]


def test_every_familys_layout_column_is_documented():
    """The shared `layout` column means something else in each family (docs/database.md, the table of
    what `layout` holds): each family has its row there, naming every value its cases store (wgmma's
    eight descriptions: the two ends of the range)."""
    text = (Path(__file__).resolve().parent.parent / "docs" / "database.md").read_text()
    rows = {line.split("|")[1].strip().strip("`"): line for line in text.splitlines()
            if line.startswith("| `") and line.count("|") == 5}
    missing = []
    for name, family in FAMILIES.items():
        if name not in rows:
            missing.append((name, "no row"))
            continue
        values = {case.columns().get("layout") for case in family.cases()} - {None}
        if name == "wgmma":
            assert {"K-major, no swizzle", "MN-major, 128B swizzle"} <= values
            values = {"K-major, no swizzle", "MN-major, 128B swizzle"}
        missing += [(name, value) for value in sorted(values) if f"`{value}`" not in rows[name]]
    assert not missing, missing


def test_a_model_that_fits_only_has_no_prior_and_predicts_nothing():
    """FamilyModel declares prior and predict (compare's model_predictions and the simulated GPU call them on every
    family's model): a model that gives only fit answers None to both, which compare shows as NaN."""

    class FitOnly(base.FamilyModel):
        def fit(self, frame, gpu, source):
            return None

    model = FitOnly()
    assert model.prior("H100 SXM5") is None and model.predict(object(), "latency_cycles", None) is None
    assert {"prior", "predict"} <= set(vars(base.FamilyModel)) and base.FamilyModel.__abstractmethods__ == {"fit"}


@pytest.mark.parametrize("name", [n for n in FAMILY_NAMES if FAMILIES[n].model is not None])
def test_every_family_model_is_called_as_compare_and_the_simulated_gpu_call_it(name):
    """prior(gpu) then predict(case, metric, params), as harness/analysis/compare.py and fakegpu.synthetic_interval
    pass them: a number or None for the family's first case, a signature the contract's."""
    family = FAMILIES[name]
    model = family.model
    assert isinstance(model, base.FamilyModel)
    for member in ("prior", "predict"):
        ours = list(inspect.signature(getattr(base.FamilyModel, member)).parameters)[1:]
        assert len(inspect.signature(getattr(model, member)).parameters) == len(ours), (name, member)
    params = model.prior("H100 SXM5")
    for metric in ("issue_interval_cycles", "sm_throughput", "latency_cycles"):
        predicted = model.predict(family.cases()[0], metric, params)
        assert predicted is None or predicted > 0, (name, metric, predicted)


def test_attach_answers_a_declared_attachment_and_the_probe_takes_it_once():
    """Family.attach returns an Attachment (harness/measure/launch.py), which the runner hands to the probe once;
    no family writes the probe's launch state itself. Without a GPU: the default, a family's answers that need
    no allocation (simt's cases without a tensor map, dsmem's cluster sizes), and the Attachment's own checks."""
    from harness.measure.launch import NOTHING_ATTACHED, Attachment, LoadedProbe

    assert Family.attach(FAMILIES["mma"], FAMILIES["mma"].cases()[0], None, None) is NOTHING_ATTACHED
    simt = FAMILIES["simt"]
    assert all(simt.attach(case, None, None) is NOTHING_ATTACHED for case in simt.cases()
               if not getattr(case, "tma", False))
    big = FAMILIES["dsmem"].attach(parse_case_id("ld.shared::cluster.u32.cluster16"), None, None)
    assert isinstance(big, Attachment) and big.runtime_cluster == 16 and big.host_kernels == {}
    with pytest.raises(ValueError, match="not negative"):
        Attachment(runtime_cluster=-1)
    with pytest.raises(ValueError, match="host kernel has no shared memory"):
        Attachment(dynamic_smem={"library": 1024}, host_kernels={"library": lambda out, timing, iters: None})
    probe = object.__new__(LoadedProbe)  # no GPU: the attachment alone
    probe.attached = NOTHING_ATTACHED
    probe.attach(big)
    assert probe.attached is big
    with pytest.raises(Exception, match="one attachment"):
        probe.attach(Attachment())
    state = ("extra_args", "dynamic_smem", "resources", "runtime_cluster", "host_kernels")
    writes = [(path.relative_to(ROOT).as_posix(), name) for path in sorted((ROOT / "harness").rglob("*.py"))
              for name in state if f"probe.{name}" in path.read_text()]
    assert writes == [], "the probe's launch state is the Attachment a family returns"
