"""Build ``.dvc/vega/page.html``, the HTML template ``dvc plots show`` and ``dvc plots diff`` fill
(``.dvc/config``: ``plots.html_template``), with Vega, Vega-Lite and Vega-Embed inlined: DVC's own
page loads them from a CDN and stays blank offline; this one renders anywhere it is opened.

    npm pack vega@5.33.1 vega-lite@5.23.0 vega-embed@6.29.0
    python scripts/vega_page.py vega-5.33.1.tgz vega-lite-5.23.0.tgz vega-embed-6.29.0.tgz

Writes the page and each package's LICENSE (vega's npm package ships none: its repository's
BSD-3-Clause text is kept in ``.dvc/vega/LICENSE-vega``). The template leaves out DVC's
``{scripts}`` placeholder, which DVC fills with the CDN script tags.
"""

from __future__ import annotations

import json
import sys
import tarfile
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / ".dvc" / "vega"
ORDER = ("vega", "vega-lite", "vega-embed")  # vega-lite and vega-embed expect the globals before them

PAGE = """<!DOCTYPE html>
<html>
<head>
<meta charset="utf-8">
{{refresh_tag}}
<title>DVC plots</title>
<!-- Built by scripts/vega_page.py: {versions}, inlined (BSD-3-Clause, .dvc/vega/LICENSE-*) so the
page needs no network. -->
{inline}
<script>/* DVC calls vegaEmbed(id, spec): draw SVG, not canvas, so charts stay sharp when zoomed,
their text can be selected and a test can read their axes */
var vegaEmbed = (function (embed) {{
  return function (el, spec, opts) {{ return embed(el, spec, Object.assign({{renderer: "svg"}}, opts)); }};
}})(vegaEmbed);
</script>
<style>body {{ font-family: sans-serif; }} body > div {{ display: inline-block; margin: 8px; vertical-align: top; }}</style>
</head>
<body>
{{plot_divs}}
</body>
</html>
"""


def _read(tgz: Path) -> tuple[str, str, str, str | None]:
    with tarfile.open(tgz) as tar:
        meta = json.load(tar.extractfile("package/package.json"))
        bundle = tar.extractfile(f"package/build/{meta['name']}.min.js").read().decode("utf-8")
        # the source map is not vendored: a devtools window would otherwise try to fetch it
        bundle = "\n".join(line for line in bundle.splitlines() if not line.startswith("//# sourceMappingURL="))
        names = tar.getnames()
        license_text = tar.extractfile("package/LICENSE").read().decode() if "package/LICENSE" in names else None
    return meta["name"], meta["version"], bundle, license_text


def build(tarballs: list[Path]) -> Path:
    packages = {name: (version, bundle, lic) for name, version, bundle, lic in map(_read, tarballs)}
    if set(packages) != set(ORDER):
        raise SystemExit(f"need the npm tarballs of {', '.join(ORDER)}; got {', '.join(sorted(packages))}")
    scripts = []
    for name in ORDER:
        version, bundle, license_text = packages[name]
        if "</script" in bundle or "{plot_divs}" in bundle or "{refresh_tag}" in bundle or "{scripts}" in bundle:
            raise SystemExit(f"{name}: the bundle holds text the page or DVC's template filling would break on")
        scripts.append(f"<script>/* {name}@{version} */\n{bundle}\n</script>")
        if license_text is not None:
            (OUT / f"LICENSE-{name}").write_text(license_text, encoding="utf-8")
    versions = ", ".join(f"{name}@{packages[name][0]}" for name in ORDER)
    page = OUT / "page.html"
    page.write_text(PAGE.format(versions=versions, inline="\n".join(scripts)), encoding="utf-8")
    return page


if __name__ == "__main__":
    if len(sys.argv) != 4:
        raise SystemExit(__doc__)
    print(build([Path(a) for a in sys.argv[1:]]))
