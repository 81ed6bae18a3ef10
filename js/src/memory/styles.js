// @ts-check
// Styles of the memory widget, scoped under .nnx-lab-memory-view: the viewer's theme variables
// (JupyterLab's, then VS Code's, then light defaults) and the summary's table look.

import { columnPickerCss } from "../shared/fit.js";
import { ROW_HEIGHT, THEME, dataBarCss, panelFrameCss } from "../shared/styles.js";
import { COLUMNS } from "./data.js";

const { FG, MUTED, FAINT, BG, BG2, BORDER, ACCENT, STRIPE, HOVER, FONT, MONO } = THEME;

export function memoryCss() {
  const R = ".nnx-lab-memory-view";
  const widths = COLUMNS.filter((c) => c.width)
    .map((c) => `${R} col.k-${c.id}{width:${c.width}px}`)
    .join("\n");
  return `${panelFrameCss(R, ["button", "input"])}
${R} .nnx-mem-title{font-weight:600;overflow-wrap:anywhere}
${R} .nnx-mem-head{color:${MUTED};margin:2px 0 4px}
${R} .nnx-mem-head div{overflow-wrap:anywhere}
${R} .nnx-mem-tools{display:flex;flex-wrap:wrap;align-items:center;gap:4px 8px;margin:4px 0}
${R} .nnx-mem-tools input{flex:0 1 220px;min-width:110px;padding:1px 6px;border:1px solid ${BORDER};
  border-radius:3px;background:${BG}}
${R} .nnx-mem-tools button{border:1px solid ${BORDER};border-radius:3px;background:${BG2};padding:0 8px;cursor:pointer}
${R} .nnx-mem-tools button:hover{color:${ACCENT}}
${R} .nnx-mem-showing{color:${MUTED}}
${R} .nnx-mem-tools-end{margin-left:auto}${columnPickerCss(R, THEME)}
${R} .nnx-scroll{position:relative;max-height:420px;overflow:auto;border:1px solid ${BORDER};border-radius:3px}
${R} table.nnx-mem-table{border-collapse:separate;border-spacing:0;table-layout:fixed;width:100%}
${widths}
${R} th{position:sticky;top:0;z-index:2;background:${BG2};color:${FG};font-weight:600;text-align:left;
  padding:2px 6px;border-bottom:1px solid ${BORDER};overflow:hidden;white-space:nowrap;text-overflow:ellipsis;
  vertical-align:bottom;line-height:1.25;user-select:none}
${R} th.sortable{cursor:pointer}
${R} th.sortable:hover{color:${ACCENT}}
${R} th.num{text-align:right}
${R} th .arrow{font-size:9px;margin-left:3px}
${R} th[data-col="label"]{left:0;z-index:3}
${R} td{height:${ROW_HEIGHT}px;padding:0 6px;line-height:${ROW_HEIGHT}px;white-space:nowrap;overflow:hidden;
  text-overflow:ellipsis;vertical-align:middle}
${R} td.num{text-align:right}
${R} td.c-label{position:sticky;left:0;z-index:1;background-color:${BG};font-family:${MONO};font-size:11.5px}
${R} tr.d0 td{font-weight:600;background-color:${BG2}}
${R} tr.d2 td.c-label{color:${MUTED}}
${R} td.c-kind,${R} td.c-shared{color:${MUTED}}
${R} .tog{display:inline-block;width:12px;color:${MUTED};font-size:11px;text-align:center;margin-right:2px}
${R} .tog::before{content:attr(data-tog)}
${R} tr.nnx-mem-parent td.c-label{cursor:pointer}
${R} td.c-bytes{position:relative}
${dataBarCss(R, "td.c-bytes .bar")}
${R} td.c-bytes .v{position:relative}
${R} tr.nnx-mem-row:hover td{background-image:linear-gradient(${HOVER},${HOVER})}
${R} tr.nnx-mem-row.match td.c-label{box-shadow:inset 3px 0 0 ${ACCENT}}
${R} tr.nnx-spacer td{padding:0;height:0;line-height:0;border:0;background:none}
${R} .nnx-empty{padding:14px;color:${FAINT};text-align:center;font-family:${FONT}}
${R} .nnx-mem-notes{color:${MUTED};margin:4px 0;overflow-wrap:anywhere}
${R} .nnx-mem-free{margin-top:6px}
${R} .nnx-mem-free-title{font-weight:600}
${R} .nnx-mem-free-note{color:${MUTED}}
${R} .nnx-mem-free ul{list-style:none;margin:2px 0;padding:0}
${R} .nnx-mem-free li{display:flex;align-items:center;gap:8px;margin:2px 0;min-width:0}
${R} .nnx-mem-stmt{display:flex;min-width:0;flex:0 1 auto;border:1px solid ${BORDER};border-radius:3px;background:${BG2}}
${R} .nnx-mem-stmt code{font-family:${MONO};font-size:11.5px;padding:0 6px;white-space:pre;overflow:hidden;
  text-overflow:ellipsis;min-width:0;user-select:all}
${R} .nnx-mem-copy{flex:none;border:0;border-left:1px solid ${BORDER};background:${BG};padding:0 8px;cursor:pointer}
${R} .nnx-mem-copy:hover,${R} .nnx-mem-copy[data-state="done"]{color:${ACCENT}}
${R} .nnx-mem-returns{flex:none;color:${MUTED};font-variant-numeric:tabular-nums}
${R} tr.nnx-mem-row.odd td{background-image:linear-gradient(${STRIPE},${STRIPE})}
`;
}
