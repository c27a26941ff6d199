"""Screenshots of the Snakemake HTML report in headless Chromium.

    python docs/report-screenshots/screenshot.py reports/report.html docs/report-screenshots [VIEW...]

Each view is reached by a script appended to a copy of the HTML that calls the report app's
``app.setView`` (the call its own buttons make), then ``chromium --headless --screenshot``.
"""

import json
import subprocess
import sys
from pathlib import Path

report, outdir = Path(sys.argv[1]), Path(sys.argv[2])
outdir.mkdir(parents=True, exist_ok=True)
html = report.read_text()
VIEWS_ALL = {
    # name: (category, subcategory, result file suffix or None, navbar mode)
    "01_uea_full_context_table1": ("UEA", "1. Full context", "tables/table1_uea_main.html", "subcategory"),
    "02_uea_cd_diagram_caption": ("UEA", "1. Full context", "figures/cd_uea.png", "resultinfo"),
    "03_ucr_mcm": ("UCR", "1. Full context", "figures/mcm_ucr.png", "resultinfo"),
    "04_ucr_scatter": ("UCR", "1. Full context", "figures/scatter_ucr.png", "resultinfo"),
    "05_ucr_violin": ("UCR", "1. Full context", "figures/violin_ucr.png", "resultinfo"),
    "06_ucr_fixed_shot_table3": ("UCR", "2. Fixed-shot", "tables/table3_fixed_shot_ucr.html", "resultinfo"),
    "07_uea_scaling_figure": ("UEA", "3. Proportional", "figures/scaling_uea.png", "resultinfo"),
    "08_ucr_cost_figure": ("UCR", "5. Accuracy and cost", "figures/cost_ucr.png", "resultinfo"),
    "09_ucr_cost_table": ("UCR", "5. Accuracy and cost", "tables/table_cost_ucr.html", "subcategory"),
    "10_overview_coverage": ("Overview", "Coverage and missing runs", "overview/coverage.html", "resultinfo"),
    "11_overview_reproduction": (
        "Overview",
        "Reproduction check",
        "reproduction/reproduction.html",
        "resultinfo",
    ),
}
VIEWS = {k: v for k, v in VIEWS_ALL.items() if len(sys.argv) < 4 or k in sys.argv[3:]}
for name, (cat, sub, suffix, mode) in VIEWS.items():
    script = f"""
<script>
setTimeout(function() {{
  var path = Object.keys(results).find(function(k) {{ return k.endsWith({json.dumps(suffix)}); }});
  if (!path) {{ document.title = "MISSING"; return; }}
  var mime = results[path].mime_type;
  app.setView({{navbarMode: {json.dumps(mode)}, category: {json.dumps(cat)}, subcategory: {json.dumps(sub)},
               resultPath: path, contentPath: results[path].data_uri,
               content: mime === "text/html" ? "html" : "img"}});
}}, 300);
</script>
"""
    page = outdir / f".{name}.html"
    i = html.rindex("</body>")
    page.write_text(html[:i] + script + html[i:])
    png = outdir / f"{name}.png"
    subprocess.run(
        [
            "chromium",
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            "--hide-scrollbars",
            f"--screenshot={png}",
            "--window-size=1600,1000",
            "--virtual-time-budget=10000",
            page.as_uri(),
        ],
        check=True,
        capture_output=True,
        timeout=180,
    )
    page.unlink()
    print(png, png.stat().st_size)
