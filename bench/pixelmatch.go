package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"image"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/snapq/snapq/diff"
)

// pixelmatchBench measures diff.Compare (with the diff image) against
// pixelmatch itself on Node, in the same run, on the same raw RGBA pixels
// (no PNG decoding on either side), best of runs each:
//
//   - a 1280×720 busy pair (pageImages: about 2% of the area re-set);
//   - a 1280×20,000 page with one small change (a 120×16 word).
//
// YIQ (snapq's default) is measured against pixelmatch 7 (YIQ), OKLab
// against pixelmatch 8 (whose default metric is OKLab/HyAB). Node packages
// are installed with npm into bench/.node (ignored by git) on first use;
// without node the lines say so and the bench goes on.
func pixelmatchBench() error {
	node, err := exec.LookPath("node")
	if err != nil {
		fmt.Println("bench: diff/pixelmatch: skipped (no node on PATH)")
		return nil
	}
	dir, err := nodeModules()
	if err != nil {
		fmt.Printf("bench: diff/pixelmatch: skipped (%v)\n", err)
		return nil
	}
	tmp, err := os.MkdirTemp("", "snapq-bench-pm")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	type pair struct {
		name string
		a, b *image.RGBA
		runs int
		crop bool // also measure snapq with a cropped diff image (Options.DiffCrop)
	}
	a, b := pageImages(1280, 720)
	ta, _ := pageImages(1280, 20000)
	tb := image.NewRGBA(ta.Rect)
	copy(tb.Pix, ta.Pix)
	clearRect(tb, image.Rect(400, 12000+96, 520, 12000+112)) // one word gone
	cases := []pair{{"1280x720 busy pair", a, b, 9, false}, {"1280x20000 page, one small change", ta, tb, 5, true}}
	for _, c := range cases {
		fa, fb := filepath.Join(tmp, "a.raw"), filepath.Join(tmp, "b.raw")
		if err := os.WriteFile(fa, c.a.Pix, 0o600); err != nil {
			return err
		}
		if err := os.WriteFile(fb, c.b.Pix, 0o600); err != nil {
			return err
		}
		w, h := c.a.Rect.Dx(), c.a.Rect.Dy()
		for _, m := range []struct{ metric, module string }{{diff.MetricYIQ, "pixelmatch7"}, {diff.MetricOKLab, "pixelmatch"}} {
			o := diff.DefaultOptions()
			o.ColorMetric = m.metric
			measure := func(o diff.Options) (time.Duration, *diff.Result, error) {
				var best time.Duration
				var res *diff.Result
				for range c.runs {
					start := time.Now()
					r, err := diff.Compare(c.a, c.b, o)
					if err != nil {
						return 0, nil, err
					}
					best, res = minDur(best, time.Since(start)), r
				}
				return best, res, nil
			}
			best, res, err := measure(o)
			if err != nil {
				return err
			}
			out, err := exec.Command(node, filepath.Join(dir, "bench.mjs"), m.module, fa, fb,
				fmt.Sprint(w), fmt.Sprint(h), fmt.Sprint(c.runs)).Output()
			if err != nil {
				return fmt.Errorf("node %s: %w", m.module, err)
			}
			var pm struct {
				MS      float64 `json:"ms"`
				Diff    int     `json:"diff"`
				Version string  `json:"version"`
			}
			if err := json.Unmarshal(bytes.TrimSpace(out), &pm); err != nil {
				return fmt.Errorf("node %s output %q: %w", m.module, out, err)
			}
			ours := float64(best.Microseconds()) / 1000
			fmt.Printf("bench: diff/pixelmatch = %.2f (%s, %s: snapq %.1f ms, %d px differ; pixelmatch %s %.1f ms, %d px; full diff image both, best of %d)\n",
				pm.MS/ours, c.name, m.metric, ours, res.DiffPixels, pm.Version, pm.MS, pm.Diff, c.runs)
			if c.crop {
				o.DiffCrop = 64
				best, res, err := measure(o)
				if err != nil {
					return err
				}
				ours := float64(best.Microseconds()) / 1000
				fmt.Printf("bench: diff/pixelmatch = %.2f (%s, %s: snapq %.1f ms with the diff image cropped to the changed rows ±64 (%d rows); pixelmatch's is full-page)\n",
					pm.MS/ours, c.name, m.metric, ours, res.Diff.Rect.Dy())
			}
		}
	}
	return nil
}

// nodeScript times pixelmatch on two raw RGBA files, best of runs, a new
// output buffer each run (as snapq allocates its diff image).
const nodeScript = `import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
const [mod, fa, fb, ws, hs, rs] = process.argv.slice(2);
const { default: pixelmatch } = await import(mod);
const pkg = createRequire(import.meta.url)(mod + '/package.json');
const a = new Uint8Array(readFileSync(fa)), b = new Uint8Array(readFileSync(fb));
const w = +ws, h = +hs;
let best = Infinity, diff = 0;
for (let i = 0; i < +rs; i++) {
  const out = new Uint8Array(w * h * 4);
  const t = performance.now();
  diff = pixelmatch(a, b, out, w, h, { threshold: 0.1 });
  best = Math.min(best, performance.now() - t);
}
console.log(JSON.stringify({ ms: best, diff, version: pkg.version }));
`

// nodeModules returns bench/.node with pixelmatch 8 (as pixelmatch) and 7
// (as pixelmatch7) installed, installing them with npm the first time.
func nodeModules() (string, error) {
	dir, err := filepath.Abs(filepath.Join("bench", ".node"))
	if err != nil {
		return "", err
	}
	if _, err := os.Stat("bench"); err != nil {
		dir = filepath.Join(os.TempDir(), "snapq-bench-node")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, "bench.mjs"), []byte(nodeScript), 0o644); err != nil {
		return "", err
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "pixelmatch7", "package.json")); err == nil {
		if _, err := os.Stat(filepath.Join(dir, "node_modules", "pixelmatch", "package.json")); err == nil {
			return dir, nil
		}
	}
	pkg := filepath.Join(dir, "package.json")
	if _, err := os.Stat(pkg); err != nil {
		if err := os.WriteFile(pkg, []byte(`{"name": "snapq-bench-node", "private": true}`+"\n"), 0o644); err != nil {
			return "", err
		}
	}
	cmd := exec.Command("npm", "install", "--no-audit", "--no-fund", "pixelmatch@8", "pixelmatch7@npm:pixelmatch@7", "pngjs@7")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("npm install pixelmatch: %v: %s", err, bytes.TrimSpace(out))
	}
	return dir, nil
}
