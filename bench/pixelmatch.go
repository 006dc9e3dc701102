package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"image"
	"image/draw"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"time"

	"github.com/snapq/snapq/diff"
)

// diffProfile, when set (-diff-cpuprofile), receives a CPU profile of
// snapq's side of the pixelmatch comparison.
var diffProfile string

// nodeDir holds the pinned Node packages (package.json, package-lock.json:
// pixelmatch 7.1.0, pixelmatch 8.0.0 as pixelmatch8, pngjs 7.0.0) and the
// timing script; `npm ci` installs them into its node_modules (ignored).
const nodeDir = "bench/node"

// pixelmatchBench times diff.Compare against pixelmatch 7.1.0 on Node, in
// the same run, pair by pair: best of runs each, PNG decoding excluded on
// both sides, both rendering a full diff image (a new one each run), at
// pixelmatch's defaults (threshold 0.1, anti-aliasing detected). Pairs:
// the bench's own (pageImages), pixelmatch's own test fixtures (as Go's
// image/png decodes them: NRGBA, RGBA or Paletted; pixelmatch decodes them
// with pngjs), a text-like 1280×20,000 page with one 200×100 change (as an
// RGB and an RGBA PNG would decode), a re-encoded photo and random colour
// strokes. The differing-pixel counts must be pixelmatch's, or the bench
// fails. The bench's own pairs are also timed in OKLab against pixelmatch 8.
// Without node the lines say so and the bench goes on.
func pixelmatchBench() error {
	node, err := exec.LookPath("node")
	if err != nil {
		fmt.Println("bench: diff/pixelmatch: skipped (no node on PATH)")
		return nil
	}
	if err := npmCI(); err != nil {
		fmt.Printf("bench: diff/pixelmatch: skipped (%v)\n", err)
		return nil
	}
	fixtures, err := fixturePairs()
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "snapq-bench-pm")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if diffProfile != "" {
		f, err := os.Create(diffProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	worst := map[string]float64{}
	var mismatches []string
	for _, p := range append(generatedPairs(), fixtures...) {
		metrics := []struct{ metric, module string }{{diff.MetricYIQ, "pixelmatch"}}
		if p.name[:6] == "bench " {
			metrics = append(metrics, struct{ metric, module string }{diff.MetricOKLab, "pixelmatch8"})
		}
		for _, m := range metrics {
			ratio, same, err := pixelmatchPair(node, tmp, p, m.metric, m.module)
			if err != nil {
				return fmt.Errorf("%s: %w", p.name, err)
			}
			if !same {
				mismatches = append(mismatches, p.name)
			}
			key := p.kind + " " + m.metric
			if w, ok := worst[key]; !ok || ratio < w {
				worst[key] = ratio
			}
		}
	}
	for _, k := range []string{"busy yiq", "tall yiq", "busy oklab", "tall oklab"} {
		fmt.Printf("bench: diff/pixelmatch %s: worst pair = %.2f\n", k, worst[k])
	}
	if len(mismatches) > 0 {
		return fmt.Errorf("diff/pixelmatch: counts differ from pixelmatch's on %q", mismatches)
	}
	return nil
}

// pixelmatchPair times one pair both ways and prints its line: the ratio
// pixelmatch's time / snapq's, and whether the counts are equal.
func pixelmatchPair(node, tmp string, p diffPair, metric, module string) (float64, bool, error) {
	th := p.threshold
	if th == 0 {
		th = diff.DefaultThreshold
	}
	o := diff.Options{Threshold: th, DiffImage: true, ColorMetric: metric, Checkerboard: p.checkerboard}
	best, res, err := timeCompare(p, o)
	if err != nil {
		return 0, false, err
	}
	pm, err := runPixelmatch(node, tmp, p, module, th)
	if err != nil {
		return 0, false, err
	}
	ours := float64(best.Microseconds()) / 1000
	same := pm.Diff == res.DiffPixels
	verdict := "counts equal"
	if !same {
		verdict = "COUNTS DIFFER"
	}
	fmt.Printf("bench: diff/pixelmatch = %.2f (%s, %s: snapq %.2f ms, %d px; pixelmatch %s %.2f ms, %d px; %s; full diff image both, best of %d)\n",
		pm.MS/ours, p.name, metric, ours, res.DiffPixels, pm.Version, pm.MS, pm.Diff, verdict, p.runs)
	if p.crop && metric == diff.MetricYIQ {
		o.DiffCrop = 64
		best, res, err := timeCompare(p, o)
		if err != nil {
			return 0, false, err
		}
		ours := float64(best.Microseconds()) / 1000
		fmt.Printf("bench: diff/pixelmatch = %.2f (%s, %s: snapq %.2f ms with the diff image cropped to the changed rows ±64 (%d rows); pixelmatch's is full-page)\n",
			pm.MS/ours, p.name, metric, ours, res.Diff.Rect.Dy())
		var alloc time.Duration
		for range p.runs {
			start := time.Now()
			img := image.NewNRGBA(p.a.Bounds())
			alloc = minDur(alloc, time.Since(start))
			img.Pix[len(img.Pix)-1] = 1
		}
		fmt.Printf("bench: diff %s: allocating the diff image alone (image.NewNRGBA, zeroed) takes %.2f ms of snapq's full-image time\n",
			p.name, float64(alloc.Microseconds())/1000)
	}
	return pm.MS / ours, same, nil
}

// timeCompare is snapq's best time on p with o.
func timeCompare(p diffPair, o diff.Options) (time.Duration, *diff.Result, error) {
	var best time.Duration
	var res *diff.Result
	for range p.runs {
		start := time.Now()
		r, err := diff.Compare(p.a, p.b, o)
		if err != nil {
			return 0, nil, err
		}
		best, res = minDur(best, time.Since(start)), r
	}
	return best, res, nil
}

type pixelmatchTime struct {
	MS      float64 `json:"ms"`
	Diff    int     `json:"diff"`
	Version string  `json:"version"`
}

// runPixelmatch runs bench/node/bench.mjs on p: the fixtures' PNG files, or
// the raw straight-alpha pixels of generated pairs.
func runPixelmatch(node, tmp string, p diffPair, module string, th float64) (pixelmatchTime, error) {
	fa, fb := p.pngA, p.pngB
	w, h := p.a.Bounds().Dx(), p.a.Bounds().Dy()
	if fa == "" {
		fa, fb = filepath.Join(tmp, "a.raw"), filepath.Join(tmp, "b.raw")
		if err := os.WriteFile(fa, straightRGBA(p.a), 0o600); err != nil {
			return pixelmatchTime{}, err
		}
		if err := os.WriteFile(fb, straightRGBA(p.b), 0o600); err != nil {
			return pixelmatchTime{}, err
		}
	}
	var stderr bytes.Buffer
	cmd := exec.Command(node, filepath.Join(nodeDir, "bench.mjs"), module, fmt.Sprint(p.runs), fmt.Sprint(th),
		fa, fb, fmt.Sprint(w), fmt.Sprint(h))
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return pixelmatchTime{}, fmt.Errorf("node %s: %w: %s", module, err, bytes.TrimSpace(stderr.Bytes()))
	}
	var pm pixelmatchTime
	if err := json.Unmarshal(bytes.TrimSpace(out), &pm); err != nil {
		return pixelmatchTime{}, fmt.Errorf("node %s output %q: %w", module, out, err)
	}
	return pm, nil
}

