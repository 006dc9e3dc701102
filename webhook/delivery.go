package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/snapq/snapq/egress"
	"github.com/snapq/snapq/jobs"
)

// HTTPDoer sends webhook requests. The worker passes
// (*egress.Proxy).HTTPClient, so deliveries obey the same egress policy as
// Chromium: loopback, private and metadata addresses are refused unless
// SNAPQ_EGRESS_ALLOW_CIDRS allows them.
type HTTPDoer interface {
	Do(req *http.Request) (*http.Response, error)
}

// DeliveryStore is what Handler needs.
type DeliveryStore interface {
	GetWebhookDelivery(ctx context.Context, id string) (*Delivery, error)
	// GetBatchWebhook returns the batch's webhook, or jobs.ErrNotFound when it has none.
	GetBatchWebhook(ctx context.Context, batchID string) (*jobs.Webhook, error)
	GetBatch(ctx context.Context, id string) (*jobs.Batch, error)
	// RecordWebhookAttempt counts one attempt of a pending delivery and sets its
	// status, last HTTP status and last error. ok=false: it was not pending.
	RecordWebhookAttempt(ctx context.Context, id string, a Attempt) (ok bool, err error)
}

// EventData builds the data of an event about a batch, and when it happened
// (nil: when the batch finished).
type EventData func(ctx context.Context, batchID string) (data any, at *time.Time, err error)

// Handler runs webhook:deliver tasks in a worker.
type Handler struct {
	Repo   DeliveryStore
	Client HTTPDoer
	// Events builds the data of events other than jobs.EventBatchCompleted,
	// whose data is the batch's jobs.BatchView (the regression package
	// provides run.completed).
	Events map[string]EventData
	// Timeout bounds one attempt (default 10s).
	Timeout time.Duration
	Logger  *slog.Logger
	// Now is the clock of webhook-timestamp (default time.Now).
	Now func() time.Time
}

// errWebhookBlocked marks an attempt the egress policy refused.
var errWebhookBlocked = errors.New("blocked by the egress policy")

// Run is the asynq handler of KindWebhook (see queue.Register).
func (h *Handler) Run(ctx context.Context, p Payload) error {
	return h.Deliver(ctx, p.DeliveryID, jobs.LastAttempt(ctx))
}

// Deliver makes one attempt of a delivery. A 2xx answer delivers it; any
// other outcome is a failed attempt, recorded and returned so the queue
// retries, except on the last attempt and when the egress policy refuses the
// address (retrying cannot help): then the delivery is failed for good.
// webhook-id is the delivery id on every attempt; webhook-timestamp is the
// attempt's time.
func (h *Handler) Deliver(ctx context.Context, id string, lastAttempt bool) error {
	d, err := h.Repo.GetWebhookDelivery(ctx, id)
	if errors.Is(err, jobs.ErrNotFound) {
		return fmt.Errorf("webhook delivery %s: %w", id, jobs.ErrNoRetry)
	}
	if err != nil {
		return fmt.Errorf("load webhook delivery %s: %w", id, err)
	}
	if d.Status != DeliveryPending {
		return nil // a duplicate task
	}
	log := h.logger().With("delivery_id", d.ID, "batch_id", d.BatchID, "event", d.Event, "attempt", d.Attempts+1)
	wh, err := h.Repo.GetBatchWebhook(ctx, d.BatchID)
	if errors.Is(err, jobs.ErrNotFound) {
		h.record(ctx, log, d.ID, Attempt{Status: DeliveryFailed, Error: "the batch has no webhook"})
		return fmt.Errorf("batch %s has no webhook: %w", d.BatchID, jobs.ErrNoRetry)
	}
	if err != nil {
		return fmt.Errorf("load webhook of batch %s: %w", d.BatchID, err)
	}
	b, err := h.Repo.GetBatch(ctx, d.BatchID)
	if err != nil {
		return fmt.Errorf("load batch %s: %w", d.BatchID, err)
	}
	key, err := jobs.WebhookKey(wh.Secret)
	if err != nil {
		h.record(ctx, log, d.ID, Attempt{Status: DeliveryFailed, Error: "webhook secret: " + err.Error()})
		return fmt.Errorf("webhook secret of batch %s: %w", d.BatchID, jobs.ErrNoRetry)
	}
	body, err := h.eventBody(ctx, d, b)
	if err != nil {
		return err
	}
	status, perr := h.post(ctx, wh.URL, key, d.ID, body)
	return h.outcome(ctx, log, d.ID, status, perr, lastAttempt)
}

