package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/snapq/snapq/events"
	"github.com/snapq/snapq/jobs"
)

// POST /v1/capture: a one-job batch on the interactive lane, answered when
// its job is done (within wait_ms) or with 202 and the job's URL. The wait
// follows the batch's event stream; Postgres is read once before and once
// after.

// captureBytes are the representations a capture answers with by Accept:
// the content type, the output that makes it and the screenshot format.
var captureBytes = map[string]struct{ output, format string }{
	"image/png":       {"screenshot", "png"},
	"image/jpeg":      {"screenshot", "jpeg"},
	"image/webp":      {"screenshot", "webp"},
	"text/markdown":   {"markdown", ""},
	"application/pdf": {"pdf", ""},
	"text/html":       {"html", ""},
}

// captureRetryAfter is the Retry-After of a capture not done within wait_ms.
const captureRetryAfter = "2"

// accepted picks the first content type of Accept that a capture answers
// with; "" means the JSON job view.
func accepted(header string) (string, error) {
	if header == "" {
		return "", nil
	}
	for _, part := range strings.Split(header, ",") {
		mt, _, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil {
			continue
		}
		if _, ok := captureBytes[mt]; ok {
			return mt, nil
		}
		if mt == "application/json" || mt == "*/*" || mt == "application/*" {
			return "", nil
		}
	}
	return "", &apiError{Status: http.StatusNotAcceptable, Code: "not_acceptable", Field: "Accept",
		Message: "answer types: application/json, image/png, image/jpeg, image/webp, text/markdown, application/pdf, text/html"}
}

func (s *Server) syncCapture(c *gin.Context) error {
	want, err := accepted(c.GetHeader("Accept"))
	if err != nil {
		return err
	}
	segment, err := segmentParam(c)
	if err != nil {
		return err
	}
	body, err := loaded[[]byte](c, bodyKey)
	if err != nil {
		return err
	}
	idem := c.GetHeader("Idempotency-Key")
	if len(idem) > jobs.MaxIdempotencyKey {
		return badRequest("invalid_header", "Idempotency-Key", "must be at most 255 characters")
	}
	rep := captureBytes[want]
	b, j, wait, err := s.Service.SubmitCapture(c.Request.Context(), jobs.CaptureSubmission{Body: body, Owner: owner(c),
		IdempotencyKey: idem, Output: rep.output, Format: rep.format})
	if err != nil {
		return err
	}
	allowWait(c, wait)
	j, err = s.awaitJob(c.Request.Context(), b.ID, j.ID, wait)
	if err != nil {
		return err
	}
	return s.answerCapture(c, j, want, segment)
}

// captureWriteSlack is the time a capture's answer has to be written after
// its wait.
const captureWriteSlack = 30 * time.Second

// allowWait moves the connection's write deadline past wait: the server's
// WriteTimeout (a minute) is shorter than the longest wait_ms, and would cut
// the connection of a call still waiting instead of answering it.
func allowWait(c *gin.Context, wait time.Duration) {
	err := http.NewResponseController(c.Writer).SetWriteDeadline(time.Now().Add(wait + captureWriteSlack))
	if err != nil && !errors.Is(err, http.ErrNotSupported) {
		_ = c.Error(fmt.Errorf("extend the write deadline: %w", err)) // logged; the answer may be cut
	}
}

// segmentParam reads ?segment=N (default 1, 1 to 50).
func segmentParam(c *gin.Context) (int, error) {
	v := c.DefaultQuery("segment", "1")
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > 50 {
		return 0, badRequest("invalid_segment", "segment", "an integer from 1 to 50")
	}
	return n, nil
}

// awaitJob returns job id once it is final, or as it is when wait is over
// (or the caller went away). It follows the batch's events; without an
// event hub it reads the job every second.
func (s *Server) awaitJob(ctx context.Context, batchID, id string, wait time.Duration) (*jobs.Job, error) {
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	for {
		var sub *events.Subscription
		if s.Events != nil {
			sub, _ = s.Events.Subscribe(ctx, events.BatchStream(batchID)) // nil on error: read again below
		}
		j, err := s.Batches.GetJob(context.WithoutCancel(ctx), id)
		if err != nil || j.Terminal() || ctx.Err() != nil {
			closeSub(sub)
			return j, err
		}
		waitForJob(ctx, sub, id)
		closeSub(sub)
		if ctx.Err() != nil {
			return s.Batches.GetJob(context.WithoutCancel(ctx), id)
		}
	}
}

