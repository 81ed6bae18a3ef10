// @ts-check
// Styles, scoped under .nnx-lab-viewer. Colours come from JupyterLab's theme variables, then
// VS Code's, then defaults for the page's colour scheme, so the viewer follows light and dark themes.

import { COLUMNS, TABLE_MIN_WIDTH } from "./columns.js";
import { columnPickerCss } from "./fit.js";

export const ROW_HEIGHT = 20;

// Each theme colour is a custom property of the widget's root: the host's variable (JupyterLab's
// --jp-*, then VS Code's --vscode-*), else a default. Dark hosts (JupyterLab Dark, VS Code's dark and
// high-contrast themes) and pages without theme variables in a dark colour scheme (Colab's dark
// mode) take the dark set. Both are picked so that text reads at WCAG AA (4.5:1) and marks at 3:1
// (tests/browser/test_dark_theme_browser.py measures JupyterLab Light, Dark, VS Code and plain hosts).
// JupyterLab Light's own secondary text (--jp-ui-font-color2, 54 % black) is 4.4:1 on its
// --jp-layout-color2, its success/error colour1 under 4.5:1 on a tinted row and its orange 2.5:1:
// the light set takes the text colour at 72 %, the darker shades, and its orange darkened.
const LIGHT_VARS = {
  fg: "var(--jp-ui-font-color1, var(--vscode-editor-foreground, #222))",
  muted: "color-mix(in srgb, var(--jp-ui-font-color1, var(--vscode-editor-foreground, #222)) 72%, transparent)",
  faint: "color-mix(in srgb, var(--jp-ui-font-color1, var(--vscode-editor-foreground, #222)) 72%, transparent)",
  bg: "var(--jp-layout-color1, var(--vscode-editor-background, #fff))",
  bg2: "var(--jp-layout-color2, var(--vscode-sideBar-background, #f3f3f3))",
  border: "var(--jp-border-color2, var(--vscode-panel-border, #ccc))",
  accent: "var(--jp-brand-color1, var(--vscode-focusBorder, #1976d2))",
  "accent-fill": "var(--jp-brand-color1, var(--vscode-focusBorder, #1976d2))",
  error: "var(--jp-error-color0, var(--vscode-errorForeground, #b71c1c))",
  ok: "var(--jp-success-color0, #1b5e20)",
  warn: "color-mix(in srgb, var(--jp-warn-color0, var(--vscode-editorWarning-foreground, #e65100)) 70%, #000)",
  bar: "var(--jp-brand-color1, var(--vscode-focusBorder, #1976d2))",
};
const DARK_VARS = {
  fg: "var(--jp-ui-font-color1, var(--vscode-editor-foreground, #e0e0e0))",
  muted: "var(--jp-ui-font-color2, var(--vscode-descriptionForeground, #a8a8a8))",
  faint: "var(--jp-ui-font-color2, var(--vscode-descriptionForeground, #9a9a9a))",
  bg: "var(--jp-layout-color1, var(--vscode-editor-background, #1e1e1e))",
  bg2: "var(--jp-layout-color0, var(--vscode-sideBar-background, #161616))",
  border: "var(--jp-border-color1, var(--vscode-panel-border, #555))",
  accent: "var(--jp-brand-color1, var(--vscode-textLink-foreground, #3794ff))",
  "accent-fill": "var(--jp-brand-color0, var(--vscode-button-background, #0e639c))",
  error: "var(--jp-error-color2, var(--vscode-errorForeground, #f48771))",
  ok: "var(--jp-success-color2, var(--vscode-testing-iconPassed, #73c991))",
  warn: "var(--jp-warn-color1, var(--vscode-editorWarning-foreground, #cca700))",
  bar: "var(--jp-brand-color1, var(--vscode-textLink-foreground, #3794ff))",
};
const DARK_HOSTS = [
  'body[data-jp-theme-light="false"]',
  "body.vscode-dark",
  "body.vscode-high-contrast:not(.vscode-high-contrast-light)",
];
// A page with no theme of its own: not JupyterLab / Notebook 7, not VS Code, not the classic Notebook.
const PLAIN_HOST = 'body:not([data-jp-theme-name]):not([class*="vscode-"]):not(.notebook_app)';