// eventBody is the delivery's event: its stored data, the event's builder's (Events), or the
// batch's view, at when it happened.
func (h *Handler) eventBody(ctx context.Context, d *Delivery, b *jobs.Batch) ([]byte, error) {
	at := d.CreatedAt
	if b.FinishedAt != nil {
		at = *b.FinishedAt
	}
	var data any = b.View()
	if d.Data != nil {
		data, at = json.RawMessage(d.Data), d.CreatedAt
	} else if build, ok := h.Events[d.Event]; ok {
		var when *time.Time
		var err error
		if data, when, err = build(ctx, d.BatchID); err != nil {
			return nil, fmt.Errorf("build %s event of batch %s: %w", d.Event, d.BatchID, err)
		}
		if when != nil {
			at = *when
		}
	}
	body, err := json.Marshal(Event{Type: d.Event, Timestamp: at.UTC(), Data: data})
	if err != nil {
		return nil, fmt.Errorf("encode webhook event: %w", err)
	}
	return body, nil
}

// outcome records an attempt's outcome and tells the queue what to do: done, retry (perr),
// or give up (refused by the egress policy, or the last attempt).
func (h *Handler) outcome(ctx context.Context, log *slog.Logger, id string, status int, perr error, lastAttempt bool) error {
	switch {
	case perr == nil:
		if err := h.record(ctx, log, id, Attempt{Status: DeliveryDelivered, HTTPStatus: status}); err != nil {
			return err
		}
		log.Info("webhook delivered", "http_status", status)
		return nil
	case errors.Is(perr, errWebhookBlocked):
		log.Warn("webhook refused by the egress policy", "err", perr)
		if err := h.record(ctx, log, id, Attempt{Status: DeliveryFailed, HTTPStatus: status, Error: perr.Error()}); err != nil {
			return err
		}
		return fmt.Errorf("%w: %w", perr, jobs.ErrNoRetry)
	default:
		next := DeliveryPending
		if lastAttempt {
			next = DeliveryFailed
		}
		log.Warn("webhook attempt failed", "http_status", status, "err", perr, "final", lastAttempt)
		if err := h.record(ctx, log, id, Attempt{Status: next, HTTPStatus: status, Error: perr.Error()}); err != nil {
			return err
		}
		if lastAttempt {
			return fmt.Errorf("%w: %w", perr, jobs.ErrNoRetry)
		}
		return perr
	}
}

// post sends one signed request and returns the HTTP status (0 without a
// response) and nil only for a 2xx answer.
func (h *Handler) post(ctx context.Context, target string, key []byte, msgID string, body []byte) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, h.timeout())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		return 0, fmt.Errorf("build request: %w", err)
	}
	ts := h.now().Unix()
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "snapq-webhooks/1")
	req.Header.Set(HeaderID, msgID)
	req.Header.Set(HeaderTimestamp, strconv.FormatInt(ts, 10))
	req.Header.Set(HeaderSignature, Sign(key, msgID, ts, body))
	resp, err := h.Client.Do(req)
	if err != nil {
		var de *egress.DialError
		if errors.As(err, &de) && errors.Is(err, egress.ErrBlocked) {
			return 0, fmt.Errorf("%w: %s (SNAPQ_EGRESS_ALLOW_CIDRS can allow it)", errWebhookBlocked, de.Reason)
		}
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // the URL is the user's own; keep the message short
		}
		return 0, fmt.Errorf("send: %w", err)
	}
	defer resp.Body.Close()
	snippet, _ := io.ReadAll(io.LimitReader(resp.Body, 256))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) // let the connection be reused
	// Through a proxy the guard answers itself, marked with X-Snapq-Egress.
	if resp.Header.Get(egress.HeaderOutcome) == egress.KindBlocked {
		return resp.StatusCode, fmt.Errorf("%w: the egress proxy refused the address (SNAPQ_EGRESS_ALLOW_CIDRS can allow it)", errWebhookBlocked)
	}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return resp.StatusCode, nil
	}
	msg := fmt.Sprintf("receiver answered HTTP %d", resp.StatusCode)
	if resp.StatusCode >= 300 && resp.StatusCode < 400 {
		msg += " (redirects are not followed)"
	}
	if s := strings.TrimSpace(strings.ToValidUTF8(string(snippet), "")); s != "" {
		msg += ": " + s
	}
	return resp.StatusCode, errors.New(msg)
}

// record writes an attempt's outcome even if the task's ctx is done.
func (h *Handler) record(ctx context.Context, log *slog.Logger, id string, a Attempt) error {
	rctx, cancel := jobs.Bookkeeping(ctx)
	defer cancel()
	if _, err := h.Repo.RecordWebhookAttempt(rctx, id, a); err != nil {
		log.Error("record webhook attempt", "err", err)
		return fmt.Errorf("record attempt of webhook delivery %s: %w", id, err)
	}
	return nil
}

func (h *Handler) timeout() time.Duration {
	if h.Timeout > 0 {
		return h.Timeout
	}
	return DefaultTimeout
}

func (h *Handler) now() time.Time {
	if h.Now != nil {
		return h.Now()
	}
	return time.Now()
}

func (h *Handler) logger() *slog.Logger { return jobs.Log(h.Logger) }