func closeSub(sub *events.Subscription) {
	if sub != nil {
		sub.Close()
	}
}

// waitForJob returns when the job's events say it is final, the stream ends
// (the subscriber fell behind), or ctx ends; without a subscription after a
// second.
func waitForJob(ctx context.Context, sub *events.Subscription, id string) {
	if sub == nil {
		t := time.NewTimer(time.Second)
		defer t.Stop()
		select {
		case <-ctx.Done():
		case <-t.C:
		}
		return
	}
	for {
		select {
		case <-ctx.Done():
			return
		case e, ok := <-sub.C:
			if !ok || e.Type == events.TypeDone {
				return
			}
			var je events.Job
			if e.Type == events.TypeJob && json.Unmarshal(e.Data, &je) == nil && je.JobID == id && jobs.JobStatus(je.Status).Final() {
				return
			}
		}
	}
}

// answerCapture writes the job view (200 when final, 202 when not) or, by
// Accept, the bytes of the output asked for.
func (s *Server) answerCapture(c *gin.Context, j *jobs.Job, want string, segment int) error {
	c.Header("Location", "/v1/jobs/"+j.ID)
	c.Header("X-Snapq-Job-Id", j.ID)
	if !j.Terminal() {
		out, _, err := s.jobWithArtifacts(c, j)
		if err != nil {
			return err
		}
		c.Header("Retry-After", captureRetryAfter)
		c.JSON(http.StatusAccepted, out)
		return nil
	}
	if r := j.Result; r != nil && r.HTTPStatus > 0 {
		c.Header("X-Response-Code", strconv.Itoa(r.HTTPStatus))
		c.Header("X-Response-Status", http.StatusText(r.HTTPStatus))
		c.Header("X-Response-URL", r.FinalURL)
	}
	out, arts, err := s.jobWithArtifacts(c, j)
	if err != nil {
		return err
	}
	if want == "" {
		c.JSON(http.StatusOK, out)
		return nil
	}
	if j.Status != jobs.StatusSucceeded {
		return &apiError{Status: http.StatusBadGateway, Code: j.ErrorCode, Message: "the capture failed: " + j.ErrorMessage}
	}
	return s.writeArtifact(c, j, arts, want, segment)
}

// writeArtifact streams the artifact of the output asked for.
func (s *Server) writeArtifact(c *gin.Context, j *jobs.Job, arts []*jobs.Artifact, want string, segment int) error {
	rep := captureBytes[want]
	var pick *jobs.Artifact
	for _, a := range arts {
		if a.Kind == rep.output && (a.Kind != jobs.KindScreenshot || a.Seq == segment) {
			pick = a
			break
		}
	}
	if r := j.Result; r != nil && rep.output == jobs.KindScreenshot {
		c.Header("X-Segment-Count", strconv.Itoa(r.Segments.Captured))
		c.Header("X-Segments-Total", strconv.Itoa(r.Segments.Total))
		c.Header("X-Segments-Truncated", strconv.FormatBool(r.Segments.Truncated))
	}
	if pick == nil {
		return &apiError{Status: http.StatusNotFound, Code: "not_found", Field: "segment",
			Message: fmt.Sprintf("the capture has no %s artifact for this request (segment %d)", rep.output, segment)}
	}
	if s.Objects == nil {
		return &apiError{Status: http.StatusNotFound, Code: "not_found", Message: "this server does not serve artifact bytes"}
	}
	rc, err := s.Objects.Open(c.Request.Context(), pick.ObjectKey, 0)
	if err != nil {
		return fmt.Errorf("open artifact %s: %w", pick.ID, err)
	}
	defer rc.Close()
	c.Header("Content-Type", pick.ContentType)
	c.Header("Content-Length", strconv.FormatInt(pick.Bytes, 10))
	c.Header("X-Artifact-Id", pick.ID)
	c.Status(http.StatusOK)
	_, err = io.Copy(c.Writer, rc)
	if err != nil {
		_ = c.Error(err) // the status is sent; logged
	}
	return nil
}
