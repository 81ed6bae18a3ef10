// @ts-check
// Styles of the split report, scoped under .nnx-lab-split-view. Same theme variables as the
// viewer (JupyterLab's, then VS Code's, then light defaults), so it follows light and dark themes.

import { filterColor } from "../shared/colors.js";
import { columnPickerCss } from "../shared/fit.js";
import { ROW_HEIGHT, THEME, darkCss, keepEndCss, panelFrameCss } from "../shared/styles.js";

const { FG, MUTED, FAINT, BG, BG2, BORDER, ACCENT, ERROR, WARN, STRIPE, HOVER, FONT, MONO } = THEME;
const WARN_TINT = "rgba(245,124,0,0.13)";
// The remainder (Variables no filter matched: nnx.split raises for them) in the error colour.
const REST_TINT = "rgba(229,57,53,0.12)";
const REST_TINT_STRONG = "rgba(229,57,53,0.24)";

/** Per-filter colour variables: --fc (the colour), --fct (a faint tint), --fca (a stronger one). */
export function filterCss(count) {
  const R = ".nnx-lab-split-view";
  const out = [];
  for (let i = 0; i < count; i++) {
    out.push(`${R} .f-${i}{--fc:${filterColor(i)};--fct:${filterColor(i, 0.07)};--fca:${filterColor(i, 0.2)}}`);
    out.push(darkCss(`${R} .f-${i}`, `--fc:${filterColor(i, 1, true)};--fca:${filterColor(i, 0.12)};`));
  }
  return out.join("\n");
}

