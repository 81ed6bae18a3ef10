// @ts-check
// Styles of the comparison widget, scoped under .nnx-lab-compare: the viewer's theme (JupyterLab's
// variables, then VS Code's, then light defaults) and its table look.

import { columnPickerCss } from "../shared/fit.js";
import { ROW_HEIGHT, THEME, panelFrameCss } from "../shared/styles.js";
import { COLUMNS } from "./data.js";

const { FG, MUTED, FAINT, BG, BG2, BORDER, ACCENT, ERROR, OK, WARN, STRIPE, HOVER, FONT, MONO } = THEME;
const PROBLEM_TINT = "rgba(229,57,53,0.10)";

export function compareCss() {
  const R = ".nnx-lab-compare";
  const widths = COLUMNS.filter((c) => c.width)
    .map((c) => `${R} col.k-${c.id}{width:${c.width}px}`)
    .join("\n");
  return `${panelFrameCss(R, ["button", "input"])}
${widths}
${R} .nnx-cmp-verdict{font-weight:600;margin-bottom:4px;overflow-wrap:anywhere}
${R} .nnx-cmp-verdict .nnx-cmp-sides{color:${MUTED};font-weight:400}
${R} .nnx-cmp-verdict .nnx-cmp-tol{color:${MUTED};font-weight:400}
${R} .nnx-cmp-mark{display:inline-block;width:16px;text-align:center;margin-right:4px}
${R} .nnx-cmp-mark.ok,${R} .nnx-cmp-mark.same{color:${OK}}
${R} .nnx-cmp-mark.bad{color:${ERROR}}
${R} .nnx-cmp-verdict.bad{color:${ERROR}}
${R} .nnx-cmp-bar-row{display:flex;flex-wrap:wrap;align-items:center;gap:4px 10px;margin:4px 0}
${R} .nnx-cmp-filter{width:200px;padding:1px 6px;border:1px solid ${BORDER};border-radius:3px;background:${BG}}
${R} .nnx-cmp-chips{display:flex;flex-wrap:wrap;gap:4px}
${R} .nnx-cmp-chip{border:1px solid ${BORDER};border-radius:10px;background:${BG2};padding:0 8px;cursor:pointer}
${R} .nnx-cmp-chip.problem{border-color:${ERROR};color:${ERROR}}
${R} .nnx-cmp-chip[aria-pressed="true"]{background:${ACCENT};color:${BG};border-color:${ACCENT}}
${R} .nnx-cmp-tool{border:1px solid ${BORDER};border-radius:3px;background:${BG2};padding:0 8px;cursor:pointer}
${R} .nnx-cmp-showing{color:${MUTED}}
${R} .nnx-cmp-bar-end{margin-left:auto}${columnPickerCss(R, THEME)}
${R} .nnx-scroll{position:relative;max-height:420px;overflow:auto;border:1px solid ${BORDER};border-radius:3px}
${R} table.nnx-cmp-table{border-collapse:separate;border-spacing:0;table-layout:fixed;width:100%}
${R} th{position:sticky;top:0;z-index:2;background:${BG2};color:${FG};font-weight:600;text-align:left;
  padding:2px 6px;border-bottom:1px solid ${BORDER};overflow:hidden;vertical-align:bottom;line-height:1.25;
  user-select:none;cursor:pointer}
${R} th[data-col="path"]{left:0;z-index:3}
${R} th.num{text-align:right}
${R} th .arrow{margin-left:3px;color:${ACCENT}}
${R} td{height:${ROW_HEIGHT}px;padding:0 6px;line-height:${ROW_HEIGHT}px;white-space:nowrap;overflow:hidden;
  text-overflow:ellipsis;vertical-align:middle}
${R} td.num{text-align:right}
${R} td.c-path{position:sticky;left:0;z-index:1;background-color:${BG}}
${R} .c-path,${R} .c-shape,${R} .c-dtype{font-family:${MONO};font-size:11.5px}
${R} .c-path .from{color:${MUTED};margin-left:6px}
${R} .c-path .tog{display:inline-block;width:14px;color:${MUTED}}
${R} tr.nnx-cmp-module{cursor:pointer}
${R} tr.nnx-cmp-module td{font-weight:600}
${R} tr.nnx-cmp-module td.c-status,${R} tr.nnx-cmp-module td.c-note{font-weight:400;color:${MUTED}}
${R} td.c-rel_change{position:relative}
${R} .nnx-cmp-bar{position:absolute;left:4px;right:4px;bottom:2px;height:3px;background:${BG2}}
${R} .nnx-cmp-bar>span{position:absolute;left:0;top:0;bottom:0;background:${WARN}}
${R} td.bad,${R} .c-status.bad{color:${ERROR}}
${R} .st{border-radius:3px;padding:0 4px}
${R} .st-identical,${R} .st-equal{color:${OK}}
${R} .st.st-changed,${R} .st.st-nan{color:${WARN};font-weight:600}
${R} tr.problem td{background-image:linear-gradient(${PROBLEM_TINT},${PROBLEM_TINT})}
${R} tr.problem td.c-path{box-shadow:inset 3px 0 0 ${ERROR}}
${R} tr.problem .st{color:${ERROR};font-weight:600}
${R} tr.layer td.c-path{color:${MUTED}}
${R} tr.odd td{background-image:linear-gradient(${STRIPE},${STRIPE})}
${R} tbody tr:hover td{box-shadow:inset 0 -1px 0 ${HOVER},inset 0 1px 0 ${HOVER}}
${R} tr.nnx-spacer td{padding:0;height:0;line-height:0;border:0;background:none}
${R} .nnx-empty{padding:14px;color:${MUTED};text-align:center}
${R} .nnx-cmp-faint{color:${FAINT}}
${R} .c-note{font-family:${FONT}}
`;
}
