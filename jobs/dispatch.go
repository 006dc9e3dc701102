package jobs

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// Fair scheduling. Submitting a batch stores its jobs queued but held; a
// Dispatcher moves held jobs to the task queue a few at a time, keeping
// about Depth capture jobs dispatched and unfinished, and fills the free room
// fair across owners (API keys; "" without auth). A key's 20,000-page batch
// therefore waits in Postgres, not ahead of everyone in the queue's FIFO: a
// 5-page batch submitted after it gets the next free slots.

// Dispatch is one job the store marked dispatched: the caller enqueues it.
type Dispatch struct {
	ID      string
	URL     string
	Owner   string
	Options Options
	// Interactive: the job rides the interactive lane (its own queue).
	Interactive bool
}

// LaneStore is a DispatchStore with an interactive lane: DispatchInteractive
// is DispatchHeld for the held jobs of synchronous captures, counted against
// the lane's own depth and shared fair across owners the same way.
// store.Store implements it.
type LaneStore interface {
	DispatchInteractive(ctx context.Context, depth int) ([]Dispatch, error)
}

// LaneQueue puts a job's task on the interactive queue, which workers serve
// with their reserved tabs. queue.AsynqQueue implements it; a Queue without
// it takes interactive jobs on its ordinary queue.
type LaneQueue interface {
	EnqueueInteractive(ctx context.Context, p CapturePayload) error
}

// MinInteractiveDepth is the interactive lane's dispatch depth when no
// worker announces reserved interactive slots.
const MinInteractiveDepth = 4

// DispatchStore is what Dispatcher needs. store.Store implements it.
type DispatchStore interface {
	// DispatchHeld marks held jobs dispatched, as many as bring the number
	// of dispatched unfinished jobs up to depth, the free room shared fair
	// across owners, and returns them in the order to enqueue them. Passes
	// of concurrent callers (any process) are serialized.
	DispatchHeld(ctx context.Context, depth int) ([]Dispatch, error)
}

// Kicker is told that held jobs may be waiting: a Service after writing
// jobs, a worker after a job finished. Dispatcher implements it.
type Kicker interface {
	Kick()
}

// LaneKicker is a Kicker that can make a pass of the interactive lane
// alone, at once, not after a batch pass in progress. Dispatcher implements it.
type LaneKicker interface {
	KickInteractive()
}

// KickLane asks k for a pass of the interactive lane alone, and reports
// whether it could (k is a LaneKicker).
func KickLane(k Kicker) bool {
	lk, ok := k.(LaneKicker)
	if ok {
		lk.KickInteractive()
	}
	return ok
}

// Dispatcher feeds the task queue from the held jobs in Postgres. Run it in
// every api and worker process: kicks make a pass at once, the ticker
// catches everything else (another process's submissions, lost kicks).
type Dispatcher struct {
	Repo   DispatchStore
	Queue  Queue
	Logger *slog.Logger
	// Depth is the number of dispatched, unfinished capture jobs to keep
	// (SNAPQ_DISPATCH_DEPTH). 0: derived from Fleet.
	Depth int
	// Fleet reports the task concurrency of the running workers (the sum of
	// their asynq Concurrency); with Depth 0 the depth is
	// max(MinDispatchDepth, 2 × Fleet), re-read every FleetRefresh. nil or
	// an error: MinDispatchDepth (or the last good value).
	Fleet func(ctx context.Context) (int, error)
	// Interval is the ticker's period (default DefaultDispatchInterval).
	Interval time.Duration
	// InteractiveFleet reports the task slots the running workers serve the
	// interactive queue with; the lane's depth is max(MinInteractiveDepth,
	// that). Used only when Repo is a LaneStore. nil: MinInteractiveDepth.
	InteractiveFleet func(ctx context.Context) (int, error)

	once      sync.Once
	kick      chan struct{}
	laneKick  chan struct{}
	mu        sync.Mutex
	fleetAt   time.Time
	fleetSize int
	laneAt    time.Time
	laneSize  int
}

// Defaults of Dispatcher.
const (
	MinDispatchDepth        = 16
	DefaultDispatchInterval = time.Second
	FleetRefresh            = 10 * time.Second
)

var _ Kicker = (*Dispatcher)(nil)

func (d *Dispatcher) init() {
	d.once.Do(func() { d.kick, d.laneKick = make(chan struct{}, 1), make(chan struct{}, 1) })
}

// Kick asks for a pass soon; kicks made while one is pending are one.
func (d *Dispatcher) Kick() {
	if d == nil {
		return
	}
	d.init()
	nudge(d.kick)
}

