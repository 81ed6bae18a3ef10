// @ts-check
// Styles of the summary widget, scoped under .nnx-lab-summary-view: the viewer's theme variables
// (JupyterLab's, then VS Code's, then light defaults) and its table's look.

import { columnPickerCss } from "../shared/fit.js";
import { ROW_HEIGHT, THEME, dataBarCss, panelFrameCss } from "../shared/styles.js";
import { COLUMNS } from "./data.js";

const { FG, MUTED, FAINT, BG, BG2, BORDER, ACCENT, STRIPE, HOVER, FONT, MONO } = THEME;

export function summaryCss() {
  const R = ".nnx-lab-summary-view";
  const widths = COLUMNS.filter((c) => c.width)
    .map((c) => `${R} col.k-${c.id}{width:${c.width}px}`)
    .join("\n");
  return `${panelFrameCss(R, ["button", "input"])}
${R} .nnx-sum-title{font-weight:600;overflow-wrap:anywhere}
${R} .nnx-sum-head{color:${MUTED};margin:2px 0 4px}
${R} .nnx-sum-head div{overflow-wrap:anywhere}
${R} .nnx-sum-head .pending{font-style:italic}
${R} .nnx-sum-tools{display:flex;flex-wrap:wrap;align-items:center;gap:4px 8px;margin:4px 0}
${R} .nnx-sum-tools input{flex:0 1 260px;min-width:120px;padding:1px 6px;border:1px solid ${BORDER};
  border-radius:3px;background:${BG}}
${R} .nnx-sum-tools button{border:1px solid ${BORDER};border-radius:3px;background:${BG2};padding:0 8px;cursor:pointer}
${R} .nnx-sum-tools button:hover{color:${ACCENT}}
${R} .nnx-sum-showing{color:${MUTED}}
${R} .nnx-sum-tools-end{margin-left:auto}${columnPickerCss(R, THEME)}
${R} .nnx-scroll{position:relative;max-height:460px;overflow:auto;border:1px solid ${BORDER};border-radius:3px}
${R} table.nnx-sum-table{border-collapse:separate;border-spacing:0;table-layout:fixed;width:100%}
${widths}
${R} th{position:sticky;top:0;z-index:2;background:${BG2};color:${FG};font-weight:600;text-align:left;
  padding:2px 6px;border-bottom:1px solid ${BORDER};overflow:hidden;overflow-wrap:normal;vertical-align:bottom;
  line-height:1.25;user-select:none}
${R} th.sortable{cursor:pointer}
${R} th.sortable:hover{color:${ACCENT}}
${R} th.num{text-align:right}
${R} th .arrow{font-size:9px;margin-left:3px}
${R} th[data-col="path"]{left:0;z-index:3}
${R} td{height:${ROW_HEIGHT}px;padding:0 6px;line-height:${ROW_HEIGHT}px;white-space:nowrap;overflow:hidden;
  text-overflow:ellipsis;vertical-align:middle}
${R} td.num{text-align:right}
${R} td.c-path{position:sticky;left:0;z-index:1;background-color:${BG};font-family:${MONO};font-size:11.5px}
${R} td.c-inputs,${R} td.c-outputs{font-family:${MONO};font-size:11px;color:${MUTED}}
${R} .tog{display:inline-block;width:12px;color:${MUTED};font-size:11px;text-align:center;margin-right:2px}
${R} tr.nnx-sum-parent td.c-path{cursor:pointer}
${R} td.c-flops{position:relative}
${dataBarCss(R, "td.c-flops .bar")}
${R} td.c-flops .v{position:relative}
${R} tr.nnx-sum-row.odd td{background-image:linear-gradient(${STRIPE},${STRIPE})}
${R} tr.nnx-sum-row:hover td{background-image:linear-gradient(${HOVER},${HOVER})}
${R} tr.nnx-sum-row.match td.c-path{box-shadow:inset 3px 0 0 ${ACCENT}}
${R} tr.nnx-spacer td{padding:0;height:0;line-height:0;border:0;background:none}
${R} .nnx-empty{padding:14px;color:${FAINT};text-align:center;font-family:${FONT}}
`;
}
