package cli

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/snapq/snapq/client"
)

type captureFlags struct {
	urls     []string
	sitemap  string
	limit    int
	include  []string
	exclude  []string
	crawl    string
	maxPages int
	maxDepth int
	sets     []string
	options  string
	labels   []string
	wait     bool
	out      string
	// --sync (capture_sync.go)
	sync    bool
	as      string
	output  string
	waitMS  int
	segment int
}

func (a *app) captureCommand() *cobra.Command {
	var f captureFlags
	cmd := &cobra.Command{
		Use:   "capture [FILE|-]",
		Short: "Submit a batch of pages to capture; optionally wait and download everything",
		Long: `capture submits one batch. Targets come from FILE (or - for standard input): one
URL per line, or name<TAB>url; blank lines and lines starting with # are
skipped. --url adds single pages. --sitemap instead has the server read a
sitemap (index, gzip or robots.txt; through its egress guard) and capture each
unique page, at most --limit, filtered by --include/--exclude patterns.
--crawl instead captures a start page and the pages its links lead to (same
origin), at most --max-pages in all and --max-depth link hops deep; the
--include/--exclude patterns filter the links followed.

Options are the batch's capture options (see docs/api/batches.md): --options FILE reads
a JSON object, and each --set key=value sets one dotted key in it; values are
JSON when they parse as JSON (numbers, true/false, lists), strings otherwise.

--wait follows the batch until every job is done, with a live progress bar on
a terminal and plain progress lines otherwise (on standard error). --out DIR
(implies --wait) downloads every artifact to DIR/<job name>/<artifact name>
and writes DIR/manifest.json with each file's size, sha256 and URL.
The exit code is 1 when any job failed, and the failed jobs are named.`,
		Example: `  snapq capture urls.txt --wait --out shots/
  printf 'home\thttps://example.com/\n' | snapq capture - --wait
  snapq capture --url https://example.com --set screenshot.mode=full --set viewport.width=390
  snapq capture --sitemap https://example.com/sitemap.xml --options opts.json --json
  snapq capture --crawl https://example.com/ --max-pages 50 --exclude '/blog/*' --wait`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 1 {
				return usagef("capture takes at most one FILE, got %d arguments", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.capture(cmd.Context(), args, f)
		},
	}
	fl := cmd.Flags()
	fl.StringArrayVar(&f.urls, "url", nil, "a page to capture (repeatable)")
	fl.StringVar(&f.sitemap, "sitemap", "", "capture every page listed in this sitemap, sitemap index or robots.txt (read by the server)")
	fl.IntVar(&f.limit, "limit", 0, "with --sitemap: at most this many pages (default: the server's batch limit)")
	fl.StringArrayVar(&f.include, "include", nil, "with --sitemap or --crawl: keep only URLs matching this pattern (repeatable; * is any run of characters)")
	fl.StringArrayVar(&f.exclude, "exclude", nil, "with --sitemap or --crawl: drop URLs matching this pattern (repeatable)")
	fl.StringVar(&f.crawl, "crawl", "", "capture this start page and the same-origin pages its links lead to (followed by the workers)")
	fl.IntVar(&f.maxPages, "max-pages", 0, "with --crawl: at most this many pages in all (default: the server's, 100)")
	fl.IntVar(&f.maxDepth, "max-depth", -1, "with --crawl: at most this many link hops from the start page (default: the server's, 2)")
	fl.StringArrayVar(&f.sets, "set", nil, "set a capture option: dotted.key=value (repeatable)")
	fl.StringVar(&f.options, "options", "", "a JSON file of capture options")
	fl.StringArrayVar(&f.labels, "label", nil, "label the batch: key=value (repeatable)")
	fl.BoolVar(&f.wait, "wait", false, "wait until every job is done, showing progress")
	fl.StringVar(&f.out, "out", "", "download every artifact into this directory (implies --wait)")
	syncFlags(fl, &f)
	return cmd
}

func (a *app) capture(ctx context.Context, args []string, f captureFlags) error {
	if f.sync {
		return a.captureSync(ctx, args, f)
	}
	req, err := a.buildBatch(ctx, args, f)
	if err != nil {
		return err
	}
	created, err := a.c.CreateBatch(ctx, req)
	if err != nil {
		return err
	}
	if f.out == "" && !f.wait {
		if a.json {
			return a.printJSON(created)
		}
		fmt.Fprintf(a.stdout, "batch %s: %d jobs submitted\n", created.ID, created.Total)
		fmt.Fprintf(a.stdout, "follow it with: snapq batches watch %s\n", created.ID)
		return nil
	}
	if !a.json {
		fmt.Fprintf(a.stdout, "batch %s: %d jobs submitted\n", created.ID, created.Total)
	}
	return a.finishBatch(ctx, created.ID, f.out)
}

// buildBatch gathers the targets and options of a capture.
func (a *app) buildBatch(ctx context.Context, args []string, f captureFlags) (client.BatchRequest, error) {
	var req client.BatchRequest
	if len(args) == 1 {
		ts, err := a.fileTargets(args[0])
		if err != nil {
			return req, err
		}
		req.Targets = ts
	}
	for _, u := range f.urls {
		req.Targets = append(req.Targets, client.Target{URL: u})
	}
	if err := f.sources(&req); err != nil {
		return req, err
	}
	if len(req.Targets) == 0 && req.Sitemap == "" && req.Crawl == nil {
		return req, usagef("nothing to capture: give a FILE of URLs, - for standard input, --url, --sitemap or --crawl")
	}
	raw, err := f.rawOptions()
	if err != nil {
		return req, err
	}
	req.RawOptions = raw
	if req.Labels, err = f.labelMap(); err != nil {
		return req, err
	}
	// One key per invocation: a submission retried after a 429 or a dropped
	// answer creates the batch once.
	var b [16]byte
	_, _ = rand.Read(b[:])
	req.IdempotencyKey = "snapq-cli-" + hex.EncodeToString(b[:])
	return req, nil
}

// fileTargets reads the targets of FILE (- for standard input).
func (a *app) fileTargets(src string) ([]client.Target, error) {
	r, name := a.stdin, "standard input"
	if src != "-" {
		file, err := os.Open(src)
		if err != nil {
			return nil, usageError{err}
		}
		defer file.Close()
		r, name = file, src
	}
	ts, err := readTargets(r, name)
	if err != nil {
		return nil, usageError{err}
	}
	return ts, nil
}

// sources sets the crawl or the sitemap of the batch, each the only source
// of its targets, with the flags that go with it.
func (f captureFlags) sources(req *client.BatchRequest) error {
	switch {
	case f.crawl != "" && (len(req.Targets) > 0 || f.sitemap != "" || f.limit != 0):
		return usagef("--crawl takes the place of a FILE, --url, --sitemap and --limit: give one")
	case f.crawl == "" && (f.maxPages != 0 || f.maxDepth != -1):
		return usagef("--max-pages and --max-depth go with --crawl")
	case f.crawl != "":
		req.Crawl = &client.Crawl{URL: f.crawl, MaxPages: f.maxPages, Include: f.include, Exclude: f.exclude}
		if f.maxDepth >= 0 {
			req.Crawl.MaxDepth = &f.maxDepth
		}
	case f.sitemap != "" && len(req.Targets) > 0:
		return usagef("--sitemap takes the place of a FILE and --url: give one or the other")
	case f.sitemap == "" && (f.limit != 0 || len(f.include) > 0 || len(f.exclude) > 0):
		return usagef("--limit, --include and --exclude go with --sitemap")
	case f.sitemap != "":
		// The server reads the sitemap, through its egress guard (docs/api/batches.md: A batch from a sitemap).
		req.Sitemap, req.Limit, req.Include, req.Exclude = f.sitemap, f.limit, f.include, f.exclude
	}
	return nil
}

// rawOptions are the capture options of --options and --set, checked; nil
// when there are none.
func (f captureFlags) rawOptions() (json.RawMessage, error) {
	opts := map[string]any{}
	if f.options != "" {
		raw, err := os.ReadFile(f.options)
		if err != nil {
			return nil, usageError{err}
		}
		dec := json.NewDecoder(strings.NewReader(string(raw)))
		dec.UseNumber()
		if err := dec.Decode(&opts); err != nil {
			return nil, usagef("--options %s: want a JSON object: %v", f.options, err)
		}
	}
	for _, s := range f.sets {
		if err := setOption(opts, s); err != nil {
			return nil, usageError{err}
		}
	}
	if len(opts) == 0 {
		return nil, nil
	}
	raw, err := json.Marshal(opts)
	if err != nil {
		return nil, usageError{err}
	}
	if err := checkOptions(raw); err != nil {
		return nil, usageError{err}
	}
	return raw, nil
}

// labelMap is the batch's labels of --label key=value; nil when there are
// none.
func (f captureFlags) labelMap() (map[string]string, error) {
	var labels map[string]string
	for _, l := range f.labels {
		k, v, ok := strings.Cut(l, "=")
		if !ok || k == "" {
			return nil, usagef("--label %q: want key=value", l)
		}
		if labels == nil {
			labels = map[string]string{}
		}
		labels[k] = v
	}
	return labels, nil
}

// finishBatch waits for the batch with progress, downloads its artifacts into
// out (when set), prints the outcome and fails when any job did not succeed.
func (a *app) finishBatch(ctx context.Context, id, out string) error {
	p := newProgress(a.stderr, a.quiet)
	b, err := a.c.WaitBatch(ctx, id, func(e client.BatchEvent) { p.update(e.Batch) })
	if err != nil {
		if ctx.Err() != nil {
			fmt.Fprintf(a.stderr, "\nstopped waiting; the batch goes on. Cancel it with: snapq batches cancel %s\n", id)
		}
		return err
	}
	p.finish(*b)
	var jobs []client.Job
	for j, err := range a.c.ListJobs(ctx, id, client.ListOptions{Limit: 1000}) {
		if err != nil {
			return err
		}
		jobs = append(jobs, j)
	}
	var manifest *Manifest
	if out != "" {
		if manifest, err = a.download(ctx, b, jobs, out); err != nil {
			return err
		}
	}
	var failed []client.Job
	for _, j := range jobs {
		if j.Status != client.JobSucceeded {
			failed = append(failed, j)
		}
	}
	if a.json {
		if err := a.printJSON(struct {
			Batch    *client.Batch `json:"batch"`
			Jobs     []client.Job  `json:"jobs"`
			Failed   []string      `json:"failed"`
			Manifest *Manifest     `json:"manifest,omitempty"`
		}{b, jobs, jobNames(failed), manifest}); err != nil {
			return err
		}
	} else {
		a.printJobs(jobs)
		fmt.Fprintf(a.stdout, "batch %s %s: %d succeeded, %d failed, %d canceled\n",
			b.ID, b.Status, b.Counts.Succeeded, b.Counts.Failed, b.Counts.Canceled)
		if manifest != nil {
			fmt.Fprintf(a.stdout, "%d files (%s) in %s, listed in %s\n", manifest.files(), humanBytes(manifest.bytes()),
				out, manifest.path)
		}
	}
	return failedJobs(a.stderr, failed)
}

// failedJobs names each job that did not succeed on w and returns the
// failure, or nil when there is none.
func failedJobs(w interface{ Write([]byte) (int, error) }, failed []client.Job) error {
	if len(failed) == 0 {
		return nil
	}
	for _, j := range failed {
		reason := j.Status
		if j.Error != nil {
			reason += ": " + j.Error.Code + ": " + j.Error.Message
		}
		fmt.Fprintf(w, "failed job %s (%s) %s: %s\n", j.Name, j.ID, j.URL, reason)
	}
	return failedError{fmt.Sprintf("%d of the batch's jobs did not succeed", len(failed))}
}

func jobNames(js []client.Job) []string {
	out := make([]string, len(js))
	for i, j := range js {
		out[i] = j.Name
	}
	return out
}
