"""The repository itself: nothing tracked is silently ignored, and every path the docs and comments
name exists (issue 24)."""

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# A repository path as docs and comments write it: harness/..., ptx/..., scripts/..., tests/..., docs/...
# (a path with a placeholder, such as reports/<gpu>-<date>-run<N>/ or schema_v{n}.db, is a pattern: skipped)
PATH = re.compile(r"(?<![\w./-])((?:harness|ptx|scripts|tests|docs|reports)/[\w./<>*{}-]*[\w>}*])")
PLACEHOLDER = re.compile(r"[<>*{}]")
NOT_IN_THE_TREE = {"harness/ptx"}  # where the wheel puts ptx/ (pyproject.toml's force-include)


def tracked() -> list[str]:
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    return subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()


def test_no_tracked_directory_is_ignored():
    """A pattern such as `build/` would match harness/build/: a new file there would never be committed."""
    folders = sorted({str(Path(f).parent) for f in tracked()} - {"."})
    ignored = subprocess.run(["git", "check-ignore", "--no-index", "--stdin"], cwd=ROOT, input="\n".join(
        f"{folder}/" for folder in folders), capture_output=True, text=True).stdout.split()
    assert ignored == [], f"tracked folders matched by .gitignore: {ignored}"


def test_every_path_named_in_docs_and_comments_exists():
    files = [f for f in tracked() if f.endswith((".md", ".py", ".cuh", ".in", ".sh", ".sbatch", ".toml", ".txt"))
             and not f.startswith("reports/")]
    missing = sorted({(match, name) for name in files for match in PATH.findall((ROOT / name).read_text(errors="replace"))
                      if match not in NOT_IN_THE_TREE and not PLACEHOLDER.search(match) and not (ROOT / match).exists()})
    assert missing == [], missing


MARKDOWN_LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


def test_every_link_and_image_in_the_readme_and_docs_exists():
    """Relative links and images of README.md, CHANGELOG.md and docs/*.md resolve to files (issue 25)."""
    pages = [ROOT / "README.md", ROOT / "CHANGELOG.md", *sorted((ROOT / "docs").glob("*.md"))]
    missing = []
    for page in pages:
        for target in MARKDOWN_LINK.findall(page.read_text()):
            if re.match(r"[a-z]+:", target) or target.startswith("#"):
                continue
            if not (page.parent / target.split("#", 1)[0]).exists():
                missing.append((page.name, target))
    assert missing == []


def test_the_readme_is_a_manual_not_a_lab_notebook():
    """At most about 12 KB (issue 25): what it is, quick start, findings, suites, commands, the results
    columns, Python, troubleshooting; the rest is in docs/ and the history in CHANGELOG.md."""
    text = (ROOT / "README.md").read_text()
    assert len(text.encode()) <= 12 * 1024
    for heading in ("## Quick start", "## Key findings", "## Suites", "## Commands", "## The `results` view",
                    "## Python", "## When something goes wrong"):
        assert heading in text
    assert "https://arxiv.org/abs/2402.13499" in text and "https://arxiv.org/abs/2501.12084" in text


def test_the_shipped_reports_name_no_folder_of_the_machine_that_made_them():
    """Reports and the site show a command as `bench ...` with file names, a database by its file name
    (issue 25): no absolute path of the machine that generated them."""
    pages = sorted((ROOT / "reports").glob("*/report.md")) + sorted((ROOT / "reports").glob("*/report.html"))
    pages += [ROOT / "reports" / "index.html"]
    found = [(p.relative_to(ROOT).as_posix(), m) for p in pages if p.exists()
             for m in re.findall(r"(?:/work|/tmp|/root|/home)/[\w./-]+", p.read_text())]
    assert pages and found == []


