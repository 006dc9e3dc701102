package jobs_test

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"path"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/snapq/snapq/artifacts"
	"github.com/snapq/snapq/capture"
	"github.com/snapq/snapq/jobs"
)

// In-memory stand-ins for the adapters jobs consumes. They keep the
// contracts documented on the interfaces (and honoured by store.Store), so a
// test reads the outcome a user would see: rows, tasks and objects.
var (
	_ jobs.BatchStore       = (*memStore)(nil)
	_ jobs.JobStore         = (*memStore)(nil)
	_ jobs.ReconcileStore   = (*memStore)(nil)
	_ jobs.Queue            = (*memQueue)(nil)
	_ jobs.Renderer         = (*fakeRenderer)(nil)
	_ jobs.CheckpointFailer = (*memStore)(nil)
	_ jobs.ArtifactStore    = (*memBucket)(nil)
	_ jobs.ObjectLister     = (*memBucket)(nil)
)

// env is one test's world: the fakes and the domain types wired to them.
type env struct {
	store    *memStore
	queue    *memQueue
	renderer *fakeRenderer
	bucket   *memBucket
	finals   *hookLog

	svc *jobs.Service
	rec *jobs.Reconciler
	h   *jobs.Handler
}

func setup(t *testing.T) *env {
	t.Helper()
	st := newMemStore()
	q := &memQueue{tasks: map[string]task{}}
	r := &fakeRenderer{}
	b := &memBucket{objects: map[string]object{}, failOn: map[string]error{}}
	finals := &hookLog{store: st}
	log := slog.New(slog.DiscardHandler)
	return &env{
		store: st, queue: q, renderer: r, bucket: b, finals: finals,
		svc: &jobs.Service{Repo: st, Queue: q, Logger: log},
		rec: &jobs.Reconciler{Repo: st, Queue: q, Logger: log},
		h:   &jobs.Handler{Repo: st, Renderer: r, Store: b, Logger: log, AfterFinal: []func(context.Context, *jobs.Job){finals.record}},
	}
}

// hookLog records each AfterFinal call with the job's stored status at the time.
type hookLog struct {
	store *memStore
	mu    sync.Mutex
	calls []string // "<job id> <stored status>"
}

func (l *hookLog) record(ctx context.Context, j *jobs.Job) {
	status := "ctx done"
	if ctx.Err() == nil {
		status = string(l.store.status(j.ID))
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls = append(l.calls, j.ID+" "+status)
}

func (l *hookLog) got() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.calls)
}

// memStore implements the jobs repositories over maps.
type memStore struct {
	mu        sync.Mutex
	batches   map[string]*jobs.Batch
	byBatch   map[string][]string // batch id → job ids in submission order
	byID      map[string]*jobs.Job
	artifacts map[string][]*jobs.Artifact
	idem      map[[2]string][2]string // (owner, key) → (batch id, request hash)

	// hideIdempotency makes the next FindIdempotency calls miss, as when a
	// concurrent request commits its key between the lookup and CreateBatch.
	hideIdempotency int
	// maxPage caps a ListJobs page below the limit asked for (0: no cap).
	maxPage int
	// unfinishedErr is the error of Unfinished.
	unfinishedErr error
}

func newMemStore() *memStore {
	return &memStore{batches: map[string]*jobs.Batch{}, byBatch: map[string][]string{}, byID: map[string]*jobs.Job{},
		artifacts: map[string][]*jobs.Artifact{}, idem: map[[2]string][2]string{}}
}

func cloneJob(j *jobs.Job) *jobs.Job { c := *j; return &c }

// add stores jobs as they are (a batch row is made for a new batch id).
func (m *memStore) add(js ...*jobs.Job) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, j := range js {
		if _, ok := m.batches[j.BatchID]; !ok {
			m.batches[j.BatchID] = &jobs.Batch{ID: j.BatchID, Labels: map[string]string{}}
		}
		m.batches[j.BatchID].Total++
		m.byBatch[j.BatchID] = append(m.byBatch[j.BatchID], j.ID)
		m.byID[j.ID] = cloneJob(j)
	}
}