// straightRGBA is img's pixels as straight-alpha RGBA bytes, w×h×4.
func straightRGBA(img image.Image) []byte {
	b := img.Bounds()
	n := image.NewNRGBA(image.Rect(0, 0, b.Dx(), b.Dy()))
	draw.Draw(n, n.Rect, img, b.Min, draw.Src)
	return n.Pix
}

// npmCI installs bench/node's locked packages (npm ci) unless they are
// installed already.
func npmCI() error {
	if _, err := os.Stat(filepath.Join(nodeDir, "package-lock.json")); err != nil {
		return fmt.Errorf("%w (run the bench from the repository root)", err)
	}
	lock, err := os.ReadFile(filepath.Join(nodeDir, "package-lock.json"))
	if err != nil {
		return err
	}
	installed, err := os.ReadFile(filepath.Join(nodeDir, "node_modules", ".package-lock.json"))
	if err == nil && sameLockedPackages(lock, installed) {
		return nil
	}
	cmd := exec.Command("npm", "ci", "--no-audit", "--no-fund")
	cmd.Dir = nodeDir
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("npm ci in %s: %v: %s", nodeDir, err, bytes.TrimSpace(out))
	}
	return nil
}

// sameLockedPackages reports whether npm's record of what it installed
// (node_modules/.package-lock.json) lists the lock file's packages.
func sameLockedPackages(lock, installed []byte) bool {
	var l, i struct {
		Packages map[string]struct{ Version, Integrity string } `json:"packages"`
	}
	if json.Unmarshal(lock, &l) != nil || json.Unmarshal(installed, &i) != nil {
		return false
	}
	for k, v := range l.Packages {
		if k == "" {
			continue
		}
		if got, ok := i.Packages[k]; !ok || got != v {
			return false
		}
	}
	return true
}
