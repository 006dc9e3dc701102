package store_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"testing"
	"time"

	"github.com/snapq/snapq/capture"
	"github.com/snapq/snapq/jobs"
)

// Two attempts of one job run at once against the real database and bucket: the first
// loses its lease while it renders (the reconciler requeues the job and another worker
// starts attempt 2), the second captures and commits, then the first wakes up, uploads and
// tries to commit. The later commit wins, the stale attempt's uploads overwrite nothing:
// every object the committed rows name holds the bytes they record, and nothing else of
// the job is left in the bucket.
func TestStaleAttemptCannotOverwriteCommittedObjects(t *testing.T) {
	t.Parallel()
	st := setup(t)
	objs := setupBucket(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, js := newBatch(t, st, 1)
	job := js[0]

	stale := &gatedRenderer{name: job.Name, content: "stale", entered: make(chan struct{}), release: make(chan struct{})}
	staleDone := make(chan error, 1)
	go func() {
		h := &jobs.Handler{Repo: st, Store: objs, Renderer: stale}
		staleDone <- h.Process(ctx, job.ID, false)
	}()
	select {
	case <-stale.entered:
	case <-ctx.Done():
		t.Fatal("the first attempt never started rendering")
	}
	// The worker stalls past its lease: the reconciler requeues the job, another worker runs it.
	if err := st.Requeue(ctx, job.ID); err != nil {
		t.Fatal(err)
	}
	fresh := &gatedRenderer{name: job.Name, content: "fresh"}
	if err := (&jobs.Handler{Repo: st, Store: objs, Renderer: fresh}).Process(ctx, job.ID, false); err != nil {
		t.Fatalf("attempt 2: %v", err)
	}
	committed, err := st.ListArtifacts(ctx, job.ID)
	if err != nil || len(committed) != 2 {
		t.Fatalf("artifacts after attempt 2 = %d, %v; want 2", len(committed), err)
	}

	close(stale.release) // the stale attempt uploads and tries to commit
	if err := <-staleDone; err != nil {
		t.Fatalf("the stale attempt: %v (want nil: its result is discarded)", err)
	}

	got, err := st.GetJob(ctx, job.ID)
	if err != nil || got.Status != jobs.StatusSucceeded || got.Attempts != 2 {
		t.Fatalf("job = %+v, %v; want succeeded by attempt 2", got, err)
	}
	arts, err := st.ListArtifacts(ctx, job.ID)
	if err != nil {
		t.Fatal(err)
	}
	var rowKeys []string
	for _, a := range arts {
		rowKeys = append(rowKeys, a.ObjectKey)
		data, _, err := objs.Get(ctx, a.ObjectKey)
		if err != nil {
			t.Errorf("%s: %v", a.ObjectKey, err)
			continue
		}
		sum := sha256.Sum256(data)
		if hex.EncodeToString(sum[:]) != a.SHA256 || int64(len(data)) != a.Bytes || string(data) != "fresh "+a.Name {
			t.Errorf("%s holds %q (sha256 %x); the row records %d bytes with sha256 %s from attempt 2",
				a.ObjectKey, data, sum, a.Bytes, a.SHA256)
		}
	}
	listed, err := objs.List(ctx, "batches/"+job.BatchID+"/", "", 100)
	if err != nil {
		t.Fatal(err)
	}
	var bucketKeys []string
	for _, o := range listed {
		bucketKeys = append(bucketKeys, o.Key)
	}
	slices.Sort(rowKeys)
	if !slices.Equal(bucketKeys, rowKeys) {
		t.Errorf("bucket holds %v, want exactly the committed rows' %v", bucketKeys, rowKeys)
	}
}

// gatedRenderer captures one image and one HTML file whose bytes name its content; with
// entered set it signals the capture started and waits for release.
type gatedRenderer struct {
	name, content    string
	entered, release chan struct{}
}

func (g *gatedRenderer) Capture(ctx context.Context, _ capture.Request) (*capture.Result, error) {
	if g.entered != nil {
		close(g.entered)
		select {
		case <-g.release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	png, html := g.name+".png", g.name+".html"
	return &capture.Result{HTTPStatus: 200, ContentType: "text/html",
		Images: []capture.Image{{Name: png, Index: 1, Data: []byte(g.content + " " + png), ContentType: "image/png", Width: 1, Height: 1}},
		Files:  []capture.File{{Kind: capture.OutputHTML, Name: html, Data: []byte(g.content + " " + html), ContentType: "text/html"}},
	}, nil
}
