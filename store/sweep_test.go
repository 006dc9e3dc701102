package store_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/snapq/snapq/artifacts"
	"github.com/snapq/snapq/internal/testenv"
	"github.com/snapq/snapq/jobs"
	"github.com/snapq/snapq/maintenance"
)

// setupBucket returns an artifacts.Store on a bucket of its own in the local
// MinIO, removed with its objects when the test ends.
func setupBucket(t *testing.T) *artifacts.Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s3 := testenv.LocalS3()
	mc, err := s3.Client(ctx)
	if err != nil {
		testenv.Unavailable(t, "MinIO at "+s3.Endpoint, err)
	}
	cfg := artifacts.DefaultConfig()
	cfg.Endpoint, cfg.AccessKey, cfg.SecretKey = s3.Endpoint, s3.AccessKey, s3.SecretKey
	cfg.Bucket = "snapq-sweep-" + testenv.RandomSuffix(6)
	objs, err := artifacts.New(ctx, cfg)
	if err != nil {
		t.Fatalf("artifacts.New: %v", err)
	}
	t.Cleanup(func() { testenv.RemoveBucket(mc, cfg.Bucket) })
	return objs
}

// The sweeper against the real bucket and database: the orphans of a final
// job and of a job that no longer exists are deleted once past the grace; an
// object an artifact row names, an object younger than the grace and an
// object of a running job are kept.
func TestSweeperAgainstMinIOAndPostgres(t *testing.T) {
	t.Parallel()
	st := setup(t)
	objs := setupBucket(t)
	ctx := context.Background()
	b, js := newBatch(t, st, 4)
	failed, succeeded, fresh, running := js[0], js[1], js[2], js[3]
	for _, j := range js {
		if _, _, err := st.StartJob(ctx, j.ID); err != nil {
			t.Fatal(err)
		}
	}
	put := func(job, name string) string {
		t.Helper()
		key := artifacts.Key("batches", b.ID, "jobs", job, name)
		if _, err := objs.Put(ctx, key, []byte("bytes of "+name), "image/png", artifacts.PutOptions{}); err != nil {
			t.Fatalf("put %s: %v", key, err)
		}
		return key
	}
	orphan := put(failed.ID, "shot.png")
	gone := put(jobs.NewID(), "shot.png") // a job that does not exist (its batch was deleted)
	referenced := put(succeeded.ID, "shot.png")
	ofRunning := put(running.ID, "shot.png")
	for _, j := range []*jobs.Job{failed, fresh} {
		if err := st.FailJob(ctx, j.ID, 1, jobs.JobError{Code: "upload_failed", Message: "storage down"}, nil, true); err != nil {
			t.Fatal(err)
		}
	}
	art := &jobs.Artifact{ID: jobs.NewID(), JobID: succeeded.ID, Kind: "screenshot", Name: "shot.png", Seq: 1,
		ObjectKey: referenced, ContentType: "image/png", Bytes: 1, SHA256: "x"}
	if ok, err := st.CompleteJob(ctx, succeeded.ID, 1, &jobs.Result{}, []*jobs.Artifact{art}); !ok || err != nil {
		t.Fatalf("CompleteJob = %v, %v", ok, err)
	}

	const grace = 2 * time.Second
	time.Sleep(grace + 500*time.Millisecond)
	young := put(fresh.ID, "shot.png") // a final job's, but within the grace

	sw := &maintenance.Sweeper{Objects: objs, Repo: st, Grace: grace}
	res, err := sw.Sweep(ctx)
	if err != nil {
		t.Fatalf("Sweep: %v", err)
	}
	wantKeys := []string{orphan, gone}
	slices.Sort(wantKeys)
	slices.Sort(res.Keys)
	if diff := cmp.Diff(maintenance.SweepResult{Listed: 5, Deleted: 2, Bytes: 34, Wrapped: true, Keys: wantKeys}, res); diff != "" {
		t.Errorf("Sweep result (-want +got):\n%s", diff)
	}
	page, err := objs.List(ctx, "batches/", "", 0)
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, o := range page {
		left = append(left, o.Key)
	}
	want := []string{referenced, young, ofRunning}
	slices.Sort(want)
	if diff := cmp.Diff(want, left); diff != "" {
		t.Errorf("objects left (-want +got):\n%s", diff)
	}
	for _, key := range []string{orphan, gone} {
		if _, err := objs.Stat(ctx, key); err == nil {
			t.Errorf("orphan %s is still there", key)
		}
	}
}
