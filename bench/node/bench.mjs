// Times pixelmatch on one pair for go run ./bench (bench/pixelmatch.go):
// node bench.mjs MODULE RUNS THRESHOLD A B [W H]
// A and B are PNG files (decoded with pngjs, not timed) or raw straight-alpha
// RGBA files of W×H pixels. pixelmatch runs untimed first until V8 has
// compiled it (at least 3 runs, then until 20 runs or 2 s: a cold run of a
// small pair is up to 10× slower than a warm one), then RUNS timed runs,
// each with a new output buffer (a full diff image, as snapq allocates its
// own). Prints one JSON line: the best wall time (ms), the best process CPU
// time of a run (cpu_ms, user + system), all wall times, the count.
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
const once = () => pixelmatch(a.data, b.data, new Uint8Array(a.w * a.h * 4), a.w, a.h, { threshold: +threshold });
const warmStart = performance.now();
let warm = 0;
while (warm < 3 || (warm < 20 && performance.now() - warmStart < 2000)) {
  once();
  warm++;
}
const all = [], cpu = [];
let diff = 0;
for (let i = 0; i < +runs; i++) {
  const out = new Uint8Array(a.w * a.h * 4);
  const c0 = process.cpuUsage();
  const t = performance.now();
  diff = pixelmatch(a.data, b.data, out, a.w, a.h, { threshold: +threshold });
  all.push(performance.now() - t);
  const c = process.cpuUsage(c0);
  cpu.push((c.user + c.system) / 1000);
}
console.log(JSON.stringify({ ms: Math.min(...all), cpu_ms: Math.min(...cpu), warm, all, diff, version: pkg.version }));
