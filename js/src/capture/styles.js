// @ts-check
// Styles of the capture panel, scoped under .nnx-lab-capture. Same theme variables as the viewer
// (JupyterLab's, then VS Code's, then light defaults), so it follows light and dark themes.

import { columnPickerCss } from "../shared/fit.js";
import { ROW_HEIGHT, THEME, darkCss, panelFrameCss } from "../shared/styles.js";

const { FG, MUTED, FAINT, BG, BG2, BORDER, ACCENT, ERROR, WARN, STRIPE, HOVER, FONT, MONO } = THEME;
const WARN_TINT = "rgba(245,124,0,0.13)";
// Gradients in purple: no theme variable means "purple", and the bars and borders drawn with it
// need only graphic contrast; text stays in the theme's foreground colour.
// In dark themes a lighter purple (3:1 on the dark tint), and the histograms' axis line in the faint colour.
const GRAD = "var(--nnx-grad)";
const GRAD_TINT = "rgba(171,71,188,0.08)";

export const HIST_W = 64;
export const HIST_H = 14;

export function captureCss() {
  const R = ".nnx-lab-capture";
  return `${panelFrameCss(R, ["button", "input"])}
${R}{--nnx-grad:#ab47bc;--nnx-axis:${FAINT}}
${darkCss(R, `--nnx-grad:#ce93d8;`)}
${R} .nnx-capture-head{display:flex;flex-wrap:wrap;align-items:baseline;gap:2px 6px;margin-bottom:4px}
${R} .nnx-capture-head .root{font-weight:600}
${R} .nnx-capture-head .sep{color:${FAINT}}
${R} .nnx-capture-head .dim{color:${MUTED}}
${R} .nnx-capture-head-end{margin-left:auto}${columnPickerCss(R, THEME)}
${R} .nnx-capture-head .loss{font-weight:600;border-bottom:2px solid ${GRAD}}
${R} .nnx-capture-head .loss.bad{color:${ERROR};border-bottom-color:${ERROR}}
${R} .nnx-capture-controls{display:flex;flex-wrap:wrap;align-items:flex-start;gap:4px 14px;margin:4px 0}
${R} .nnx-capture-group{display:flex;flex-wrap:wrap;align-items:center;gap:3px 8px}
${R} .nnx-capture-group>.lbl{color:${MUTED}}
${R} label.nnx-capture-toggle{display:inline-flex;align-items:center;gap:4px;white-space:nowrap;cursor:pointer;
  border:1px solid ${BORDER};border-radius:10px;padding:0 8px 0 4px;height:20px;background:${BG}}
${R} label.nnx-capture-toggle:hover{border-color:${ACCENT}}
${R} label.nnx-capture-toggle.on{border-color:${ACCENT};box-shadow:inset 0 0 0 1px ${ACCENT}}
${R} label.nnx-capture-toggle.seen .nm::after{content:" \\2022";color:${MUTED}}
${R} label.nnx-capture-toggle input{margin:0;accent-color:${ACCENT}}
${R} .nnx-dot{display:inline-block;width:8px;height:8px;border-radius:2px;flex:none}
${R} details.nnx-capture-modules{border:1px solid ${BORDER};border-radius:3px;padding:0 6px;min-width:200px;max-width:100%}
${R} details.nnx-capture-modules>summary{cursor:pointer;color:${FG};height:20px;line-height:20px;user-select:none}
${R} details.nnx-capture-modules>summary .dim{color:${MUTED}}
${R} .nnx-capture-module-tools{display:flex;gap:6px;margin:2px 0}
${R} .nnx-capture-module-tools button{border:1px solid ${BORDER};border-radius:3px;background:${BG2};cursor:pointer;
  height:20px;padding:0 8px}
${R} .nnx-capture-module-tools button:hover{border-color:${ACCENT}}
${R} .nnx-capture-module-list{max-height:180px;overflow-x:hidden;overflow-y:auto;padding-bottom:3px}
${R} label.nnx-capture-module{display:flex;align-items:center;gap:4px;white-space:nowrap;height:19px;cursor:pointer;
  min-width:0}
${R} label.nnx-capture-module .cls{overflow:hidden;text-overflow:ellipsis;min-width:0}
${R} label.nnx-capture-module input{margin:0;accent-color:${ACCENT}}
${R} label.nnx-capture-module .k{font-family:${MONO};font-size:11.5px}
${R} label.nnx-capture-module .cls{color:${MUTED}}
${R} .nnx-capture-pending{color:${WARN};margin:2px 0}
${R} ul.nnx-capture-messages{list-style:none;margin:4px 0;padding:3px 8px;border:1px solid ${WARN};
  border-left-width:4px;border-radius:3px;background:${WARN_TINT}}
${R} ul.nnx-capture-messages li{margin:1px 0;overflow-wrap:anywhere}
${R} ul.nnx-capture-messages li::before{content:"\\26A0";color:${WARN};font-weight:700;margin-right:6px}
${R} .nnx-capture-status{color:${MUTED};margin:4px 0 0}
${R} .nnx-capture-status[data-level="error"]{color:${ERROR};font-weight:600}
${R} .nnx-capture-status[data-level="warn"]{color:${WARN}}
${R} .nnx-scroll{position:relative;max-height:420px;overflow:auto;border:1px solid ${BORDER};border-radius:3px;margin-top:4px}
${R} table.nnx-capture-table{border-collapse:separate;border-spacing:0;table-layout:fixed;width:100%}
${R} th{position:sticky;top:0;z-index:2;background:${BG2};color:${FG};font-weight:600;text-align:left;
  height:22px;padding:2px 6px;border-bottom:1px solid ${BORDER};overflow:hidden;vertical-align:bottom;
  line-height:1.25;user-select:none}
${R} th[data-col="path"]{left:0;z-index:3}
${R} th.num{text-align:right}
${R} th.grad{box-shadow:inset 0 3px 0 ${GRAD};background-image:linear-gradient(${GRAD_TINT},${GRAD_TINT})}
${R} td{height:${ROW_HEIGHT}px;padding:0 6px;line-height:${ROW_HEIGHT}px;white-space:nowrap;overflow:hidden;
  text-overflow:ellipsis;vertical-align:middle}
${R} td.num{text-align:right}
${R} td.grad{background-image:linear-gradient(${GRAD_TINT},${GRAD_TINT})}
${R} td.c-path{position:sticky;left:0;z-index:1;background-color:${BG}}
${R} .c-path,${R} .c-shape,${R} .c-dtype{font-family:${MONO};font-size:11.5px}
${R} .c-path .cls{font-family:${FONT};color:${MUTED};margin-left:6px}
${R} .tog{display:inline-block;width:12px;color:${MUTED};font-size:11px;text-align:center;margin-right:2px}
${R} tr.nnx-capture-module{cursor:pointer}
${R} tr.nnx-capture-module td.c-path{font-weight:600}
${R} tr.nnx-capture-module .c-shape{color:${MUTED}}
${R} tr.nnx-capture-row.odd td:not(.grad),${R} tr.nnx-capture-module.odd td:not(.grad){background-image:linear-gradient(${STRIPE},${STRIPE})}
${R} tr.nnx-capture-row:hover td,${R} tr.nnx-capture-module:hover td{box-shadow:inset 0 -1px 0 ${HOVER},inset 0 1px 0 ${HOVER}}
${R} tr.nnx-capture-row:hover td.c-path{background-image:linear-gradient(${HOVER},${HOVER})}
${R} .c-type .chip{display:inline-flex;align-items:center;gap:4px;max-width:100%}
${R} .c-type .chip .t{overflow:hidden;text-overflow:ellipsis}
${R} td.bad{color:${FG};font-weight:600;background-color:rgba(229,57,53,0.22);box-shadow:inset 3px 0 0 ${ERROR}}
${R} .st{color:${MUTED};font-style:italic}
${R} td.c-hist,${R} td.c-ghist{padding:0 6px}
${R} svg.nnx-capture-hist{display:block;margin:3px 0;overflow:visible}
${R} svg.nnx-capture-hist path{fill:${ACCENT};opacity:.85}
${R} svg.nnx-capture-hist line{stroke:var(--nnx-axis);stroke-width:1}
${R} td.c-ghist svg.nnx-capture-hist path{fill:${GRAD}}
${R} tr.nnx-spacer td{padding:0;height:0;line-height:0;border:0;background:none}
${R} .nnx-empty{padding:14px;color:${MUTED};text-align:center}
`;
}