// job returns the stored row.
func (m *memStore) job(t *testing.T, id string) *jobs.Job {
	t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	j, ok := m.byID[id]
	if !ok {
		t.Fatalf("job %s is not stored", id)
	}
	return cloneJob(j)
}

// age moves every job's last update d into the past.
func (m *memStore) age(d time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, j := range m.byID {
		j.UpdatedAt = j.UpdatedAt.Add(-d)
	}
}

func (m *memStore) status(id string) jobs.JobStatus {
	m.mu.Lock()
	defer m.mu.Unlock()
	if j, ok := m.byID[id]; ok {
		return j.Status
	}
	return "missing"
}

func (m *memStore) artifactsOf(id string) []*jobs.Artifact {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.artifacts[id])
}

func (m *memStore) batchCount() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.batches)
}

func (m *memStore) CreateBatch(ctx context.Context, b *jobs.Batch, js []*jobs.Job) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if b.IdempotencyKey != "" {
		k := [2]string{b.OwnerKeyID, b.IdempotencyKey}
		if _, taken := m.idem[k]; taken {
			return jobs.ErrIdempotencyTaken
		}
		m.idem[k] = [2]string{b.ID, b.RequestHash}
	}
	c := *b
	c.Counts = jobs.Counts{}
	m.batches[b.ID] = &c
	for _, j := range js {
		m.byBatch[b.ID] = append(m.byBatch[b.ID], j.ID)
		m.byID[j.ID] = cloneJob(j)
	}
	return nil
}

func (m *memStore) GetBatch(ctx context.Context, id string) (*jobs.Batch, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	b, ok := m.batches[id]
	if !ok {
		return nil, jobs.ErrNotFound
	}
	c := *b
	c.Counts = jobs.Counts{}
	for _, jid := range m.byBatch[id] {
		switch m.byID[jid].Status {
		case jobs.StatusQueued:
			c.Counts.Queued++
		case jobs.StatusRunning:
			c.Counts.Running++
		case jobs.StatusSucceeded:
			c.Counts.Succeeded++
		case jobs.StatusFailed:
			c.Counts.Failed++
		case jobs.StatusCanceled:
			c.Counts.Canceled++
		}
	}
	return &c, nil
}

func (m *memStore) FindIdempotency(ctx context.Context, owner, key string) (string, string, error) {
	if err := ctx.Err(); err != nil {
		return "", "", err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.hideIdempotency > 0 {
		m.hideIdempotency--
		return "", "", jobs.ErrNotFound
	}
	v, ok := m.idem[[2]string{owner, key}]
	if !ok {
		return "", "", jobs.ErrNotFound
	}
	return v[0], v[1], nil
}

func (m *memStore) CountUnfinished(ctx context.Context, owner string) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, j := range m.byID {
		if b := m.batches[j.BatchID]; b.OwnerKeyID == owner && (j.Status == jobs.StatusQueued || j.Status == jobs.StatusRunning) {
			n++
		}
	}
	return n, nil
}

func (m *memStore) ListJobs(ctx context.Context, batchID string, status jobs.JobStatus, limit int, cursor string) ([]*jobs.Job, string, error) {
	if err := ctx.Err(); err != nil {
		return nil, "", err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.maxPage > 0 {
		limit = min(limit, m.maxPage)
	}
	var out []*jobs.Job
	past := cursor == ""
	for _, id := range m.byBatch[batchID] {
		if !past {
			past = id == cursor
			continue
		}
		if j := m.byID[id]; status == "" || j.Status == status {
			out = append(out, cloneJob(j))
		}
	}
	if len(out) > limit {
		out = out[:limit]
		return out, out[limit-1].ID, nil
	}
	return out, "", nil
}

func (m *memStore) CancelBatch(ctx context.Context, id string) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.batches[id]; !ok {
		return nil, jobs.ErrNotFound
	}
	var ids []string
	now := time.Now()
	for _, jid := range m.byBatch[id] {
		if j := m.byID[jid]; j.Status == jobs.StatusQueued {
			j.Status, j.ErrorCode, j.ErrorMessage = jobs.StatusCanceled, jobs.CodeCanceled, "the batch was canceled before this job started"
			j.FinishedAt, j.UpdatedAt = &now, now
			ids = append(ids, jid)
		}
	}
	return ids, nil
}

