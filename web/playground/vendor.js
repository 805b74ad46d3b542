// The charting code, bundled from npm by `make web` (scripts/build_web.sh) into
// dist/vendor.js and loaded only when an answer carries a chart. vega-interpreter
// evaluates Vega expressions without `new Function`, which the page's
// Content-Security-Policy forbids (no 'unsafe-eval').
export { default as embed } from 'vega-embed';
export { expressionInterpreter } from 'vega-interpreter';
