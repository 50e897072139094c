"""The HTML shell of a report: inline CSS and a little inline JavaScript, nothing fetched.

A Content-Security-Policy meta tag forbids every external load, so even a report opened from an
untrusted run file cannot reach the network.
"""

from __future__ import annotations

from covrag.report.svg import esc
from covrag.version import __version__

CSP = (
    "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; "
    "img-src data:; base-uri 'none'; form-action 'none'"
)

CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;color:#1d1d1f;
 background:#fafafa}
header{background:#1f3a5f;color:#fff;padding:14px 24px}
header h1{margin:0;font-size:20px}
header p{margin:4px 0 0;opacity:.85}
main{padding:8px 24px 40px;max-width:1200px}
section.topic,section.block{background:#fff;border:1px solid #ddd;border-radius:6px;
 padding:12px 18px;margin:16px 0}
h2{font-size:17px;margin:6px 0 10px}
h3{font-size:15px;margin:18px 0 6px}
table{border-collapse:collapse;margin:6px 0}
th,td{border-bottom:1px solid #e6e6e6;padding:4px 8px;text-align:left;vertical-align:top}
th{background:#f3f5f8;font-weight:600}
td.num{text-align:right;font-variant-numeric:tabular-nums}
.muted{color:#666}
.tag{display:inline-block;border-radius:3px;padding:0 5px;margin:1px 2px;font-size:12px;
 background:#e3edf7}
.tag.exclude{background:#fde0e0;color:#8a1c1c}
.tag.uncovered{background:#fff0c2}
.passages li{margin:4px 0;padding:4px 6px;border-radius:4px}
.passages li.selected{background:#fff8dc}
.passages li:target,.answer a:target{outline:2px solid #e69f00}
.pid{font-family:ui-monospace,Menlo,monospace;font-size:12px;color:#555}
.rank{font-weight:bold;color:#1f3a5f}
.heatmap text,.chart text,.scale text{font:11px system-ui,sans-serif}
.heatmap a text.row{fill:#1f3a5f}
.figure{overflow-x:auto}
.answer p{margin:4px 0}
.answer a.cite,.answer-by-aspect a.cite{text-decoration:none;font-size:12px;vertical-align:super}
.answer-by-aspect td{vertical-align:top}.answer-by-aspect td p{margin:0}
.answer-by-aspect .aspect-cell{width:28%}.answer-by-aspect ul.cited{margin:0;padding-left:16px}
.answer-by-aspect tr.framing td{background:#fffbea}
.legend span.swatch{display:inline-block;width:18px;height:3px;margin:0 4px 3px 10px;
 vertical-align:middle}
.legend span.swatch.oracle{border-top:3px dashed #111;height:0}
.charts{display:flex;flex-wrap:wrap;gap:10px}
nav select{font-size:14px;padding:2px}
.support-panel{display:none;border:1px solid #e69f00;border-radius:6px;padding:6px 12px;
 margin:8px 0;background:#fffdf5}
.support-panel:target{display:block}
.support-panel blockquote{margin:4px 0 6px 8px;white-space:pre-wrap}
mark{background:#ffe066;padding:0 1px}
a.cite.supported{font-weight:bold}
.changes li.added{color:#1b5e20}.changes li.removed{color:#8a1c1c}
pre.feedback{white-space:pre-wrap;background:#f6f6f6;padding:6px;margin:4px 0;font-size:12px}
ol.passes li.pass{margin:8px 0}
.filters{background:#f4f0fa;padding:4px 8px;border-radius:4px}
"""

# Shows one topic at a time when there are several (all stay visible without JavaScript), and
# switches to the topic that holds a linked passage.
JS = """
(function(){
  var picker=document.getElementById('topic-picker');
  var topics=Array.prototype.slice.call(document.querySelectorAll('section.topic'));
  function show(id){topics.forEach(function(t){t.hidden=(t.id!==id);});
    if(picker){picker.value=id;}}
  function follow(){var h=decodeURIComponent(location.hash.slice(1));
    var el=h?document.getElementById(h):null;var t=el?el.closest('section.topic'):null;
    if(t){show(t.id);el.scrollIntoView();}}
  if(picker&&topics.length){picker.addEventListener('change',function(){show(picker.value);});
    show(topics[0].id);window.addEventListener('hashchange',follow);follow();}
})();
"""


def page(title: str, subtitle: str, body: str) -> str:
    """A complete, self-contained HTML document."""
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f'<meta name="generator" content="covrag {esc(__version__)}">'
        f"<title>{esc(title)}</title><style>{CSS}</style></head><body>"
        f"<header><h1>{esc(title)}</h1><p>{esc(subtitle)}</p></header>"
        f"<main>{body}</main><script>{JS}</script></body></html>\n"
    )
