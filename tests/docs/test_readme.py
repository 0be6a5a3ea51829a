"""The README stays an entry point: short, and linking every page of the docs site."""

import re

from tests.docs.blocks import ROOT, pages


def test_readme_is_short_and_links_every_page():
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 150, "README.md grew past 150 lines: move the detail to docs/"
    linked = set(re.findall(r"\]\((docs/[\w/-]+\.md)\)", readme))
    site = {str(p.relative_to(ROOT)) for p in pages()[1:]}
    assert site - linked == set(), f"pages the README does not link: {sorted(site - linked)}"
