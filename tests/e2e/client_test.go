package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/snapq/snapq/client"
)

// goClient is the Go client of the stack's api, sending through the stack's
// contract-checked HTTP client (every request and answer held to web/openapi.json).
func (s *stack) goClient() *client.Client {
	s.t.Helper()
	c, err := client.New(client.Config{BaseURL: s.api, HTTPClient: s.client, PollInterval: 250 * time.Millisecond})
	if err != nil {
		s.t.Fatal(err)
	}
	return c
}

// TestGoClient drives a batch through the Go client as a user's program
// would: submit, wait, page through the jobs, download every artifact, and
// read the API's errors as typed values.
func TestGoClient(t *testing.T) {
	t.Parallel()
	s := sharedStack(t)
	site := fixtureSite(t)
	c := s.goClient()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute) // generous: the suite shares the machine
	defer cancel()

	created, err := c.CreateBatch(ctx, client.BatchRequest{
		Targets: []client.Target{
			{URL: site + "/short", Name: "short"},
			{URL: site + "/tall?h=2000", Name: "tall"},
			{URL: site + "/status/404", Name: "missing",
				Options: &client.Options{Screenshot: &client.ScreenshotOptions{Mode: client.Ptr("viewport")}}},
		},
		Options: &client.Options{Viewport: &client.ViewportOptions{Width: client.Ptr(800), Height: client.Ptr(600)},
			Outputs: &[]string{"screenshot", "text"}},
		Labels: map[string]string{"test": "go-client"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if created.Total != 3 || len(created.Jobs) != 3 || created.Labels["test"] != "go-client" {
		t.Fatalf("created %+v, want 3 jobs and the label", created)
	}
	events, types := 0, map[string]int{}
	b, err := c.WaitBatch(ctx, created.ID, func(e client.BatchEvent) { events++; types[e.Type]++ })
	if err != nil {
		t.Fatal(err)
	}
	if b.Status != client.BatchCompleted || b.Counts.Succeeded != 3 || events == 0 {
		t.Fatalf("waited batch %+v after %d events, want 3 succeeded", b, events)
	}
	t.Logf("WaitBatch saw %v (poll: no event stream on this api)", types)

	// Two jobs a page: the iterator follows the cursor to the third.
	var names []string
	for j, err := range c.ListJobs(ctx, b.ID, client.ListOptions{Limit: 2}) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, j.Name)
		full, err := c.GetJob(ctx, j.ID)
		if err != nil {
			t.Fatal(err)
		}
		if full.Status != client.JobSucceeded || full.Result == nil || len(full.Artifacts) < 2 {
			t.Fatalf("job %s: status %s, result %v, %d artifacts; want succeeded with a screenshot and text",
				j.Name, full.Status, full.Result, len(full.Artifacts))
		}
		if j.Name == "missing" && full.Result.HTTPStatus != 404 {
			t.Errorf("missing: http_status %d, want 404 (a result, not a failure)", full.Result.HTTPStatus)
		}
		for _, a := range full.Artifacts {
			h := sha256.New()
			n, err := c.DownloadArtifact(ctx, a.ID, h)
			if err != nil {
				t.Fatalf("download %s/%s: %v", j.Name, a.Name, err)
			}
			if sum := hex.EncodeToString(h.Sum(nil)); n != a.Bytes || sum != a.SHA256 {
				t.Errorf("%s/%s: downloaded %d bytes sha256 %s; the api lists %d bytes %s", j.Name, a.Name, n, sum, a.Bytes, a.SHA256)
			}
		}
	}
	if strings.Join(names, ",") != "short,tall,missing" {
		t.Errorf("jobs in order: %v", names)
	}
	found := false
	for lb, err := range c.ListBatches(ctx, client.ListOptions{Limit: 1}) {
		if err != nil {
			t.Fatal(err)
		}
		found = found || lb.ID == b.ID
	}
	if !found {
		t.Errorf("ListBatches did not list batch %s", b.ID)
	}

	// A bad target: a typed 400 naming the field.
	_, err = c.CreateBatch(ctx, client.BatchRequest{URLs: []string{site + "/short", "ftp://example.com/"}})
	var apiErr *client.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusBadRequest || apiErr.Code != "invalid_url" ||
		apiErr.Field != "urls[1]" || len(apiErr.Fields) != 1 {
		t.Errorf("bad URL: %#v, want a 400 invalid_url naming urls[1]", err)
	}
	// An unknown batch: a typed 404.
	_, err = c.GetBatch(ctx, "00000000-0000-4000-8000-000000000000")
	if !client.IsNotFound(err) || !errors.As(err, &apiErr) || apiErr.Code != "not_found" {
		t.Errorf("unknown batch: %#v, want a 404 not_found", err)
	}
	if _, err := c.WaitBatch(ctx, "00000000-0000-4000-8000-000000000000", nil); !client.IsNotFound(err) {
		t.Errorf("waiting for an unknown batch: %v, want a 404", err)
	}
}
