package jobs

import (
	"context"
	"errors"
	"hash/crc32"
	"sync"
	"time"

	"github.com/snapq/snapq/artifacts"
	"github.com/snapq/snapq/capture"
)

// uploaded is what upload reports besides the artifacts: the text outputs'
// sizes and the upload stages' timings (milliseconds).
type uploaded struct {
	textChars, mdChars int
	mdTruncated        bool
	timings            map[string]int64
}

// uploadConcurrency is how many images of one job are stored at once: a tall
// page's segments are independent objects, and a round trip to the store
// costs more waiting than work.
const uploadConcurrency = 4

// upload stores the capture's images (uploadConcurrency at once, the first
// one's thumbnail made and stored beside them), then its files, and returns
// their artifacts in order: images, then files. On a failed upload what it
// stored is deleted (uploadFailed) and the job's error returned.
func (h *Handler) upload(ctx context.Context, job *Job, res *capture.Result) ([]*Artifact, uploaded, *jobError) {
	out := uploaded{timings: map[string]int64{}}
	start := time.Now()
	arts, jerr := h.putImages(ctx, job, res.Images, out.timings)
	if jerr != nil {
		return nil, out, jerr
	}
	out.timings["upload"] = time.Since(start).Milliseconds()
	files := time.Now()
	for i, f := range res.Files {
		a, err := h.putFile(ctx, job, res, f, len(res.Images)+i+1)
		if err != nil {
			h.uploadFailed(ctx, job, arts, err)
			return nil, out, uploadError(ctx, f.Name, err)
		}
		arts = append(arts, a)
		switch f.Kind {
		case capture.OutputText:
			out.textChars = f.Chars
		case capture.OutputMarkdown:
			out.mdChars, out.mdTruncated = f.Chars, f.Truncated
		}
	}
	if len(res.Files) > 0 {
		out.timings["files"] = time.Since(files).Milliseconds()
	}
	return arts, out, nil
}

// putImages stores imgs, uploadConcurrency at once, and the first one's
// thumbnail beside them (its time in timings["thumbnail"]: it overlaps the
// upload). The first failure cancels the uploads still running and deletes
// what was stored.
func (h *Handler) putImages(ctx context.Context, job *Job, imgs []capture.Image, timings map[string]int64) ([]*Artifact, *jobError) {
	uctx, cancel := context.WithCancel(ctx)
	defer cancel()
	arts := make([]*Artifact, len(imgs))
	errs := make([]error, len(imgs))
	var thumb *Thumbnail
	var wg sync.WaitGroup
	if len(imgs) > 0 && !h.SkipThumbnails && !h.previewLater(ctx) {
		wg.Go(func() {
			start := time.Now()
			thumb = h.thumbnail(uctx, job, imgs[0])
			timings["thumbnail"] = time.Since(start).Milliseconds()
		})
	}
	slots := make(chan struct{}, uploadConcurrency)
	for i, img := range imgs {
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			if arts[i], errs[i] = h.putImage(uctx, job, img); errs[i] != nil {
				cancel()
			}
		})
	}
	wg.Wait()
	if i := firstFailure(ctx, errs); i >= 0 {
		h.uploadFailed(ctx, job, h.maybeStored(job, imgs, arts, thumb), errs[i])
		return nil, uploadError(ctx, imgs[i].Name, errs[i])
	}
	if len(arts) > 0 {
		arts[0].Thumbnail = thumb
	}
	return arts, nil
}

// maybeStored is what a failed putImages may have left in the bucket: every
// image it stored, and, under attempt keys, every image it tried — a PUT whose
// answer was lost or canceled may still have landed. Content-addressed keys
// are listed only when their PUT succeeded: other jobs may share them.
func (h *Handler) maybeStored(job *Job, imgs []capture.Image, arts []*Artifact, thumb *Thumbnail) []*Artifact {
	var stored []*Artifact
	for i, a := range arts {
		switch {
		case a != nil:
			stored = append(stored, a)
		case h.Content == nil:
			stored = append(stored, &Artifact{ObjectKey: AttemptKey(job, imgs[i].Name)})
		}
	}
	if thumb != nil {
		stored = append(stored, &Artifact{ObjectKey: thumb.ObjectKey})
	}
	return stored
}

// putFile stores one file output of the capture as the seq-th artifact.
func (h *Handler) putFile(ctx context.Context, job *Job, res *capture.Result, f capture.File, seq int) (*Artifact, error) {
	var opts artifacts.PutOptions
	if servedAsDownload(f, res) {
		// Captured HTML, a PDF target's own file and a download are the target's
		// content: a browser must never render them from the bucket's origin.
		opts.ContentDisposition = `attachment; filename="` + f.Name + `"`
	}
	obj, err := h.put(ctx, AttemptKey(job, f.Name), f.Data, f.ContentType, opts)
	if err != nil {
		return nil, err
	}
	return &Artifact{ID: NewID(), JobID: job.ID, Kind: f.Kind, Name: f.Name, Seq: seq,
		ObjectKey: obj.Key, ContentType: f.ContentType, Bytes: obj.Bytes, SHA256: obj.SHA256, CRC32: crc32.ChecksumIEEE(f.Data),
		Reused: obj.Reused}, nil
}

// firstFailure is the index of the failure to report: the first that is not
// an upload canceled because another one failed; -1 when none failed.
func firstFailure(ctx context.Context, errs []error) int {
	first := -1
	for i, err := range errs {
		if err == nil {
			continue
		}
		if first < 0 {
			first = i
		}
		if ctx.Err() != nil || !errors.Is(err, context.Canceled) {
			return i
		}
	}
	return first
}