export function splitCss() {
  const R = ".nnx-lab-split-view";
  return `${panelFrameCss(R, ["button"])}
${R} .nnx-split-head{display:flex;flex-wrap:wrap;align-items:baseline;gap:2px 6px;margin-bottom:5px}
${R} .nnx-split-head .root{font-weight:600}
${R} .nnx-split-head .sep{color:${FAINT}}
${R} .nnx-split-head .dim{color:${MUTED}}
${R} .nnx-split-code{display:flex;align-items:stretch;gap:0;margin:4px 0;border:1px solid ${BORDER};
  border-radius:3px;background:${BG2};max-width:100%}
${R} .nnx-split-code code{flex:1 1 auto;min-width:0;font-family:${MONO};font-size:12px;padding:4px 8px;
  white-space:pre-wrap;overflow-wrap:anywhere;color:${FG};background:transparent}
${R} .nnx-split-copy{flex:none;border:0;border-left:1px solid ${BORDER};background:${BG};padding:0 10px;
  cursor:pointer;border-radius:0 3px 3px 0;color:${MUTED};min-width:64px}
${R} .nnx-split-copy:hover{color:${ACCENT}}
${R} .nnx-split-copy[data-state="done"]{color:${ACCENT}}
${R} ul.nnx-split-problems{list-style:none;margin:4px 0;padding:3px 8px;border:1px solid ${WARN};
  border-left-width:4px;border-radius:3px;background:${WARN_TINT}}
${R} ul.nnx-split-problems li{margin:1px 0;overflow-wrap:anywhere}
${R} ul.nnx-split-problems li:not(.more)::before{content:"\\26A0";color:${WARN};font-weight:700;margin-right:6px}
${R} ul.nnx-split-problems li.more button{border:0;background:none;padding:0;color:${ACCENT};cursor:pointer}
${R} ul.nnx-split-problems li.more button:hover{text-decoration:underline}
${R} .nnx-split-showing{color:${MUTED}}
${R} .nnx-split-showing-row{display:flex;flex-wrap:wrap;align-items:center;justify-content:space-between;gap:4px 8px;
  margin:4px 0 3px}${columnPickerCss(R, THEME)}
${R} .nnx-scroll{position:relative;max-height:420px;overflow:auto;border:1px solid ${BORDER};border-radius:3px}
${R} table.nnx-split-table{border-collapse:separate;border-spacing:0;table-layout:fixed;width:100%}
${R} th{position:sticky;top:0;z-index:2;background:${BG2};color:${FG};font-weight:600;text-align:left;
  padding:2px 6px;border-bottom:1px solid ${BORDER};white-space:nowrap;overflow:hidden;
  text-overflow:ellipsis;user-select:none;vertical-align:bottom}
${R} th[data-col="path"]{left:0;z-index:3}
${R} th.num{text-align:right}
${R} th.nnx-split-filter,${R} th.nnx-split-rest{text-align:center;cursor:pointer;font-weight:400;
  border-top:3px solid var(--fc);background-image:linear-gradient(var(--fct),var(--fct))}
${R} .nnx-split-rest{--fc:${ERROR};--fct:${REST_TINT};--fca:${REST_TINT_STRONG}}
${R} th.nnx-split-filter:hover,${R} th.nnx-split-rest:hover{background-image:linear-gradient(var(--fca),var(--fca))}
${R} th[aria-pressed="true"]{background-image:linear-gradient(var(--fca),var(--fca));box-shadow:inset 0 -3px 0 var(--fc)}
${R} th .nm{font-weight:700;color:color-mix(in srgb,var(--fc) 58%,#000);overflow:hidden;text-overflow:ellipsis}
${darkCss(`${R} th .nm`, "color:var(--fc)")}
${R} th .lb{font-family:${MONO};font-size:11px;color:${MUTED};white-space:normal;overflow-wrap:anywhere;
  display:-webkit-box;-webkit-box-orient:vertical;-webkit-line-clamp:2;overflow:hidden;line-height:1.3}
${R} th .ct{font-size:11px;color:${FG};overflow:hidden;text-overflow:ellipsis}
${R} td{height:${ROW_HEIGHT}px;padding:0 6px;line-height:${ROW_HEIGHT}px;white-space:nowrap;overflow:hidden;
  text-overflow:ellipsis;vertical-align:middle}
${R} td.num{text-align:right}
${R} td.c-path{position:sticky;left:0;z-index:1;background-color:${BG}}
${keepEndCss(R, "td.c-path")}
${R} .c-path,${R} .c-shape,${R} .c-dtype{font-family:${MONO};font-size:11.5px}
${R} .c-path .alias{color:${MUTED};margin-left:6px;font-family:${FONT};font-size:11px}
${R} .c-type .chip{display:inline-flex;align-items:center;gap:4px;max-width:100%}
${R} .c-type .chip .t{overflow:hidden;text-overflow:ellipsis}
${R} .nnx-dot{display:inline-block;width:8px;height:8px;border-radius:2px;flex:none}
${R} td.fc,${R} td.c-rest{text-align:center;padding:0;background-image:linear-gradient(var(--fct),var(--fct))}
${R} td.c-rest{--fct:${REST_TINT}}
${R} .nnx-mark{display:inline-block;width:11px;height:11px;border-radius:50%;vertical-align:middle}
${R} .nnx-mark.taken{background:var(--fc)}
${R} .nnx-mark.shadowed{border:2px solid var(--fc);background:transparent}
${R} .nnx-mark.rest{background:${ERROR}}
${R} tr.nnx-split-row.odd td:not(.fc):not(.c-rest){background-image:linear-gradient(${STRIPE},${STRIPE})}
${R} tr.nnx-split-row.remainder td:not(.fc){background-image:linear-gradient(${REST_TINT},${REST_TINT})}
${R} tr.nnx-split-row.remainder td.c-path{box-shadow:inset 3px 0 0 ${ERROR}}
${R} .nnx-split-head .rest{color:${ERROR};font-weight:600}
${R} tr.nnx-split-row:hover td{box-shadow:inset 0 -1px 0 ${HOVER},inset 0 1px 0 ${HOVER}}
${R} tr.nnx-split-row:hover td.c-path{background-image:linear-gradient(${HOVER},${HOVER})}
${R} tr.nnx-spacer td{padding:0;height:0;line-height:0;border:0;background:none}
${R} .nnx-empty{padding:14px;color:${MUTED};text-align:center}
`;
}
