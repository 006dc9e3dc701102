// Command demo submits a sample batch of local fixture pages to a running
// snapq api, waits for it to finish, and prints each job with its artifact
// URLs. `make demo` runs it after starting the stack.
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"
)

func main() {
	api := "http://" + getenv("SNAPQ_HTTP_ADDR", "127.0.0.1:8080")
	site := "http://" + getenv("SNAPQ_FIXTURES_ADDR", "127.0.0.2:8090")
	if err := run(api, site); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

type job struct {
	ID     string `json:"id"`
	URL    string `json:"url"`
	Name   string `json:"name"`
	Status string `json:"status"`
	Error  *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
	Result *struct {
		HTTPStatus int `json:"http_status"`
		PageHeight int `json:"page_height"`
		Segments   struct {
			Total     int  `json:"total"`
			Captured  int  `json:"captured"`
			Truncated bool `json:"truncated"`
		} `json:"segments"`
	} `json:"result"`
	Artifacts []struct {
		Name   string `json:"name"`
		Width  int    `json:"width"`
		Height int    `json:"height"`
		Bytes  int64  `json:"bytes"`
		URL    string `json:"url"`
	} `json:"artifacts"`
}

func run(api, site string) error {
	body := map[string]any{
		"labels": map[string]string{"source": "make demo"},
		"targets": []map[string]any{
			{"url": site + "/short", "name": "short"},
			{"url": site + "/article?n=40", "name": "article"},
			{"url": site + "/tall?h=5000", "name": "tall"},
			{"url": site + "/images?n=16", "name": "images"},
			{"url": site + "/status/404", "name": "not-found"},
			{"url": site + "/tall?h=60000", "name": "very-tall", "options": map[string]any{"screenshot": map[string]any{"max_segments": 5}}},
			{"url": site + "/tall?h=3000", "name": "full-page", "options": map[string]any{"screenshot": map[string]any{"mode": "full", "format": "jpeg", "quality": 80}}},
			// The api itself, on loopback: the egress guard refuses it (blocked_address).
			{"url": api + "/readyz", "name": "guarded"},
		},
	}
	raw, _ := json.Marshal(body)
	resp, err := http.Post(api+"/v1/batches", "application/json", bytes.NewReader(raw))
	if err != nil {
		return fmt.Errorf("submit batch: %w (is the api up? make up)", err)
	}
	var batch struct {
		ID   string `json:"id"`
		Jobs []job  `json:"jobs"`
	}
	if err := decode(resp, http.StatusAccepted, &batch); err != nil {
		return err
	}
	fmt.Printf("submitted batch %s with %d jobs: %s/v1/batches/%s\n", batch.ID, len(batch.Jobs), api, batch.ID)
	deadline := time.Now().Add(5 * time.Minute)
	for {
		var b struct {
			Status string         `json:"status"`
			Counts map[string]int `json:"counts"`
		}
		resp, err := http.Get(api + "/v1/batches/" + batch.ID)
		if err != nil {
			return err
		}
		if err := decode(resp, http.StatusOK, &b); err != nil {
			return err
		}
		fmt.Printf("  %s: %v\n", b.Status, b.Counts)
		if b.Status == "completed" {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("batch not completed after 5 minutes; see .data/logs/worker.log")
		}
		time.Sleep(2 * time.Second)
	}
	for _, j := range batch.Jobs {
		var full job
		resp, err := http.Get(api + "/v1/jobs/" + j.ID)
		if err != nil {
			return err
		}
		if err := decode(resp, http.StatusOK, &full); err != nil {
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
	runID, err := regression(api, site)
	if err != nil {
		return err
	}
	fmt.Printf("\nDashboard: %s/#/batches/%s · visual regression run: %s/#/runs/%s · queues: %s/admin/queues\n",
		api, batch.ID, api, runID, api)
	fmt.Printf("The stack keeps running: api %s, logs in .data/logs/, stop it with make down.\n", api)
	return nil
}

func decode(resp *http.Response, want int, v any) error {
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		return fmt.Errorf("%s %s: status %d: %s", resp.Request.Method, resp.Request.URL, resp.StatusCode, raw)
	}
	return json.Unmarshal(raw, v)
}

func getenv(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// regression runs the demo suite (created on first use): the first run needs
// review; later runs compare with what was approved.
func regression(api, site string) (string, error) {
	const name = "snapq demo"
	var list struct {
		Suites []struct {
			ID   string `json:"id"`
			Name string `json:"name"`
		} `json:"suites"`
	}
	resp, err := http.Get(api + "/v1/suites?limit=1000")
	if err != nil {
		return "", err
	}
	if err := decode(resp, http.StatusOK, &list); err != nil {
		return "", err
	}
	suiteID := ""
	for _, s := range list.Suites {
		if s.Name == name {
			suiteID = s.ID
		}
	}
	if suiteID == "" {
		raw, _ := json.Marshal(map[string]any{"name": name, "targets": []map[string]any{
			{"url": site + "/short", "name": "short"},
			{"url": site + "/tall?h=2000", "name": "tall", "viewports": []map[string]int{{"width": 1280, "height": 720}, {"width": 390, "height": 844}}},
		}})
		resp, err := http.Post(api+"/v1/suites", "application/json", bytes.NewReader(raw))
		if err != nil {
			return "", err
		}
		var s struct {
			ID string `json:"id"`
		}
		if err := decode(resp, http.StatusCreated, &s); err != nil {
			return "", err
		}
		suiteID = s.ID
	}
	resp, err = http.Post(api+"/v1/suites/"+suiteID+"/runs", "application/json", nil)
	if err != nil {
		return "", err
	}
	var run struct {
		ID     string         `json:"id"`
		Status string         `json:"status"`
		Counts map[string]int `json:"counts"`
	}
	if err := decode(resp, http.StatusAccepted, &run); err != nil {
		return "", err
	}
	fmt.Printf("\nvisual regression: suite %q, run %s\n", name, run.ID)
	deadline := time.Now().Add(5 * time.Minute)
	for run.Status == "running" {
		if time.Now().After(deadline) {
			return "", fmt.Errorf("run not finished after 5 minutes; see .data/logs/worker.log")
		}
		time.Sleep(2 * time.Second)
		resp, err := http.Get(api + "/v1/runs/" + run.ID)
		if err != nil {
			return "", err
		}
		if err := decode(resp, http.StatusOK, &run); err != nil {
			return "", err
		}
	}
	fmt.Printf("  %s: %v\n", run.Status, run.Counts)
	if run.Status == "needs_review" {
		fmt.Printf("  approve it to make these captures the baselines: curl -X POST %s/v1/runs/%s/approve -H 'Content-Type: application/json' -d '{\"all\": true}'\n", api, run.ID)
	}
	return run.ID, nil
}
