package jobs

import (
	"context"
	"hash/crc32"
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

// upload stores the capture's images, the first one's thumbnail and its files,
// and returns their artifacts in order: images, then files. On a failed upload
// what it stored is deleted (uploadFailed) and the job's error returned.
func (h *Handler) upload(ctx context.Context, job *Job, res *capture.Result) ([]*Artifact, uploaded, *jobError) {
	out := uploaded{timings: map[string]int64{}}
	start := time.Now()
	arts := make([]*Artifact, 0, len(res.Images)+len(res.Files))
	for _, img := range res.Images {
		a, err := h.putImage(ctx, job, img)
		if err != nil {
			h.uploadFailed(ctx, job, arts, err)
			return nil, out, uploadError(ctx, img.Name, err)
		}
		arts = append(arts, a)
	}
	out.timings["upload"] = time.Since(start).Milliseconds()
	if len(arts) > 0 && !h.SkipThumbnails {
		thumb := time.Now()
		arts[0].Thumbnail = h.thumbnail(ctx, job, res.Images[0].Name, res.Images[0].Data)
		out.timings["thumbnail"] = time.Since(thumb).Milliseconds()
	}
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
