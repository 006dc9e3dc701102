// Times pixelmatch on one pair for go run ./bench (bench/pixelmatch.go):
// node bench.mjs MODULE RUNS THRESHOLD A B [W H]
// A and B are PNG files (decoded with pngjs, not timed) or raw straight-alpha
// RGBA files of W×H pixels. Best of RUNS, a new output buffer each run (a
// full diff image, as snapq allocates its own). Prints one JSON line.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { PNG } from 'pngjs';

const [mod, runs, threshold, fa, fb, ws, hs] = process.argv.slice(2);
const { default: pixelmatch } = await import(mod);
const pkg = createRequire(import.meta.url)(mod + '/package.json');

function read(file) {
  if (file.endsWith('.png')) {
    const png = PNG.sync.read(readFileSync(file));
    return { data: new Uint8Array(png.data.buffer, png.data.byteOffset, png.data.length), w: png.width, h: png.height };
  }
  return { data: new Uint8Array(readFileSync(file)), w: +ws, h: +hs };
}

const a = read(fa), b = read(fb);
const all = [];
let diff = 0;
for (let i = 0; i < +runs; i++) {
  const out = new Uint8Array(a.w * a.h * 4);
  const t = performance.now();
  diff = pixelmatch(a.data, b.data, out, a.w, a.h, { threshold: +threshold });
  all.push(performance.now() - t);
}
console.log(JSON.stringify({ ms: Math.min(...all), all, diff, version: pkg.version }));
