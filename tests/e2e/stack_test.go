// Package e2e runs snapq's real binaries against real Postgres, Redis, MinIO
// and Chromium, and checks what a user of the API sees.
package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/snapq/snapq/internal/contract"
	"github.com/snapq/snapq/internal/testenv"
	"github.com/snapq/snapq/web"
)

var binDir string

// apiContract is the API description every stack's client holds the api to.
var apiContract *contract.Validator

func TestMain(m *testing.M) {
	if os.Getenv(probeEnv) != "" {
		os.Exit(probeMain()) // sandbox_test.go: this binary, run as Chromium's user
	}
	dir, err := os.MkdirTemp("", "snapq-e2e-bin")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = dir
	if apiContract, err = contract.Load(web.OpenAPI); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := testenv.BuildBinaries("../..", dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	stopShared()
	os.RemoveAll(dir)
	os.Exit(code)
}

// stack is one isolated snapq deployment: its own Postgres schema, Redis
// database and bucket, with the api and worker running as processes.
type stack struct {
	t      *testing.T
	api    string // base URL
	procs  *testenv.Procs
	bucket string // the stack's own bucket in the local MinIO
	// client sends the test's requests; each request and answer is checked
	// against the API description (web/openapi.json), and what drifts fails
	// the test when it ends.
	client *http.Client
}

// startStack starts api and worker with the shared settings plus extraEnv,
// on a Redis database, Postgres schema and bucket of the test's own. A test
// that neither reconfigures nor breaks the stack, nor counts what other tests
// do on it, takes sharedStack instead.
func startStack(t *testing.T, extraEnv ...string) *stack {
	t.Helper()
	chrome := testenv.Getenv("SNAPQ_CHROME_BIN", "/usr/bin/chromium")
	if _, err := os.Stat(chrome); err != nil {
		testenv.Unavailable(t, "chromium", err)
	}
	redisDB := testenv.Redis(t) // claimed before the processes so it is released after they stop
	s3 := testenv.LocalS3()
	mc, err := s3.Client(context.Background())
	if err != nil {
		testenv.Unavailable(t, "minio", err)
	}
	bucket := "snapq-e2e-" + testenv.RandomSuffix(4)
	t.Cleanup(func() { testenv.RemoveBucket(mc, bucket) })

	port, err := testenv.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	s := &stack{t: t, api: "http://127.0.0.1:" + port, procs: &testenv.Procs{BinDir: binDir, LogDir: t.TempDir()}, bucket: bucket}
	s.client = contractClient(t, "127.0.0.1:"+port)
	s.procs.Env = append(stackEnv(port, testenv.DatabaseURL(t), redisDB.URL(), s3, bucket, chrome), extraEnv...)
	t.Cleanup(func() {
		s.procs.StopAll()
		if t.Failed() {
			s.logTails()
		}
	})
	s.start("api")
	if err := testenv.WaitReady(s.api, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	s.start("worker")
	return s
}

// stackEnv is the processes' environment: the shared settings on the given
// database, Redis database and bucket.
func stackEnv(port, dbURL, redisURL string, s3 testenv.S3, bucket, chrome string) []string {
	return append(os.Environ(),
		"SNAPQ_HTTP_ADDR=127.0.0.1:"+port,
		"SNAPQ_DATABASE_URL="+dbURL,
		"SNAPQ_REDIS_URL="+redisURL,
		"SNAPQ_S3_ENDPOINT="+s3.Endpoint, "SNAPQ_S3_ACCESS_KEY="+s3.AccessKey, "SNAPQ_S3_SECRET_KEY="+s3.SecretKey,
		"SNAPQ_S3_BUCKET="+bucket, "SNAPQ_S3_USE_SSL=false",
		"SNAPQ_CHROME_BIN="+chrome,
		"SNAPQ_WORKER_CONCURRENCY=2",
		// One Chromium per worker: the interactive lane reserves a tab of it instead of
		// starting a second browser (TestSyncCaptureInteractiveLane runs both modes).
		"SNAPQ_INTERACTIVE_BROWSER_TABS=0",
		// Chromium at the workers' own priority: at nice 10 (the default, so an agent's call
		// beats batch rendering) the renderers of 60 stacks starve behind the test processes
		// on 2 cores (TestNiceChromium proves the default; the lane test uses it).
		"SNAPQ_BATCH_CHROME_NICE=0",
		"SNAPQ_RETRY_BASE_DELAY=500ms",
		// A retry, and a task queued into idle queues, start within 200 ms and
		// 100 ms instead of asynq's 5 s and 1 s (docs/development.md#test-tiers).
		"SNAPQ_QUEUE_DELAYED_TASK_CHECK_INTERVAL=200ms",
		"SNAPQ_QUEUE_TASK_CHECK_INTERVAL=100ms",
		"SNAPQ_RECONCILE_INTERVAL=5s",
		"SNAPQ_LOG_LEVEL=debug",
		// The fixture pages are served on 127.0.0.1; the guard denies loopback unless allowed.
		"SNAPQ_EGRESS_ALLOW_CIDRS=127.0.0.1/32",
		// Most tests exercise capture, not keys; TestAuth turns auth on.
		"SNAPQ_AUTH=off",
		"SNAPQ_RATE_LIMIT=0", // tests poll and download faster than the default limit
	)
}

// as returns the stack as seen by t, a subtest of the test that took it:
// requests and failures are t's. A long scenario runs its steps as phases,
// t.Run("step", func(t *testing.T) { step(s.as(t)) }), so a failure names
// its step.
func (s *stack) as(t *testing.T) *stack {
	view := *s
	view.t = t
	return &view
}

// logTails logs the end of the api's and the workers' logs.
func (s *stack) logTails() {
	for _, name := range []string{"api", "worker", "worker-2"} {
		if tail := s.procs.Log(name, 4096); tail != "" || name != "worker-2" {
			s.t.Logf("--- %s log (last 4 KiB) ---\n%s", name, tail)
		}
	}
}

func (s *stack) start(name string) {
	s.t.Helper()
	if err := s.procs.Start(name); err != nil {
		s.t.Fatal(err)
	}
}

func (s *stack) stop(name string, sig syscall.Signal) { s.procs.Stop(name, sig) }

// do sends a request and decodes the JSON answer into out (if not nil).
func (s *stack) do(method, path string, body any, out any) int {
	s.t.Helper()
	code, _ := s.doWith(method, path, nil, body, out)
	return code
}

// doWith is do with extra request headers; it also returns the response headers.
func (s *stack) doWith(method, path string, headers map[string]string, body any, out any) (int, http.Header) {
	s.t.Helper()
	var r io.Reader
	switch b := body.(type) {
	case nil:
	case []byte:
		r = bytes.NewReader(b)
	default:
		raw, err := json.Marshal(b)
		if err != nil {
			s.t.Fatal(err)
		}
		r = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, s.api+path, r)
	if err != nil {
		s.t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		s.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			s.t.Fatalf("%s %s: status %d, body %q: %v", method, path, resp.StatusCode, raw, err)
		}
	}
	return resp.StatusCode, resp.Header
}

// contractClient is an HTTP client whose requests to the api at host, and
// their answers, are checked against web/openapi.json; each violation is an
// error of t when it ends. The dashboard and the queue UI are not API.
func contractClient(t *testing.T, host string) *http.Client {
	tr := &contract.Transport{Validator: apiContract, Host: host,
		Undocumented: []string{"/", "/assets/*", web.QueuesPath, web.QueuesPath + "/*"}}
	t.Cleanup(func() {
		for _, v := range tr.Violations() {
			t.Errorf("API contract (web/openapi.json): %s", v)
		}
	})
	return &http.Client{Transport: tr}
}
