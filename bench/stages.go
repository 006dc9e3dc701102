package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/snapq/snapq/jobs"
)

// stageOrder is the order of the stage table: a job's life, first to last.
// Stages not listed here (new ones) follow, sorted.
var stageOrder = []string{"queue", "start", "slot", "tab", "navigate", "auth", "wait", "prepare", "actions", "inspect",
	"quality", "capture", "encode", "reset", "upload", "thumbnail", "files", "commit", "events"}

// stageTable collects, over the e2e rounds, every succeeded job's
// result.timings_ms (exact per-job values) and the worker's
// snapq_worker_stage_seconds histogram for the stages after the commit.
type stageTable struct {
	jobs    map[string][]float64 // stage → ms, one per job
	elapsed []float64            // started_at → finished_at, ms
	hist    map[string]map[float64]float64
	metrics string // the worker's /metrics URL
}

func newStageTable(metrics string) *stageTable {
	return &stageTable{jobs: map[string][]float64{}, metrics: metrics}
}

// addBatch reads the timings of every job of the batch.
func (t *stageTable) addBatch(api, batchID string) error {
	resp, err := http.Get(api + "/v1/batches/" + batchID + "/jobs?limit=1000")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var list struct {
		Jobs []struct {
			StartedAt  *time.Time `json:"started_at"`
			FinishedAt *time.Time `json:"finished_at"`
			Result     *struct {
				TimingsMS map[string]int64 `json:"timings_ms"`
			} `json:"result"`
		} `json:"jobs"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		return fmt.Errorf("jobs of batch %s: %w", batchID, err)
	}
	for _, j := range list.Jobs {
		if j.Result == nil {
			continue
		}
		for k, v := range j.Result.TimingsMS {
			t.jobs[k] = append(t.jobs[k], float64(v))
		}
		if j.StartedAt != nil && j.FinishedAt != nil {
			t.elapsed = append(t.elapsed, float64(j.FinishedAt.Sub(*j.StartedAt).Milliseconds()))
		}
	}
	return nil
}

// addTimings adds one capture's timings (the capture package alone).
func (t *stageTable) addTimings(timings map[string]int64) {
	for k, v := range timings {
		t.jobs[k] = append(t.jobs[k], float64(v))
	}
}

// scrape reads the cumulative stage histogram: stage → upper bound → count.
func scrapeStages(url string) (map[string]map[float64]float64, error) {
	resp, err := http.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out := map[string]map[float64]float64{}
	sc := bufio.NewScanner(io.LimitReader(resp.Body, 64<<20))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	const prefix = `snapq_worker_stage_seconds_bucket{`
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, prefix) {
			continue
		}
		labels, value, ok := strings.Cut(line[len(prefix):], "} ")
		if !ok {
			continue
		}
		stage, le := labelValue(labels, "stage"), labelValue(labels, "le")
		bound, err1 := strconv.ParseFloat(le, 64)
		n, err2 := strconv.ParseFloat(value, 64)
		if stage == "" || err1 != nil || err2 != nil {
			continue
		}
		if out[stage] == nil {
			out[stage] = map[float64]float64{}
		}
		out[stage][bound] = n
	}
	return out, sc.Err()
}

func labelValue(labels, name string) string {
	for _, kv := range strings.Split(labels, ",") {
		k, v, _ := strings.Cut(kv, "=")
		if k == name {
			return strings.Trim(v, `"`)
		}
	}
	return ""
}

// histDelta is after − before of each stage's cumulative buckets.
func histDelta(before, after map[string]map[float64]float64) map[string]map[float64]float64 {
	out := map[string]map[float64]float64{}
	for stage, buckets := range after {
		out[stage] = map[float64]float64{}
		for le, n := range buckets {
			out[stage][le] = n - before[stage][le]
		}
	}
	return out
}

// histQuantile is q of cumulative buckets (upper bound → count), linearly
// interpolated inside its bucket, in ms; NaN when empty.
func histQuantile(buckets map[float64]float64, q float64) float64 {
	bounds := make([]float64, 0, len(buckets))
	for le := range buckets {
		bounds = append(bounds, le)
	}
	sort.Float64s(bounds)
	if len(bounds) == 0 || buckets[bounds[len(bounds)-1]] == 0 {
		return math.NaN()
	}
	total := buckets[bounds[len(bounds)-1]]
	rank, lo, prev := q*total, 0.0, 0.0
	for _, le := range bounds {
		n := buckets[le]
		if n >= rank {
			if math.IsInf(le, 1) {
				return lo * 1000
			}
			if n == prev {
				return le * 1000
			}
			return (lo + (le-lo)*(rank-prev)/(n-prev)) * 1000
		}
		lo, prev = le, n
	}
	return lo * 1000
}

// quantile is q of xs (nearest rank), NaN when empty.
func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	sort.Float64s(s)
	i := int(math.Ceil(q*float64(len(s)))) - 1
	return s[max(0, min(i, len(s)-1))]
}

func mean(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	sum := 0.0
	for _, x := range xs {
		sum += x
	}
	return sum / float64(len(xs))
}

// print writes the table: a stage missing from a job (a phase it did not
// run) counts as 0 for that job.
func (t *stageTable) print() {
	n := len(t.jobs["total"])
	fmt.Printf("bench: stage table over %d succeeded jobs (ms; per job, exclusive; job = result.timings_ms, hist = worker histogram):\n", n)
	fmt.Printf("bench:   %-10s %8s %8s %8s  %s\n", "stage", "p50", "p95", "mean", "source")
	names := slices.Clone(stageOrder)
	for k := range t.jobs {
		if !slices.Contains(names, k) && k != "total" {
			names = append(names, k)
		}
	}
	sort.SliceStable(names[len(stageOrder):], func(i, j int) bool { return names[len(stageOrder)+i] < names[len(stageOrder)+j] })
	sumMean := 0.0
	for _, k := range names {
		if xs, ok := t.jobs[k]; ok {
			xs = append(slices.Clone(xs), make([]float64, max(0, n-len(xs)))...)
			sumMean += mean(xs)
			fmt.Printf("bench:   %-10s %8.0f %8.0f %8.1f  job\n", k, quantile(xs, 0.5), quantile(xs, 0.95), mean(xs))
		} else if b, ok := t.hist[k]; ok {
			fmt.Printf("bench:   %-10s %8.1f %8.1f %8s  hist\n", k, histQuantile(b, 0.5), histQuantile(b, 0.95), "")
		}
		if b, ok := t.hist[jobs.StageBand]; ok && k == "capture" {
			fmt.Printf("bench:     %-8s %8.1f %8.1f %8s  hist (each screenshot call inside capture: one band of segments)\n",
				"per band", histQuantile(b, 0.5), histQuantile(b, 0.95), "")
		}
	}
	fmt.Printf("bench:   %-10s %8.0f %8.0f %8.1f  job (the worker's own time: start to commit)\n", "total",
		quantile(t.jobs["total"], 0.5), quantile(t.jobs["total"], 0.95), mean(t.jobs["total"]))
	fmt.Printf("bench:   %-10s %8.0f %8.0f %8.1f  started_at→finished_at\n", "elapsed",
		quantile(t.elapsed, 0.5), quantile(t.elapsed, 0.95), mean(t.elapsed))
	fmt.Printf("bench:   sum of the job stages' means %.0f ms (queue included)\n", sumMean)
}