const decls = (vars) =>
  Object.entries(vars)
    .map(([k, v]) => `--nnx-${k}:${v};`)
    .join("");

/** `rules` (a declaration block's body) for root `R` in a dark host or a plain page in a dark scheme. */
export function darkCss(R, rules) {
  return `${DARK_HOSTS.map((host) => `${host} ${R}`).join(",")}{${rules}}
@media (prefers-color-scheme: dark){${PLAIN_HOST} ${R}{${rules}}}`;
}

/** The theme's custom properties on root `R`: the light set, and the dark one in dark hosts. */
export function themeVarsCss(R) {
  return `${R}{${decls(LIGHT_VARS)}}
${darkCss(R, `${decls(DARK_VARS)}color-scheme:dark;`)}`;
}

const FG = "var(--nnx-fg)";
const MUTED = "var(--nnx-muted)";
const FAINT = "var(--nnx-faint)";
const BG = "var(--nnx-bg)";
const BG2 = "var(--nnx-bg2)";
const BORDER = "var(--nnx-border)";
const ACCENT = "var(--nnx-accent)";
const ACCENT_FILL = "var(--nnx-accent-fill)";
const ERROR = "var(--nnx-error)";
const OK = "var(--nnx-ok)";
const WARN = "var(--nnx-warn)";
const BAR = "var(--nnx-bar)";
const STRIPE = "rgba(127,127,127,0.06)";
const HOVER = "rgba(127,127,127,0.16)";
const FONT = "var(--jp-ui-font-family, var(--vscode-font-family, system-ui, -apple-system, 'Segoe UI', sans-serif))";
const MONO =
  "var(--jp-code-font-family, var(--vscode-editor-font-family, ui-monospace, SFMono-Regular, Menlo, Consolas, monospace))";

/** The theme colours and fonts above, for other widgets' styles (the split report). */
export const THEME = {
  FG,
  MUTED,
  FAINT,
  BG,
  BG2,
  BORDER,
  ACCENT,
  ACCENT_FILL,
  ERROR,
  OK,
  WARN,
  BAR,
  STRIPE,
  HOVER,
  FONT,
  MONO,
};

/** A cell's data bar (`.bar` under the value): a line under the value, in the accent colour. (No
 * translucent band keeps both the bar at 3:1 against the row and the value over it at 4.5:1.) */
export function dataBarCss(R, sel) {
  return `${R} ${sel}{position:absolute;left:0;bottom:1px;height:3px;background:${BAR}}`;
}

/**
 * A flat table's path cell `sel` (its text in a `.pt` span) that, too long for its column, loses
 * its start ("…layers[0].mha.key.kernel") instead of the end that tells its rows apart: one
 * left-to-right run in a right-to-left cell. (A tree table's rows show their last step instead.)
 */
export function keepEndCss(R, sel) {
  return `${R} ${sel}{direction:rtl;text-align:left}
${R} ${sel} .pt{direction:ltr;unicode-bidi:isolate}`;
}

/** The frame every panel widget (split report, views, capture) shares: root `R`, its form controls `controls`. */
export function panelFrameCss(R, controls = ["button"]) {
  return `
${themeVarsCss(R)}
${R}{color:${FG};background:${BG};font-family:${FONT};font-size:12px;line-height:1.45;
  border:1px solid ${BORDER};border-radius:4px;padding:6px 8px;box-sizing:border-box;
  font-variant-numeric:tabular-nums;max-width:100%;overflow:hidden}
${R} *{box-sizing:border-box}
${R} [hidden]{display:none!important}
${R} ${controls.join(`,${R} `)}{font:inherit;font-size:12px;color:inherit}`;
}