// nudge signals ch (buffered, one slot) unless a signal is already pending.
func nudge(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// KickInteractive asks for a pass of the interactive lane alone soon: it
// runs beside a batch pass in progress (the two take different locks), so a
// synchronous capture is not dispatched after a pass over another key's
// thousands of held jobs. Kicks made while one is pending are one.
func (d *Dispatcher) KickInteractive() {
	if d == nil {
		return
	}
	d.init()
	nudge(d.laneKick)
}

// AfterFinal is a Handler hook: a finished job frees room.
func (d *Dispatcher) AfterFinal(context.Context, *Job, Settled) { d.Kick() }

// Run makes a pass on every kick and every Interval until ctx ends, and a
// pass of the interactive lane alone on every KickInteractive.
func (d *Dispatcher) Run(ctx context.Context) {
	d.init()
	go d.runLane(ctx)
	interval := d.Interval
	if interval <= 0 {
		interval = DefaultDispatchInterval
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if _, err := d.Once(ctx); err != nil && ctx.Err() == nil {
			Log(d.Logger).Warn("dispatch", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-d.kick:
		case <-t.C:
		}
	}
}

// runLane makes a pass of the interactive lane on every KickInteractive
// until ctx ends.
func (d *Dispatcher) runLane(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-d.laneKick:
		}
		if _, err := d.onceLane(ctx); err != nil && ctx.Err() == nil {
			Log(d.Logger).Warn("dispatch interactive jobs", "err", err)
		}
	}
}

// onceLane dispatches and enqueues the interactive lane's held jobs (none
// when Repo is no LaneStore).
func (d *Dispatcher) onceLane(ctx context.Context) (int, error) {
	ls, ok := d.Repo.(LaneStore)
	if !ok {
		return 0, nil
	}
	lane, err := ls.DispatchInteractive(ctx, d.interactiveDepth(ctx))
	if err != nil {
		return 0, fmt.Errorf("dispatch interactive jobs: %w", err)
	}
	return d.enqueueAll(ctx, lane), nil
}

// Once makes one pass: it marks held jobs dispatched and enqueues them, the
// interactive lane's first and before the batch pass runs (somebody waits
// for those). A failed enqueue is logged: the job is dispatched in Postgres,
// and the reconciler enqueues dispatched jobs whose task is missing.
func (d *Dispatcher) Once(ctx context.Context) (int, error) {
	n, err := d.onceLane(ctx)
	if err != nil {
		return 0, err
	}
	ds, err := d.Repo.DispatchHeld(ctx, d.depth(ctx))
	if err != nil {
		return n, fmt.Errorf("dispatch held jobs: %w", err)
	}
	n += d.enqueueAll(ctx, ds)
	if n > 0 {
		Log(d.Logger).Debug("dispatched", "count", n)
	}
	return n, nil
}

// enqueueAll enqueues ds in order, logging the failures, and returns len(ds).
func (d *Dispatcher) enqueueAll(ctx context.Context, ds []Dispatch) int {
	for _, j := range ds {
		if err := d.enqueue(context.WithoutCancel(ctx), j); err != nil {
			Log(d.Logger).Warn("enqueue failed; the reconciler will retry", "job_id", j.ID, "err", err)
		}
	}
	return len(ds)
}

// enqueue puts j on its lane's queue.
func (d *Dispatcher) enqueue(ctx context.Context, j Dispatch) error {
	p := CaptureTask(j.ID, j.URL, j.Options)
	if lq, ok := d.Queue.(LaneQueue); ok && j.Interactive {
		return lq.EnqueueInteractive(ctx, p)
	}
	return d.Queue.Enqueue(ctx, p)
}

// interactiveDepth is the interactive lane's depth: the slots the workers
// reserve for it, at least MinInteractiveDepth.
func (d *Dispatcher) interactiveDepth(ctx context.Context) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.InteractiveFleet != nil && time.Since(d.laneAt) >= FleetRefresh {
		if n, err := d.InteractiveFleet(ctx); err != nil {
			Log(d.Logger).Warn("read the workers' interactive slots; keeping the last depth", "err", err)
		} else {
			d.laneSize = n
		}
		d.laneAt = time.Now()
	}
	return max(MinInteractiveDepth, d.laneSize)
}

// depth is Depth, or the one derived from the fleet.
func (d *Dispatcher) depth(ctx context.Context) int {
	if d.Depth > 0 {
		return d.Depth
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.Fleet != nil && time.Since(d.fleetAt) >= FleetRefresh {
		if n, err := d.Fleet(ctx); err != nil {
			Log(d.Logger).Warn("read the workers' concurrency; keeping the last depth", "err", err)
		} else {
			d.fleetSize = n
		}
		d.fleetAt = time.Now()
	}
	return FleetDepth(d.fleetSize)
}

// FleetDepth is the dispatch depth for workers running fleet tasks at once:
// twice that, so every worker has its next task queued, and at least
// MinDispatchDepth.
func FleetDepth(fleet int) int { return max(MinDispatchDepth, 2*fleet) }

// EnqueueOrKick hands freshly written jobs on: with a dispatcher it kicks
// it (the jobs are held in the store), without one it enqueues each job.
// Failed enqueues are logged: the reconciler retries them.
func EnqueueOrKick(ctx context.Context, k Kicker, q Queue, jobs []*Job, log *slog.Logger) {
	if k != nil {
		k.Kick()
		return
	}
	for _, j := range jobs {
		if err := q.Enqueue(context.WithoutCancel(ctx), CaptureTask(j.ID, j.URL, j.Options)); err != nil {
			Log(log).Warn("enqueue failed; the reconciler will retry", "job_id", j.ID, "err", err)
		}
	}
}