func (m *memStore) StartJob(ctx context.Context, id string) (*jobs.Job, bool, error) {
	if err := ctx.Err(); err != nil {
		return nil, false, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	j, ok := m.byID[id]
	if !ok {
		return nil, false, jobs.ErrNotFound
	}
	if j.Status != jobs.StatusQueued && j.Status != jobs.StatusRunning {
		return cloneJob(j), false, nil
	}
	now := time.Now()
	j.Status = jobs.StatusRunning
	j.Attempts++
	j.Result = nil
	j.StartedAt = cmp.Or(j.StartedAt, &now)
	j.UpdatedAt = now
	return cloneJob(j), true, nil
}

func (m *memStore) CompleteJob(ctx context.Context, id string, attempt int, result *jobs.Result, arts []*jobs.Artifact) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	j, ok := m.byID[id]
	if !ok || j.Status != jobs.StatusRunning || j.Attempts != attempt {
		return false, nil
	}
	now := time.Now()
	j.Status, j.Result, j.ErrorCode, j.ErrorMessage = jobs.StatusSucceeded, result, "", ""
	j.FinishedAt, j.UpdatedAt = &now, now
	m.artifacts[id] = slices.Clone(arts)
	return true, nil
}

func (m *memStore) FailJob(ctx context.Context, id string, attempt int, e jobs.JobError, result *jobs.Result, final bool) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	j, ok := m.byID[id]
	if !ok || j.Attempts != attempt || (j.Status != jobs.StatusQueued && j.Status != jobs.StatusRunning) {
		return nil // another attempt owns the job, or it is final already
	}
	now := time.Now()
	j.Status, j.ErrorCode, j.ErrorMessage, j.Result, j.UpdatedAt = jobs.StatusQueued, e.Code, e.Message, result, now
	if final {
		j.Status, j.FinishedAt = jobs.StatusFailed, &now
	}
	return nil
}

// FailJobWithArtifacts implements jobs.CheckpointFailer.
func (m *memStore) FailJobWithArtifacts(ctx context.Context, id string, attempt int, e jobs.JobError, result *jobs.Result, arts []*jobs.Artifact) error {
	if err := m.FailJob(ctx, id, attempt, e, result, true); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if j := m.byID[id]; j != nil && j.Status == jobs.StatusFailed && j.Attempts == attempt {
		m.artifacts[id] = slices.Clone(arts)
	}
	return nil
}

func (m *memStore) Unfinished(ctx context.Context, before time.Time, limit int) ([]jobs.JobRef, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.unfinishedErr != nil {
		return nil, m.unfinishedErr
	}
	var refs []jobs.JobRef
	for _, j := range m.byID {
		if (j.Status == jobs.StatusQueued || j.Status == jobs.StatusRunning) && j.UpdatedAt.Before(before) {
			refs = append(refs, jobs.JobRef{ID: j.ID, Status: j.Status, UpdatedAt: j.UpdatedAt})
		}
	}
	slices.SortFunc(refs, func(a, b jobs.JobRef) int { return a.UpdatedAt.Compare(b.UpdatedAt) })
	if len(refs) > limit {
		refs = refs[:limit]
	}
	return refs, nil
}

func (m *memStore) GetJob(ctx context.Context, id string) (*jobs.Job, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	j, ok := m.byID[id]
	if !ok {
		return nil, jobs.ErrNotFound
	}
	return cloneJob(j), nil
}

func (m *memStore) Requeue(ctx context.Context, id string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if j, ok := m.byID[id]; ok && j.Status == jobs.StatusRunning {
		j.Status, j.UpdatedAt = jobs.StatusQueued, time.Now()
	}
	return nil
}

// memQueue is a queue of tasks keyed by job id, as asynq's task ids are.
type memQueue struct {
	mu         sync.Mutex
	tasks      map[string]task
	enqueueErr error
	deleteErr  error
	stateErr   map[string]error // TaskState's error by job id
}

type task struct {
	State   string
	LastErr string
	Timeout time.Duration
}

func (q *memQueue) Enqueue(ctx context.Context, jobID string, timeout time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.enqueueErr != nil {
		return q.enqueueErr
	}
	if _, ok := q.tasks[jobID]; !ok {
		q.tasks[jobID] = task{State: "pending", Timeout: timeout}
	}
	return nil
}

