package jobs_test

import (
	"context"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/snapq/snapq/artifacts"
	"github.com/snapq/snapq/capture"
	"github.com/snapq/snapq/jobs"
)

// With content-addressed storage, two jobs that capture the same bytes store
// them once: both jobs' rows name the same object, each with its own name and
// content type, and the second job's uploads are all reused.
func TestHandlerContentAddressed(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.h.Content = e.bucket
	var mu sync.Mutex
	counted := map[bool]int64{}
	e.h.Uploads = func(reused bool, n int64) {
		mu.Lock()
		defer mu.Unlock()
		counted[reused] += n
	}
	ctx := jobs.WithLastAttempt(context.Background(), false)
	e.renderer.result = &capture.Result{HTTPStatus: 200, PageHeight: 700,
		Images: []capture.Image{{Name: "p.png", Index: 1, ContentType: "image/png", Data: []byte("png1"), Width: 10, Height: 10}},
		Files: []capture.File{
			{Kind: capture.OutputHTML, Name: "p.html", ContentType: "text/html", Data: []byte("same")},
			{Kind: capture.OutputText, Name: "p.txt", ContentType: "text/plain", Data: []byte("same")},
		}}
	first, second := queuedJob(e, 0), queuedJob(e, 0)
	for _, j := range []*jobs.Job{first, second} {
		if err := e.h.Capture(ctx, jobs.CapturePayload{JobID: j.ID}); err != nil {
			t.Fatalf("Capture = %v", err)
		}
	}
	pngKey, sameKey := artifacts.ContentKey(sha("png1")), artifacts.ContentKey(sha("same"))
	for _, j := range []*jobs.Job{first, second} {
		type row struct{ Name, Key, ContentType string }
		var got []row
		for _, a := range e.store.artifactsOf(j.ID) {
			got = append(got, row{a.Name, a.ObjectKey, a.ContentType})
		}
		want := []row{{"p.png", pngKey, "image/png"}, {"p.html", sameKey, "text/html"}, {"p.txt", sameKey, "text/plain"}}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("job %s artifacts (-want +got):\n%s", j.ID, diff)
		}
	}
	objs := e.bucket.snapshot()
	if len(objs) != 2 || objs[pngKey].Data != "png1" || objs[sameKey].Data != "same" {
		t.Errorf("bucket holds %v, want the two distinct contents once each", objs)
	}
	if objs[sameKey].ContentDisposition != "attachment" {
		t.Errorf("content object disposition %q, want attachment", objs[sameKey].ContentDisposition)
	}
	// first: png1 + same uploaded, same reused; second: all three reused.
	if counted[false] != 8 || counted[true] != 4+4+4+4 {
		t.Errorf("uploaded %d bytes, reused %d; want 8 and 16", counted[false], counted[true])
	}
}

// A content object is never deleted by an attempt that lost its job: another
// job's rows may name it.
func TestHandlerContentAddressedLoserKeepsObjects(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.h.Content = e.bucket
	j := queuedJob(e, 0)
	e.renderer.result = &capture.Result{HTTPStatus: 200, PageHeight: 700,
		Images: []capture.Image{{Name: "p.png", Index: 1, ContentType: "image/png", Data: []byte("png1"), Width: 10, Height: 10}}}
	ctx := context.Background()
	e.renderer.during = func() { // another attempt takes the job mid-capture
		if _, started, err := e.store.StartJob(ctx, j.ID); err != nil || !started {
			t.Errorf("second StartJob = %v, %v", started, err)
		}
	}
	if err := e.h.Process(ctx, j.ID, false); err != nil {
		t.Fatalf("Process = %v, want nil", err)
	}
	if _, ok := e.bucket.snapshot()[artifacts.ContentKey(sha("png1"))]; !ok {
		t.Errorf("the content object was deleted by the attempt that lost the job")
	}
}
