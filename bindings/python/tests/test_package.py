"""What the distribution ships: the installed wheel and a freshly built
sdist carry SECURITY.md, which the README links to, and every relative link
in the README resolves inside the sdist (where the README sits at the top)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tarfile
from importlib import metadata
from pathlib import Path, PurePosixPath

import pytest
from conftest import ROOT

PACKAGE = ROOT / "bindings" / "python"


def readme_links() -> list[str]:
    """The README's relative link targets (without #anchors)."""
    text = (PACKAGE / "README.md").read_text()
    targets = [m.group(1) for m in re.finditer(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text)]
    return [t for t in targets if not re.match(r"^[a-z]+:", t)]


def test_the_wheel_ships_security_md_as_the_repository_has_it() -> None:
    files = {str(f) for f in metadata.files("libwaitfor") or []}
    assert "waitfor/SECURITY.md" in files, sorted(files)
    shipped = metadata.distribution("libwaitfor").locate_file("waitfor/SECURITY.md")
    assert Path(str(shipped)).read_text() == (ROOT / "SECURITY.md").read_text(), (
        "bindings/python/python/waitfor/SECURITY.md differs from SECURITY.md: copy it again"
    )


def test_the_sdist_ships_security_md_and_every_readme_link_resolves_in_it(tmp_path: Path) -> None:
    maturin = shutil.which("maturin", path=str(Path(sys.executable).parent))
    if maturin is None:
        pytest.skip("maturin is not installed next to this interpreter")
    subprocess.run([maturin, "sdist", "--out", str(tmp_path)], cwd=PACKAGE, check=True, capture_output=True)
    (sdist,) = tmp_path.glob("libwaitfor-*.tar.gz")
    with tarfile.open(sdist) as tar:
        names = {PurePosixPath(*PurePosixPath(n).parts[1:]) for n in tar.getnames()}
    assert PurePosixPath("python/waitfor/SECURITY.md") in names
    links = readme_links()
    assert "python/waitfor/SECURITY.md" in links
    for target in links:
        assert PurePosixPath(target) in names, f"README links to {target}, which the sdist lacks"
