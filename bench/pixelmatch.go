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
	"runtime"
	"runtime/pprof"
	"syscall"
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
// the same run, pair by pair: best of runs each after warm-up runs (V8
// compiles pixelmatch during its first runs), wall time on all cores and on
// one and CPU time, PNG decoding excluded on both sides, both rendering a
// full diff image (a new one each run), at pixelmatch's defaults
// (threshold 0.1, anti-aliasing detected). Pairs: the bench's own
// (pageImages), pixelmatch's own test fixtures (as Go's image/png decodes
// them: NRGBA, RGBA or Paletted; pixelmatch decodes them with pngjs), a
// text-like 1280×20,000 page with one 200×100 change (as an RGB and an RGBA
// PNG would decode), a re-encoded photo and random colour strokes, opaque
// and with alpha. The differing-pixel counts must be pixelmatch's, or the
// bench fails. The bench's own pairs are also timed in OKLab against
// pixelmatch 8. Without node the lines say so and the bench goes on.
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
	worst := map[string]pairRatios{}
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
			w, ok := worst[key]
			if !ok {
				w = ratio
			}
			worst[key] = pairRatios{min(w.wall, ratio.wall), min(w.oneCore, ratio.oneCore), min(w.cpu, ratio.cpu)}
		}
	}
	for _, k := range []string{"busy yiq", "tall yiq", "busy oklab", "tall oklab"} {
		w := worst[k]
		fmt.Printf("bench: diff/pixelmatch %s: worst pair = %.2f (one core %.2f, CPU time %.2f)\n", k, w.wall, w.oneCore, w.cpu)
	}
	if len(mismatches) > 0 {
		return fmt.Errorf("diff/pixelmatch: counts differ from pixelmatch's on %q", mismatches)
	}
	return nil
}

// pairRatios are pixelmatch's time / snapq's on one pair: best wall times
// with snapq on all cores (GOMAXPROCS) and on one, and best CPU times of a
// run (snapq on one core; pixelmatch is single-threaded), which the other
// processes of a shared machine disturb least.
type pairRatios struct{ wall, oneCore, cpu float64 }

// pixelmatchPair times one pair both ways and prints its line: the ratios
// pixelmatch's time / snapq's, and whether the counts are equal. snapq is
// timed before and after pixelmatch (best of both), so a change of the
// machine's load during the pair weighs on both sides.
func pixelmatchPair(node, tmp string, p diffPair, metric, module string) (pairRatios, bool, error) {
	th := p.threshold
	if th == 0 {
		th = diff.DefaultThreshold
	}
	o := diff.Options{Threshold: th, DiffImage: true, ColorMetric: metric, Checkerboard: p.checkerboard}
	before, res, err := timeCompare(p, o)
	if err != nil {
		return pairRatios{}, false, err
	}
	pm, err := runPixelmatch(node, tmp, p, module, th)
	if err != nil {
		return pairRatios{}, false, err
	}
	after, _, err := timeCompare(p, o)
	if err != nil {
		return pairRatios{}, false, err
	}
	best := before.best(after)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	r := pairRatios{pm.MS / ms(best.wall), pm.MS / ms(best.wall1), pm.CPUMS / ms(best.cpu1)}
	same := pm.Diff == res.DiffPixels
	verdict := "counts equal"
	if !same {
		verdict = "COUNTS DIFFER"
	}
	fmt.Printf("bench: diff/pixelmatch = %.2f (%s, %s: snapq %.2f ms, one core %.2f ms, CPU %.2f ms, %d px; pixelmatch %s %.2f ms, CPU %.2f ms after %d warm-up runs, %d px; one core %.2f, CPU time %.2f; %s; full diff image both, best of %d)\n",
		r.wall, p.name, metric, ms(best.wall), ms(best.wall1), ms(best.cpu1), res.DiffPixels, pm.Version, pm.MS, pm.CPUMS, pm.Warm, pm.Diff, r.oneCore, r.cpu, verdict, p.runs)
	if p.crop && metric == diff.MetricYIQ {
		o.DiffCrop = 64
		crop, res, err := timeCompare(p, o)
		if err != nil {
			return pairRatios{}, false, err
		}
		fmt.Printf("bench: diff/pixelmatch = %.2f (%s, %s: snapq %.2f ms with the diff image cropped to the changed rows ±64 (%d rows); pixelmatch's is full-page)\n",
			pm.MS/ms(crop.wall), p.name, metric, ms(crop.wall), res.Diff.Rect.Dy())
		var alloc time.Duration
		for range p.runs {
			start := time.Now()
			img := image.NewNRGBA(p.a.Bounds())
			alloc = minDur(alloc, time.Since(start))
			img.Pix[len(img.Pix)-1] = 1
		}
		fmt.Printf("bench: diff %s: a zeroed image of that size (image.NewNRGBA) takes %.2f ms to allocate; Compare's diff image is not zeroed (every byte is drawn)\n",
			p.name, ms(alloc))
	}
	return r, same, nil
}

// compareTime is snapq's best times on a pair: wall time on all cores
// (GOMAXPROCS), and wall and process CPU time with GOMAXPROCS=1.
type compareTime struct{ wall, wall1, cpu1 time.Duration }

func (t compareTime) best(u compareTime) compareTime {
	return compareTime{minDur(t.wall, u.wall), minDur(t.wall1, u.wall1), minDur(t.cpu1, u.cpu1)}
}

// timeCompare is snapq's best times on p with o, after two untimed runs:
// p.runs on all cores and p.runs on one, interleaved (the order alternates).
func timeCompare(p diffPair, o diff.Options) (compareTime, *diff.Result, error) {
	var t compareTime
	var res *diff.Result
	for range 2 {
		out, err := diff.Compare(p.a, p.b, o)
		if err != nil {
			return t, nil, err
		}
		out.Release()
	}
	procs := runtime.GOMAXPROCS(0)
	defer runtime.GOMAXPROCS(procs)
	for r := range 2 * p.runs {
		one := r%4 == 1 || r%4 == 2
		if one {
			runtime.GOMAXPROCS(1)
		} else {
			runtime.GOMAXPROCS(procs)
		}
		c0, start := processCPU(), time.Now()
		out, err := diff.Compare(p.a, p.b, o)
		if err != nil {
			return t, nil, err
		}
		wall, cpu := time.Since(start), processCPU()-c0
		if one {
			t.wall1, t.cpu1 = minDur(t.wall1, wall), minDur(t.cpu1, cpu)
		} else {
			t.wall = minDur(t.wall, wall)
		}
		res.Release() // as the regression comparer does once a diff image is encoded
		res = out
	}
	return t, res, nil
}

// processCPU is the CPU time (user + system) the process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

type pixelmatchTime struct {
	MS      float64 `json:"ms"`
	CPUMS   float64 `json:"cpu_ms"`
	Warm    int     `json:"warm"`
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
