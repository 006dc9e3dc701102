package e2e

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/snapq/snapq/internal/testenv"
)

// The shared stack is one api and one worker that every test taking
// sharedStack uses, started by the first of them and stopped after the last
// test of the package: a stack's start (its processes, its schema's
// migrations, its Chromium) is paid once instead of once per test. A test
// may take it only when it does not reconfigure the stack (no extraEnv), does
// not stop, restart or break a process or a service, and does not count
// what other tests also do on it (every batch, key, metric, object or log
// line): it keeps to the batches, suites and sites it made. Auth is off, so
// every test submits as the same (anonymous) owner; SNAPQ_SECRET_KEY is set
// (a random key), so tests of sealed secrets (auth profiles, notification
// channels, VCS tokens) may share it too.
var shared struct {
	once        sync.Once
	stack       *stack // its t is nil: sharedStack hands each test a view of its own
	err         error  // why it could not start
	unavailable bool   // err is a missing service (a skip outside CI)
	stop        []func()
}

// sharedConcurrency is each shared worker's tabs: as many as a test's own
// stack has, so its browser is no busier per call than theirs (a browser
// whose calls time out is restarted, and every test's jobs on it retry).
// sharedWorkers are its worker processes: two browsers serve the tests
// sharing the stack, as two stacks of their own would, and a browser that
// restarts holds up only half of their jobs.
const sharedConcurrency = 2

var sharedWorkers = []string{"worker", "worker-2"}

// sharedStack returns the package's shared stack as seen by t: requests and
// failures are t's, and the API contract is checked for t's requests. When t
// fails, the end of the processes' logs (every test's lines) is logged.
func sharedStack(t *testing.T) *stack {
	t.Helper()
	shared.once.Do(startShared)
	switch {
	case shared.err != nil && shared.unavailable:
		testenv.Unavailable(t, "a service of the shared stack", shared.err)
	case shared.err != nil:
		t.Fatalf("shared stack: %v", shared.err)
	}
	view := *shared.stack
	view.t = t
	view.client = contractClient(t, strings.TrimPrefix(view.api, "http://"))
	t.Cleanup(func() {
		if t.Failed() {
			view.logTails()
		}
	})
	return &view
}

// startShared starts the shared stack on a Redis database, a schema and a
// bucket of its own, each given back by stopShared.
func startShared() {
	fail := func(unavailable bool, err error) { shared.err, shared.unavailable = err, unavailable }
	chrome := testenv.Getenv("SNAPQ_CHROME_BIN", "/usr/bin/chromium")
	if _, err := os.Stat(chrome); err != nil {
		fail(true, fmt.Errorf("chromium: %w", err))
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	redisDB, err := testenv.ClaimRedisDB(ctx, "e2e shared stack")
	var busy *testenv.AllLeasedError
	if err != nil {
		fail(!errors.As(err, &busy), fmt.Errorf("redis: %w", err))
		return
	}
	shared.stop = append(shared.stop, redisDB.Release)
	dbURL, drop, err := testenv.NewSchema(ctx, testenv.TestDatabase())
	if err != nil {
		fail(true, fmt.Errorf("postgres: %w", err))
		return
	}
	shared.stop = append(shared.stop, drop)
	s3 := testenv.LocalS3()
	mc, err := s3.Client(ctx)
	if err != nil {
		fail(true, fmt.Errorf("minio: %w", err))
		return
	}
	bucket := "snapq-e2e-shared-" + testenv.RandomSuffix(4)
	shared.stop = append(shared.stop, func() { testenv.RemoveBucket(mc, bucket) })
	logs, err := os.MkdirTemp("", "snapq-e2e-shared")
	if err != nil {
		fail(false, err)
		return
	}
	shared.stop = append(shared.stop, func() { os.RemoveAll(logs) })
	port, err := testenv.FreePort()
	if err != nil {
		fail(false, err)
		return
	}
	s := &stack{api: "http://127.0.0.1:" + port, procs: &testenv.Procs{BinDir: binDir, LogDir: logs}, bucket: bucket}
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		fail(false, err)
		return
	}
	s.procs.Env = append(stackEnv(port, dbURL, redisDB.URL(), s3, bucket, chrome),
		fmt.Sprintf("SNAPQ_WORKER_CONCURRENCY=%d", sharedConcurrency),
		"SNAPQ_SECRET_KEY="+base64.StdEncoding.EncodeToString(key))
	shared.stop = append(shared.stop, s.procs.StopAll)
	shared.stack = s
	fail(false, startSharedProcs(s))
}

// startSharedProcs starts the api, waits until it is ready, then the workers.
func startSharedProcs(s *stack) error {
	if err := s.procs.Start("api"); err != nil {
		return err
	}
	if err := testenv.WaitReady(s.api, 60*time.Second); err != nil {
		return fmt.Errorf("%w\n%s", err, s.procs.Log("api", 4096))
	}
	for _, name := range sharedWorkers {
		if err := s.procs.StartAs(name, "worker"); err != nil {
			return err
		}
	}
	return nil
}

// stopShared stops the shared stack's processes and gives back what it held,
// last taken first; it does nothing when no test took the stack.
func stopShared() {
	for i := len(shared.stop) - 1; i >= 0; i-- {
		shared.stop[i]()
	}
	shared.stop = nil
}
