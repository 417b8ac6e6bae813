// d3 as an ES module. d3's only standalone browser build is UMD (dist/d3.min.js, loaded by a
// classic <script> in index.html before any module runs); its ES build re-exports d3-* packages by
// bare name and would need a bundler. This module hands the global to `import d3 from "d3"`.
const d3 = globalThis.d3;
if (!d3 || typeof d3.select !== "function") {
  throw new Error("d3 did not load: /vendor/d3/dist/d3.min.js is missing (run `npm ci` in webui/)");
}
export default d3;
