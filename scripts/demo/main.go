// Command demo submits a sample batch of local fixture pages to a running
// snapq api through the Go client (client/), follows it, and prints each job
// with its artifact URLs; then it runs the demo visual-regression suite.
// `make demo` runs it after starting the stack.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"time"

	"github.com/snapq/snapq/client"
)

func main() {
	api := "http://" + getenv("SNAPQ_HTTP_ADDR", "127.0.0.1:8080")
	site := "http://" + getenv("SNAPQ_FIXTURES_ADDR", "127.0.0.2:8090")
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, api, site); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, api, site string) error {
	c, err := client.New(client.Config{BaseURL: api, APIKey: os.Getenv("SNAPQ_API_KEY"), PollInterval: 2 * time.Second})
	if err != nil {
		return err
	}
	created, err := c.CreateBatch(ctx, demoBatch(api, site))
	if err != nil {
		return fmt.Errorf("submit batch: %w (is the api up? make up)", err)
	}
	fmt.Printf("submitted batch %s with %d jobs: %s/v1/batches/%s\n", created.ID, len(created.Jobs), api, created.ID)
	b, err := follow(ctx, c, created)
	if err != nil {
		return err
	}
	if err := printJobs(ctx, c, b.ID); err != nil {
		return err
	}
	runID, err := regression(ctx, c, site)
	if err != nil {
		return err
	}
	fmt.Printf("\nDashboard: %s/#/batches/%s · visual regression run: %s/#/runs/%s · queues: %s/admin/queues\n",
		api, b.ID, api, runID, api)
	fmt.Printf("The same from the CLI: go run ./cmd/snapq batches get %s (or: go install ./cmd/snapq)\n", b.ID)
	fmt.Printf("The stack keeps running: api %s, logs in .data/logs/, stop it with make down.\n", api)
	return nil
}

// demoBatch is the sample batch: fixture pages of every shape, a 404, and the api itself,
// which the egress guard refuses.
func demoBatch(api, site string) client.BatchRequest {
	return client.BatchRequest{
		Labels: map[string]string{"source": "make demo"},
		Targets: []client.Target{
			{URL: site + "/short", Name: "short"},
			{URL: site + "/article?n=40", Name: "article"},
			{URL: site + "/tall?h=5000", Name: "tall"},
			{URL: site + "/images?n=16", Name: "images"},
			{URL: site + "/status/404", Name: "not-found"},
			{URL: site + "/tall?h=60000", Name: "very-tall",
				Options: &client.Options{Screenshot: &client.ScreenshotOptions{MaxSegments: client.Ptr(5)}}},
			{URL: site + "/tall?h=3000", Name: "full-page", Options: &client.Options{Screenshot: &client.ScreenshotOptions{
				Mode: client.Ptr("full"), Format: client.Ptr("jpeg"), Quality: client.Ptr(80)}}},
			// The api itself, on loopback: the egress guard refuses it (blocked_address).
			{URL: api + "/readyz", Name: "guarded"},
		},
	}
}

// follow prints the batch's progress until it finishes (at most 5 minutes).
func follow(ctx context.Context, c *client.Client, created *client.CreatedBatch) (*client.Batch, error) {
	waitCtx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	last := ""
	b, err := c.WaitBatch(waitCtx, created.ID, func(e client.BatchEvent) {
		line := fmt.Sprintf("  %s: %d/%d done (%d succeeded, %d failed, %d running)", e.Batch.Status,
			e.Batch.Counts.Done(), created.Total, e.Batch.Counts.Succeeded, e.Batch.Counts.Failed, e.Batch.Counts.Running)
		if e.Job != nil {
			line = fmt.Sprintf("  job %-10s %s", e.Job.Name, e.Job.Status)
		}
		if line != last {
			fmt.Println(line)
			last = line
		}
	})
	if err != nil {
		return nil, fmt.Errorf("batch not completed: %w; see .data/logs/worker.log", err)
	}
	fmt.Printf("  %s: %d succeeded, %d failed\n", b.Status, b.Counts.Succeeded, b.Counts.Failed)
	return b, nil
}

// printJobs prints each job of the batch: status, error, result and artifact URLs.
func printJobs(ctx context.Context, c *client.Client, batchID string) error {
	for j, err := range c.ListJobs(ctx, batchID, client.ListOptions{}) {
		if err != nil {
			return err
		}
		full, err := c.GetJob(ctx, j.ID)
		if err != nil {
			return err
		}
		fmt.Printf("\n%-10s %-9s %s\n", full.Name, full.Status, full.URL)
		if full.Error != nil {
			fmt.Printf("  error %s: %s\n", full.Error.Code, full.Error.Message)
		}
		if r := full.Result; r != nil {
			fmt.Printf("  http %d, page height %d px, segments %d of %d (truncated %v)\n",
				r.HTTPStatus, r.PageHeight, r.Segments.Captured, r.Segments.Total, r.Segments.Truncated)
		}
		for _, a := range full.Artifacts {
			fmt.Printf("  %-16s %5dx%-6d %8d B  %s\n", a.Name, a.Width, a.Height, a.Bytes, a.URL)
		}
	}
	return nil
}

func getenv(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// regression runs the demo suite (created on first use): the first run needs
// review; later runs compare with what was approved.
func regression(ctx context.Context, c *client.Client, site string) (string, error) {
	const name = "snapq demo"
	suiteID := ""
	for s, err := range c.ListSuites(ctx, client.ListOptions{}) {
		if err != nil {
			return "", err
		}
		if s.Name == name {
			suiteID = s.ID
		}
	}
	if suiteID == "" {
		s, err := c.CreateSuite(ctx, client.SuiteInput{Name: name, Targets: []client.SuiteTarget{
			{URL: site + "/short", Name: "short"},
			{URL: site + "/tall?h=2000", Name: "tall", Viewports: []client.Viewport{{Width: 1280, Height: 720}, {Width: 390, Height: 844}}},
		}})
		if err != nil {
			return "", err
		}
		suiteID = s.ID
	}
	run, err := c.StartRun(ctx, suiteID)
	if err != nil {
		return "", err
	}
	fmt.Printf("\nvisual regression: suite %q, run %s\n", name, run.ID)
	waitCtx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	run, err = c.WaitRun(waitCtx, run.ID, nil)
	if err != nil {
		return "", fmt.Errorf("run not finished: %w; see .data/logs/worker.log", err)
	}
	fmt.Printf("  %s: %d comparisons, %d passed, %d failed, %d new\n", run.Status, run.Counts.Total, run.Counts.Passed,
		run.Counts.Failed, run.Counts.New)
	if run.Status == client.RunNeedsReview {
		fmt.Printf("  approve it to make these captures the baselines: go run ./cmd/snapq suites approve %s --all\n", run.ID)
	}
	return run.ID, nil
}
