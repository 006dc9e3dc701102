package jobs_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/snapq/snapq/jobs"
)

// heldStore hands out its held jobs up to the depth asked for, and records
// the depths.
type heldStore struct {
	mu     sync.Mutex
	held   []jobs.Dispatch
	depths []int
}

func (s *heldStore) add(d jobs.Dispatch) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.held = append(s.held, d)
}

func (s *heldStore) DispatchHeld(_ context.Context, depth int) ([]jobs.Dispatch, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.depths = append(s.depths, depth)
	n := min(depth, len(s.held))
	out := s.held[:n]
	s.held = s.held[n:]
	return out, nil
}

func TestDispatcherEnqueuesAndDerivesDepth(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	o := jobs.DefaultOptions()
	o.TimeoutMS = 5000
	st := &heldStore{}
	for range 50 {
		st.held = append(st.held, jobs.Dispatch{ID: jobs.NewID(), Options: o})
	}
	fleet, fleetErr := 30, error(nil)
	d := &jobs.Dispatcher{Repo: st, Queue: e.queue, Fleet: func(context.Context) (int, error) { return fleet, fleetErr }}

	n, err := d.Once(ctx)
	if err != nil || n != 50 || st.depths[0] != 60 {
		t.Fatalf("Once = %d, %v with depth %d; want 50 enqueued, depth 2 × 30", n, err, st.depths[0])
	}
	for _, j := range st.held {
		t.Fatalf("job %s left held", j.ID)
	}
	for id, task := range e.queue.tasks {
		if task.Timeout != o.JobTimeout() {
			t.Fatalf("task %s timeout %s, want the job's %s", id, task.Timeout, o.JobTimeout())
		}
	}
	if len(e.queue.tasks) != 50 {
		t.Fatalf("%d tasks, want 50", len(e.queue.tasks))
	}

	// A small fleet still gets the minimum; a fixed depth wins over the fleet.
	if got := jobs.FleetDepth(3); got != jobs.MinDispatchDepth {
		t.Fatalf("FleetDepth(3) = %d", got)
	}
	fixed := &jobs.Dispatcher{Repo: st, Queue: e.queue, Depth: 7, Fleet: func(context.Context) (int, error) { return 0, errors.New("no") }}
	fixed.Once(ctx) //nolint:errcheck
	if st.depths[1] != 7 {
		t.Fatalf("fixed depth passed %d", st.depths[1])
	}
	// Without a readable fleet: the minimum.
	unknown := &jobs.Dispatcher{Repo: st, Queue: e.queue, Fleet: func(context.Context) (int, error) { return 0, errors.New("redis down") }}
	unknown.Once(ctx) //nolint:errcheck
	if st.depths[2] != jobs.MinDispatchDepth {
		t.Fatalf("depth without a fleet %d, want %d", st.depths[2], jobs.MinDispatchDepth)
	}
}

func TestDispatcherRunsOnKick(t *testing.T) {
	t.Parallel()
	e := setup(t)
	st := &heldStore{}
	d := &jobs.Dispatcher{Repo: st, Queue: e.queue, Depth: 5, Interval: time.Hour}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go d.Run(ctx)
	// The first pass runs at start; a kick makes another one at once.
	deadline := time.Now().Add(5 * time.Second)
	time.Sleep(50 * time.Millisecond) // the first pass found nothing
	st.add(jobs.Dispatch{ID: jobs.NewID(), Options: jobs.DefaultOptions()})
	d.Kick()
	waitTasks(t, e.queue, 1, deadline, "a kick did not make a pass within 5 s (the ticker is an hour)")
}

// waitTasks waits until q holds n tasks, failing with msg at deadline.
func waitTasks(t *testing.T, q *memQueue, n int, deadline time.Time, msg string) {
	t.Helper()
	for {
		q.mu.Lock()
		got := len(q.tasks)
		q.mu.Unlock()
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal(msg)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// laneStore is a heldStore with an interactive lane whose batch pass blocks
// until release is closed.
type laneStore struct {
	heldStore
	lane    []jobs.Dispatch
	inBatch chan struct{}
	release chan struct{}
}

func (s *laneStore) DispatchHeld(ctx context.Context, depth int) ([]jobs.Dispatch, error) {
	select {
	case s.inBatch <- struct{}{}:
	default:
	}
	<-s.release
	return s.heldStore.DispatchHeld(ctx, depth)
}

func (s *laneStore) DispatchInteractive(context.Context, int) ([]jobs.Dispatch, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.lane
	s.lane = nil
	return out, nil
}

// A synchronous capture's kick dispatches the interactive lane while a
// batch pass is still running (a pass over another key's held jobs).
func TestDispatcherLaneKickBesideABatchPass(t *testing.T) {
	t.Parallel()
	e := setup(t)
	st := &laneStore{inBatch: make(chan struct{}, 1), release: make(chan struct{})}
	d := &jobs.Dispatcher{Repo: st, Queue: e.queue, Depth: 5, Interval: time.Hour}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go d.Run(ctx)
	<-st.inBatch // the first pass is stuck in its batch part
	st.mu.Lock()
	st.lane = []jobs.Dispatch{{ID: jobs.NewID(), Options: jobs.DefaultOptions(), Interactive: true}}
	st.mu.Unlock()
	d.KickInteractive()
	waitTasks(t, e.queue, 1, time.Now().Add(5*time.Second), "the lane's kick did not enqueue its job while a batch pass ran")
	close(st.release)
}
