package jobs

import (
	"context"
	"time"

	"github.com/snapq/snapq/capture"
)

// StageThumbnailAfter is the preview of an interactive capture's first
// screenshot, made after its answer (thumbnailAfter).
const StageThumbnailAfter = "thumbnail_after"

// ThumbnailStore is a JobStore that can add a thumbnail to an artifact
// already committed (the preview of an interactive capture, made after the
// job completed).
type ThumbnailStore interface {
	AddThumbnail(ctx context.Context, artifactID string, t *Thumbnail) error
}

// laterThumbnail is the image an interactive capture previews after its
// answer, and the artifact row that stores it.
type laterThumbnail struct {
	artifact *Artifact
	img      capture.Image
}

// previewLater reports whether the thumbnail of this attempt's first image
// waits until the job is complete: somebody waits for an interactive capture
// (capture.Interactive), and the preview (a resize and a JPEG encode of the
// first segment, with a full decode when the capture made no Preview) is not
// part of its answer. Batch captures make
// it beside their uploads, as before.
func (h *Handler) previewLater(ctx context.Context) bool {
	_, ok := h.Repo.(ThumbnailStore)
	return ok && !h.SkipThumbnails && capture.Interactive(ctx)
}

// thumbnailAfter makes, stores and records the preview of a completed
// interactive capture's first screenshot (a.preview). A failure is logged and
// leaves the artifact without a thumbnail, as a failed preview of a batch
// capture does; an object stored without its row is the orphan sweep's.
func (h *Handler) thumbnailAfter(ctx context.Context, a *attempt) {
	p := a.preview
	a.preview = nil
	ts, ok := h.Repo.(ThumbnailStore)
	if p == nil || !ok || a.cached {
		return
	}
	start := time.Now()
	th := h.thumbnail(ctx, a.job, p.img)
	if th == nil {
		return
	}
	if err := ts.AddThumbnail(ctx, p.artifact.ID, th); err != nil {
		a.log.Warn("record the thumbnail made after the answer", "artifact", p.artifact.Name, "err", err)
		return
	}
	p.artifact.Thumbnail = th
	h.observe(StageThumbnailAfter, start)
}