def test_the_layout_doc_names_every_package_module_and_template():
    """Issue 46, item 10: docs/layout.md drifted (a family, half of db/, the migrations' count left out). Every
    package of harness/ and of its packages (as `name/`), every module of each (by its name: family packages by their
    folder), every template and header of ptx/, and the migrations' newest schema number are named in it; every file
    of ptx/ in docs/architecture.md too."""
    import re

    text = (ROOT / "docs" / "layout.md").read_text()
    words = set(re.findall(r"[A-Za-z_][A-Za-z0-9_.]*", text))
    missing = []
    harness = ROOT / "harness"
    for package in sorted(p for p in harness.iterdir() if (p / "__init__.py").exists()):
        if f"{package.name}/" not in text:
            missing.append(f"{package.name}/")
        if package.name in ("families", "migrations"):
            continue  # a family's modules are its own business; the migrations are counted below
        missing += [f"{package.name}/{m.stem}" for m in sorted(package.glob("*.py"))
                    if m.stem != "__init__" and m.stem not in words]
        for inner in sorted(p for p in package.iterdir() if (p / "__init__.py").exists()):  # measure/methods/
            missing += [f"{package.name}/{inner.name}/"] if f"{inner.name}/" not in text else []
            missing += [f"{package.name}/{inner.name}/{m.stem}" for m in sorted(inner.glob("*.py"))
                        if m.stem != "__init__" and m.stem not in words]
    for family in sorted((harness / "families").iterdir()):
        if (family / "__init__.py").exists() and f"{family.name}/" not in text:
            missing.append(f"families/{family.name}/")
    missing += [f"harness/{m.stem}" for m in sorted(harness.glob("*.py"))
                if m.stem not in ("__init__", "__main__") and m.stem not in words]
    missing += [f"ptx/{p.name}" for p in sorted((ROOT / "ptx").iterdir()) if p.name not in text]
    architecture = (ROOT / "docs" / "architecture.md").read_text()
    missing += [f"architecture.md: ptx/{p.name}" for p in sorted((ROOT / "ptx").iterdir()) if p.name not in architecture]
    newest = max(int(p.name[:4]) for p in (harness / "migrations" / "versions").glob("[0-9]*.py"))
    if f"schema 1..{newest}" not in text:
        missing.append(f"schema 1..{newest}")
    assert not missing, missing


def test_the_suite_counts_the_docs_state_are_the_suites(tmp_path):
    """Issue 46, item 10: docs/suites.md's case counts were typed by hand and drifted (`wgmma-all` "1092 cases" for
    2356, `gemm-full` 129 for 189, `gemm-fp8` 37 for 97). Every count it gives a suite by name is the suite's:
    "Suite `x` (N cases", "`x` (N)", "`x` (K kernels ...; N cases)", "N kernel cases" (the cases with a probe: the
    library's anchors apart) and "`x` N" in a suite's parenthesis."""
    import re

    from harness.anchors import has_probe
    from harness.suites import SUITES, suite_cases

    text = " ".join((ROOT / "docs" / "suites.md").read_text().split())
    stated = []  # (suite, count, what is counted)
    for m in re.finditer(r"`([\w-]+)` \((\d+) (cases|kernel cases)\b", text):
        stated.append((m.group(1), int(m.group(2)), m.group(3)))
    stated += [(m.group(1), int(m.group(3)), "cases")
               for m in re.finditer(r"`([\w-]+)` \((\d+) kernels[^)]*?; (\d+) cases", text)]
    stated += [(m.group(1), int(m.group(2)), "cases") for m in re.finditer(r"`([\w-]+)` \((\d+)\)", text)]
    for m in re.finditer(r"Suite `[\w-]+` \(([^)]*)\)", text):
        stated += [(n.group(1), int(n.group(2)), "cases") for n in re.finditer(r"`([\w-]+)` (\d+)\b", m.group(1))]
    stated = [s for s in stated if s[0] in SUITES]
    assert len(stated) >= 30, stated
    wrong = []
    for suite, count, what in stated:
        cases = suite_cases(suite)
        actual = len(cases) if what == "cases" else sum(1 for c in cases if has_probe(c))
        if actual != count:
            wrong.append(f"{suite}: {count} {what} stated, {actual} in the suite")
    assert not wrong, wrong
