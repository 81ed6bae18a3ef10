// @ts-check
// Styles of the view panel and mode toggle, scoped under .nnx-lab-views. Same theme variables as
// the viewer (JupyterLab's, then VS Code's, then light defaults), so it follows light and dark themes.

import { THEME, keepEndCss, panelFrameCss } from "../shared/styles.js";

const { FG, MUTED, FAINT, BG, BG2, BORDER, ACCENT, ACCENT_FILL, ERROR, OK, WARN, STRIPE, HOVER, FONT, MONO } = THEME;
const WARN_TINT = "rgba(245,124,0,0.13)";
const ERROR_TINT = "rgba(229,57,53,0.12)";
const OK_TINT = "rgba(56,142,60,0.16)";
const ACCENT_TINT = "rgba(25,118,210,0.16)";
const GREY_TINT = "rgba(127,127,127,0.14)";

export function viewsCss() {
  const R = ".nnx-lab-views";
  return `${panelFrameCss(R, ["button", "select", "input"])}
${R} .nnx-views-head{display:flex;flex-wrap:wrap;align-items:center;gap:4px 8px;margin-bottom:4px}
${R} .nnx-views-head .root{font-weight:600}
${R} .nnx-views-head .sep{color:${FAINT}}
${R} .nnx-views-head .dim{color:${MUTED}}
${R} .nnx-views-badge{display:inline-block;padding:0 7px;border-radius:9px;font-size:11px;line-height:17px;
  border:1px solid ${BORDER};background:${GREY_TINT};color:${FG};white-space:nowrap}
${R} .nnx-views-badge[data-mode="train"]{background:${OK_TINT};border-color:${OK}}
${R} .nnx-views-badge[data-mode="eval"]{background:${ACCENT_TINT};border-color:${ACCENT}}
${R} .nnx-views-badge[data-mode="mixed"]{background:${WARN_TINT};border-color:${WARN};font-weight:600}
${R} .nnx-views-badge[data-mode="none"],${R} .nnx-views-badge[data-mode=""]{color:${MUTED};border-style:dashed}
${R} .nnx-views-switch{display:inline-flex;margin-left:auto;border:1px solid ${BORDER};border-radius:3px;overflow:hidden}
${R} .nnx-views-seg{display:inline-flex;border:1px solid ${BORDER};border-radius:3px;overflow:hidden;flex:none}
${R} .nnx-views-switch button,${R} .nnx-views-seg button{border:0;border-left:1px solid ${BORDER};background:${BG2};
  padding:0 9px;height:22px;cursor:pointer;white-space:nowrap}
${R} .nnx-views-switch button:first-child,${R} .nnx-views-seg button:first-child{border-left:0}
${R} .nnx-views-switch button:not([aria-pressed="true"]):hover:not([disabled]),
${R} .nnx-views-seg button:not([aria-pressed="true"]):hover{background:${HOVER}}
${R} .nnx-views-switch button[aria-pressed="true"],${R} .nnx-views-seg button[aria-pressed="true"]{
  background:${ACCENT_FILL};color:#fff}
${R} .nnx-views-seg button[data-value="unset"][aria-pressed="true"]{background:${GREY_TINT};color:${FG};
  box-shadow:inset 0 0 0 1px ${FAINT}}
${R} button[disabled]{opacity:.5;cursor:default}
${R} .nnx-views-pending{margin-left:5px;font-style:italic;font-size:11px}
${R} .nnx-views-mixed{margin:4px 0;padding:3px 8px;border:1px solid ${WARN};border-left-width:4px;
  border-radius:3px;background:${WARN_TINT};overflow-wrap:anywhere}
${R} .nnx-views-mixed::before{content:"\\26A0";color:${WARN};font-weight:700;margin-right:6px}
${R} .nnx-views-mixed code{font-family:${MONO};font-size:11.5px}
${R} .nnx-views-message{margin:4px 0;padding:3px 8px;border:1px solid ${BORDER};border-radius:3px;
  background:${BG2};color:${MUTED}}
${R} .nnx-views-form{margin:6px 0 4px;padding:6px 8px;border:1px solid ${BORDER};border-radius:3px}
${R} .nnx-views-row{display:flex;flex-wrap:wrap;align-items:center;gap:4px 8px;margin:2px 0}
${R} .nnx-views-row>.lbl{color:${MUTED};min-width:44px}
${R} select.nnx-views-scope{height:22px;max-width:420px;border:1px solid ${BORDER};border-radius:3px;
  background:${BG};padding:0 4px}
${R} .nnx-views-controls{display:grid;grid-template-columns:max-content max-content minmax(0,1fr);
  gap:3px 10px;align-items:center;margin:6px 0}
${R} .nnx-views-arg{display:contents}
${R} .nnx-views-arg .nm{font-family:${MONO};font-size:11.5px;font-weight:600}
${R} .nnx-views-arg .cls{display:block;font-family:${FONT};font-weight:400;font-size:10.5px;color:${MUTED}}
${R} .nnx-views-arg .ctl{display:flex;align-items:center;gap:6px}
${R} .nnx-views-arg .help{color:${MUTED};font-size:11.5px;overflow-wrap:anywhere}
${R}[data-narrow] .nnx-views-controls{grid-template-columns:minmax(0,max-content) minmax(0,1fr)}
${R}[data-narrow] .nnx-views-arg .help{grid-column:1/-1;margin:-1px 0 3px}
${R}[data-narrow] .nnx-views-arg .cls{overflow-wrap:anywhere}
${R} .nnx-views-none{color:${MUTED};grid-column:1/-1}
${R} input.nnx-views-input,${R} input.nnx-views-name{height:22px;width:150px;padding:0 6px;border:1px solid ${BORDER};
  border-radius:3px;background:${BG};font-family:${MONO}}
${R} input.nnx-views-input:focus,${R} input.nnx-views-name:focus,${R} select.nnx-views-scope:focus{
  outline:1px solid ${ACCENT};border-color:${ACCENT}}
${R} input[aria-invalid="true"]{border-color:${ERROR};outline-color:${ERROR}}
${R} .nnx-views-err{color:${ERROR};font-size:11px}
${R} .nnx-views-action{display:flex;align-items:stretch;gap:6px;margin:3px 0}
${R} .nnx-views-action>button.act{flex:none;min-width:104px;height:24px;border:1px solid ${BORDER};border-radius:3px;
  background:${BG2};cursor:pointer;padding:0 8px;white-space:nowrap}
${R} .nnx-views-action>button.act:hover:not([disabled]){border-color:${ACCENT}}
${R} .nnx-views-action>.lbl{flex:none;min-width:104px;color:${MUTED};align-self:center}
${R} .nnx-views-codebox{display:flex;flex:1 1 auto;min-width:0;border:1px solid ${BORDER};border-radius:3px;background:${BG2}}
${R} code.nnx-views-code{flex:1 1 auto;min-width:0;font-family:${MONO};font-size:12px;padding:3px 8px;
  white-space:pre-wrap;overflow-wrap:anywhere;color:${FG};background:transparent}
${R} code.nnx-views-code[data-ran="true"]::before{content:"\\2713";margin-right:6px;color:${OK};font-weight:700}
${R} code.nnx-views-code[data-idle="true"]{color:${MUTED}}
${R} .nnx-views-copy{flex:none;border:0;border-left:1px solid ${BORDER};background:${BG};padding:0 10px;
  cursor:pointer;border-radius:0 3px 3px 0;color:${MUTED};min-width:60px}
${R} .nnx-views-copy:hover{color:${ACCENT}}
${R} .nnx-views-copy[data-state="done"]{color:${ACCENT}}
${R} .nnx-views-status{margin:4px 0;min-height:18px;color:${MUTED};overflow-wrap:anywhere}
${R} .nnx-views-status:empty{display:none}
${R} .nnx-views-status::before{content:"";display:inline-block;width:8px;height:8px;border-radius:50%;
  margin-right:6px;background:${FAINT};vertical-align:0}
${R} .nnx-views-status[data-state="pending"]::before,${R} .nnx-views-status[data-state="queued"]::before{background:${WARN}}
${R} .nnx-views-status[data-state="done"]{color:${FG}}
${R} .nnx-views-status[data-state="done"]::before{background:${OK}}
${R} .nnx-views-status[data-state="error"]{color:${ERROR};font-weight:600}
${R} .nnx-views-status[data-state="error"]::before{background:${ERROR}}
${R} .nnx-views-list{max-height:420px;overflow:auto;border:1px solid ${BORDER};border-radius:3px;margin-top:4px}
${R} .nnx-views-class+.nnx-views-class{border-top:1px solid ${BORDER}}
${R} .nnx-views-class-head{display:flex;flex-wrap:wrap;align-items:baseline;gap:2px 10px;padding:3px 8px;
  background:${BG2};position:sticky;top:0;z-index:2}
${R}[data-variant="views"] .nnx-views-class-head{cursor:pointer}
${R}[data-variant="views"] .nnx-views-class-head:hover{background-image:linear-gradient(${HOVER},${HOVER})}
${R} .nnx-views-class[aria-selected="true"]>.nnx-views-class-head{box-shadow:inset 3px 0 0 ${ACCENT};
  background-image:linear-gradient(${ACCENT_TINT},${ACCENT_TINT})}
${R} .nnx-views-class-head .name{font-weight:600}
${R} .nnx-views-class-head .n{color:${MUTED}}
${R} .nnx-views-class-head .sig{font-family:${MONO};font-size:11px;color:${MUTED};overflow-wrap:anywhere}
${R} table.nnx-views-table{border-collapse:separate;border-spacing:0;width:100%;table-layout:fixed}
${R} table.nnx-views-table col.k-path{width:30%}
${R} table.nnx-views-table col.k-mode{width:72px}
${R} table.nnx-views-table th{text-align:left;font-weight:400;color:${MUTED};font-size:11px;padding:1px 8px;
  border-bottom:1px solid ${BORDER};white-space:nowrap;overflow:hidden;text-overflow:ellipsis}
${R} table.nnx-views-table td{padding:0 8px;height:20px;line-height:20px;white-space:nowrap;
  max-width:300px;overflow:hidden;text-overflow:ellipsis}
${R} td.c-path,${R} td.c-val{font-family:${MONO};font-size:11.5px}
${keepEndCss(R, "td.c-path")}
${R} td.c-path,${R} table.nnx-views-table th:first-child{position:sticky;left:0;z-index:1;background-color:${BG}}
${R} td.c-val.missing{color:${FAINT}}
${R} tr.nnx-views-instance:nth-child(even) td{background-image:linear-gradient(${STRIPE},${STRIPE})}
${R}[data-variant="views"] tr.nnx-views-instance{cursor:pointer}
${R} tr.nnx-views-instance:focus-visible,${R} .nnx-views-class-head:focus-visible{outline:2px solid ${ACCENT};outline-offset:-2px}
${R}[data-variant="views"] tr.nnx-views-instance:hover td{background-image:linear-gradient(${HOVER},${HOVER})}
${R} tr.nnx-views-instance[aria-selected="true"] td{background-image:linear-gradient(${ACCENT_TINT},${ACCENT_TINT})}
${R} tr.nnx-views-instance[aria-selected="true"] td.c-path{box-shadow:inset 3px 0 0 ${ACCENT}}
${R} tr.nnx-views-instance.odd-one td.c-path{box-shadow:inset 3px 0 0 ${WARN}}
${R} .nnx-views-more{margin:3px 8px 5px;border:0;background:none;padding:0;color:${ACCENT};cursor:pointer}
${R} .nnx-views-more:hover{text-decoration:underline}
${R} .nnx-views-empty{padding:10px;color:${MUTED};text-align:center}
`;
}