func (q *memQueue) TaskState(ctx context.Context, jobID string) (string, string, error) {
	if err := ctx.Err(); err != nil {
		return "", "", err
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if err := q.stateErr[jobID]; err != nil {
		return "", "", err
	}
	t := q.tasks[jobID]
	return t.State, t.LastErr, nil
}

func (q *memQueue) Delete(ctx context.Context, jobID string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.deleteErr != nil {
		return q.deleteErr
	}
	delete(q.tasks, jobID)
	return nil
}

func (q *memQueue) set(jobID string, t task) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.tasks[jobID] = t
}

func (q *memQueue) snapshot() map[string]task {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := make(map[string]task, len(q.tasks))
	for k, v := range q.tasks {
		out[k] = v
	}
	return out
}

// fakeRenderer answers every capture with result or err.
type fakeRenderer struct {
	mu     sync.Mutex
	result *capture.Result
	err    error
	// during runs inside Capture before it answers.
	during func()
	reqs   []capture.Request
}

func (r *fakeRenderer) Capture(ctx context.Context, req capture.Request) (*capture.Result, error) {
	r.mu.Lock()
	r.reqs = append(r.reqs, req)
	during, res, err := r.during, r.result, r.err
	r.mu.Unlock()
	if during != nil {
		during()
	}
	if err != nil {
		return nil, err
	}
	if res == nil {
		return nil, errors.New("fakeRenderer: no result set")
	}
	return res, nil
}

func (r *fakeRenderer) requests() []capture.Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.reqs)
}

// memBucket is an object store.
type memBucket struct {
	mu      sync.Mutex
	objects map[string]object
	failOn  map[string]error // Put's error by file name (the key's last segment)
}

type object struct {
	Data               string
	ContentType        string
	ContentDisposition string
}

func (b *memBucket) Put(ctx context.Context, key string, data []byte, contentType string, opts artifacts.PutOptions) (artifacts.Object, error) {
	if err := ctx.Err(); err != nil {
		return artifacts.Object{}, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if key == "" || key != artifacts.Key(key) {
		return artifacts.Object{}, fmt.Errorf("put %q: %w", key, artifacts.ErrInvalidKey)
	}
	if err := b.failOn[path.Base(key)]; err != nil {
		return artifacts.Object{}, fmt.Errorf("put %s: %w", key, err)
	}
	b.objects[key] = object{Data: string(data), ContentType: contentType, ContentDisposition: opts.ContentDisposition}
	sum := sha256.Sum256(data)
	return artifacts.Object{Key: key, Bytes: int64(len(data)), SHA256: hex.EncodeToString(sum[:]), ContentType: contentType}, nil
}

func (b *memBucket) Delete(ctx context.Context, key string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.objects, key)
	return nil
}

// List implements jobs.ObjectLister.
func (b *memBucket) List(ctx context.Context, prefix, startAfter string, limit int) ([]artifacts.Object, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	var keys []string
	for k := range b.objects {
		if strings.HasPrefix(k, prefix) && k > startAfter {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	var out []artifacts.Object
	for _, k := range keys[:min(limit, len(keys))] {
		out = append(out, artifacts.Object{Key: k, Bytes: int64(len(b.objects[k].Data))})
	}
	return out, nil
}

func (b *memBucket) snapshot() map[string]object {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make(map[string]object, len(b.objects))
	for k, v := range b.objects {
		out[k] = v
	}
	return out
}

func sha(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// PutContent implements jobs.ContentStore the way artifacts.Store does: the
// key is the bytes' SHA-256 and bytes already there are not stored again.
func (b *memBucket) PutContent(ctx context.Context, data []byte, contentType string) (artifacts.Object, error) {
	sum := sha(string(data))
	key := artifacts.ContentKey(sum)
	b.mu.Lock()
	_, exists := b.objects[key]
	b.mu.Unlock()
	if exists {
		return artifacts.Object{Key: key, Bytes: int64(len(data)), SHA256: sum, ContentType: contentType, Reused: true}, nil
	}
	return b.Put(ctx, key, data, contentType, artifacts.PutOptions{ContentDisposition: "attachment"})
}