export function css() {
  const R = ".nnx-lab-viewer";
  const colW = COLUMNS.filter((c) => c.width)
    .map((c) => `${R} col.k-${c.id}{width:${c.width}px}`)
    .join("\n");
  return `
${themeVarsCss(R)}
${R}{color:${FG};background:${BG};font-family:${FONT};font-size:12px;line-height:1.45;
  border:1px solid ${BORDER};border-radius:4px;padding:6px 8px;box-sizing:border-box;
  font-variant-numeric:tabular-nums;max-width:100%;overflow:hidden}
${R} *{box-sizing:border-box}
${R} button,${R} select,${R} input{font:inherit;font-size:12px;color:inherit}
${R} .nnx-head{display:flex;flex-wrap:wrap;align-items:baseline;gap:4px 14px;margin-bottom:4px}
${R} .nnx-title{font-weight:600}
${R} .nnx-title .nnx-sep{color:${FAINT};font-weight:400;margin:0 4px}
${R} .nnx-title .nnx-dim{font-weight:400;color:${MUTED}}
${R} .nnx-devices{display:flex;flex-wrap:wrap;gap:2px 12px;color:${MUTED};align-items:center}
${R} .nnx-dev{display:inline-flex;align-items:center;gap:5px}
${R} .nnx-bar{display:inline-block;width:48px;height:6px;border-radius:3px;background:${BG2};
  border:1px solid ${BORDER};overflow:hidden;position:relative}
${R} .nnx-bar>span{position:absolute;left:0;top:0;bottom:0;background:${ACCENT}}
${R} .nnx-bar>span.peak{background:transparent;border-right:1px solid ${WARN}}
${R} .nnx-banner{margin:4px 0;padding:3px 8px;border-radius:3px;border:1px solid ${ERROR};
  border-left-width:4px;color:${FG};background:rgba(229,57,53,0.14);cursor:pointer}
${R} .nnx-banner .icon{color:${ERROR};font-weight:700;margin-right:4px}
${R} .nnx-banner[hidden]{display:none}
${R} .nnx-banner code{font-family:${MONO};font-weight:600}
${R} .nnx-banner[data-state="clean"]{border-color:${WARN};background:rgba(245,124,0,0.10)}
${R} .nnx-banner[data-state="clean"] .icon{color:${WARN}}
${R} .nnx-banner .nnx-banner-clear{float:right;height:18px;padding:0 6px;margin-left:8px}
${R} .nnx-scalars{display:flex;flex-wrap:wrap;gap:2px 16px;align-items:center;margin:2px 0 4px}
${R} .nnx-scalar{display:inline-flex;align-items:center;gap:5px;white-space:nowrap}
${R} .nnx-scalar-name{font-family:${MONO};color:${MUTED}}
${R} .nnx-scalar-spark{display:block;flex:none}
${R} .nnx-scalar-spark path{fill:none;stroke:${ACCENT};stroke-width:1.2}
${R} .nnx-scalar-spark line.bad{stroke:${ERROR};stroke-width:1}
${R} .nnx-scalar-value{font-weight:600}
${R} .nnx-scalar-value.bad{color:${ERROR}}
${R} .nnx-scalar-step{color:${MUTED}}
${R} .nnx-bar-row{display:flex;flex-wrap:wrap;gap:4px 6px;align-items:center;margin:4px 0}
${R} .nnx-chips{display:flex;flex-wrap:wrap;gap:4px 6px;align-items:center}
${R} .nnx-tools{display:flex;flex-wrap:wrap;justify-content:flex-end;gap:4px 6px;align-items:center;margin-left:auto}
${R} .nnx-type-chip{display:inline-flex;align-items:center;gap:5px;border:1px solid ${BORDER};
  border-radius:10px;padding:0 8px;height:20px;background:${BG};cursor:pointer;white-space:nowrap}
${R} .nnx-type-chip:hover{background:rgba(127,127,127,0.12)}
${R} .nnx-type-chip[aria-pressed="true"]{border-color:${ACCENT};box-shadow:inset 0 0 0 1px ${ACCENT}}
${R} .nnx-type-chip .n{color:${MUTED}}
${R} .nnx-dot{display:inline-block;width:8px;height:8px;border-radius:2px;flex:none}
${R} .nnx-filter,${R} .nnx-text-input{height:22px;padding:0 6px;width:220px;max-width:40vw;border:1px solid ${BORDER};
  border-radius:3px;background:${BG};font-family:${MONO}}
${R} .nnx-filter:focus,${R} .nnx-text-input:focus{outline:1px solid ${ACCENT};border-color:${ACCENT}}
${R} .nnx-tool{height:22px;padding:0 8px;border:1px solid ${BORDER};border-radius:3px;white-space:nowrap;
  background:${BG2};cursor:pointer}
${R} .nnx-tool:hover:not(:disabled){border-color:${ACCENT}}
${R} .nnx-tool:disabled{opacity:.5;cursor:default}
${R} select.nnx-tool{padding:0 4px}
${R} .nnx-muted{color:${MUTED}}
${R} .nnx-matches{color:${MUTED}}
${R} .nnx-scroll{position:relative;max-height:420px;overflow:auto;border:1px solid ${BORDER};
  border-radius:3px;scrollbar-width:thin}
${R} .nnx-hframe{position:relative}
${R} .nnx-more-right{position:absolute;top:1px;right:1px;bottom:1px;width:28px;pointer-events:none;z-index:4;
  border-radius:0 3px 3px 0;background:linear-gradient(to right,rgba(127,127,127,0),rgba(127,127,127,0.35))}
${R} .nnx-scroll.scrolled-x tr.nnx-row td.c-path,${R} .nnx-scroll.scrolled-x th[data-col="path"]{
  box-shadow:3px 0 4px -2px rgba(0,0,0,0.3)}
${R} table.nnx-table{border-collapse:separate;border-spacing:0;table-layout:fixed;width:100%;
  min-width:${TABLE_MIN_WIDTH}px}
${colW}
${COLUMNS.map(
  (c) =>
    `${R} table.hide-${c.id} col.k-${c.id},${R} table.hide-${c.id} .c-${c.id},` +
    `${R} table.hide-${c.id} th[data-col="${c.id}"]{display:none}`,
).join("\n")}
${R} th{position:sticky;top:0;z-index:2;background:${BG2};color:${FG};font-weight:600;
  text-align:left;height:22px;padding:0 6px;border-bottom:1px solid ${BORDER};white-space:nowrap;
  overflow:hidden;text-overflow:ellipsis;user-select:none}
${R} th[data-col="path"]{left:0;z-index:3}
${R} th.sortable{cursor:pointer}
${R} th.sortable:hover{color:${ACCENT}}
${R} th.num{text-align:right}
${R} th[aria-sort="ascending"],${R} th[aria-sort="descending"]{color:${ACCENT}}
${R} th .arrow{font-size:9px;margin-left:3px}
${R} td{height:${ROW_HEIGHT}px;padding:0 6px;line-height:${ROW_HEIGHT}px;white-space:nowrap;
  overflow:hidden;text-overflow:ellipsis;vertical-align:middle}
${R} td.num{text-align:right}
${R} td.c-path{position:sticky;left:0;z-index:1;background-color:${BG}}
${R} tr.nnx-row:nth-child(even) td,${R} tr.nnx-module:nth-child(even) td{background-image:linear-gradient(${STRIPE},${STRIPE})}
${R} tr.nnx-row:hover td,${R} tr.nnx-module:hover td{background-image:linear-gradient(${HOVER},${HOVER})}
${R} tr.nnx-flash td{background-image:linear-gradient(rgba(25,118,210,0.25),rgba(25,118,210,0.25))!important}
${R} tr.nnx-spacer td{padding:0;height:0;line-height:0;border:0}
${R} tr.nnx-module{cursor:pointer}
${R} tr.nnx-module td.c-path{font-weight:600}
${R} .c-path,${R} .c-shape,${R} .c-dtype,${R} .c-place{font-family:${MONO};font-size:11.5px}
${R} .c-path .cls{font-family:${FONT};font-weight:400;color:${MUTED};margin-left:6px;font-size:11.5px}
${R} .c-path .alias{color:${MUTED};margin-left:5px;font-family:${FONT};font-size:11px}
${R} .tog{display:inline-block;width:12px;color:${MUTED};font-size:11px;text-align:center;margin-right:2px}
${R} tr.nnx-module .c-shape,${R} tr.nnx-module .c-bytes{color:${MUTED}}
${R} .c-type .chip{display:inline-flex;align-items:center;gap:4px;max-width:100%}
${R} .c-type .chip .t{overflow:hidden;text-overflow:ellipsis}
${R} .nnx-series{display:flex;flex-wrap:wrap;align-items:baseline;gap:2px 12px;margin:2px 0}
${R} .nnx-series[hidden],${R} .nnx-series label[hidden],${R} .nnx-unmatched[hidden]{display:none}
${R} .nnx-series-line{color:${MUTED}}
${R} .nnx-unmatched ul{margin:2px 0;padding-left:18px}
${R} td.stale{color:${MUTED};font-style:italic}
${R} td.c-place.bad{background-color:rgba(251,140,0,0.18)}
${R} td.c-place .mismatch{color:${FG};font-weight:600}
${R} td.c-nonfinite.bad{color:${FG};font-weight:600;background-color:rgba(229,57,53,0.22);
  box-shadow:inset 3px 0 0 ${ERROR}}
${R} .c-status{color:${MUTED}}
${R} .c-status .st{color:${WARN}}
${R} .c-status .st.error,${R} .c-status .st.deleted{color:${ERROR}}
${R} .c-status .st.prng_key{color:${MUTED}}
${R} .c-spark{padding:0 4px}
${R} .c-spark svg{display:block;margin:3px 0;overflow:visible}
${R} .c-spark path{fill:none;stroke:${ACCENT};stroke-width:1.2;stroke-linejoin:round;stroke-linecap:round}
${R} .nnx-empty{padding:14px;color:${MUTED};text-align:center}
${R} .nnx-status{display:flex;flex-wrap:wrap;align-items:center;gap:2px 12px;margin-top:5px;color:${MUTED}}
${R} .nnx-status .state{display:inline-flex;align-items:center;gap:5px;color:${FG};font-weight:500}
${R} .nnx-status .state::before{content:"";width:8px;height:8px;border-radius:50%;background:${FAINT}}
${R} .nnx-status[data-state="live"] .state::before{background:${OK}}
${R} .nnx-status[data-state="paused"] .state::before,${R} .nnx-status[data-state="missing"] .state::before,${R} .nnx-status[data-state="no answer"] .state::before{background:${WARN}}
${R} .nnx-status[data-state="gone"] .state::before,${R} .nnx-status[data-state="error"] .state::before,${R} .nnx-status[data-state="disconnected"] .state::before{background:${ERROR}}
${R} .nnx-status .msg{color:${MUTED}}
${R} .nnx-status[data-state="gone"] .msg,${R} .nnx-status[data-state="error"] .msg,${R} .nnx-status[data-state="disconnected"] .msg{color:${ERROR};font-weight:600}
${R} .nnx-status[data-state="missing"] .msg{color:${WARN};font-weight:600}
${R} .nnx-status .nnx-tool{margin-left:auto}
${columnPickerCss(R, THEME)}
`;
}
