package notify

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/snapq/snapq/jobs"
	"github.com/snapq/snapq/regression"
)

// Store is what the planner, the handler and the reconcile step read and
// write. store.Store implements it.
type Store interface {
	GetRun(ctx context.Context, id string) (*regression.Run, error)
	GetSuite(ctx context.Context, id string) (*regression.Suite, error)
	// PreviousRunStatus is the status of the newest settled run of the
	// run's suite and branch before it ("" when none).
	PreviousRunStatus(ctx context.Context, r *regression.Run) (regression.RunStatus, error)
	// PlanNotifications records a run's notifications once and returns the
	// pending ones.
	PlanNotifications(ctx context.Context, runID string, ns []*regression.Notification) ([]*regression.Notification, error)
	UnplannedRuns(ctx context.Context, after, before time.Time, limit int) ([]string, error)
	GetNotification(ctx context.Context, id string) (*regression.Notification, error)
	RecordNotificationAttempt(ctx context.Context, id, status, lastErr string) (bool, error)
	PendingNotifications(ctx context.Context, before time.Time, limit int) ([]*regression.Notification, error)
	FailNotification(ctx context.Context, id, reason string) (bool, error)
	// ClaimMail takes one unit of the mail budgets for email notification
	// id: at most perSuite of its suite's and perKey of its suite owner's
	// email notifications claim within window. A notification that claimed
	// before (a retry) claims again for free. It returns "" when claimed,
	// else which budget is spent.
	ClaimMail(ctx context.Context, id string, perSuite, perKey int, window time.Duration) (string, error)
}

// Queue carries notifications to workers. queue.AsynqQueue implements it.
type Queue interface {
	// Submit enqueues a task; a duplicate (the same notification) is not an error.
	Submit(ctx context.Context, p jobs.Payload, timeout time.Duration) error
	// PayloadState is like jobs.Queue.TaskState for a payload's task.
	PayloadState(ctx context.Context, p jobs.Payload) (state, lastErr string, err error)
}

// Planner decides which of a settled run's channels hear of it, records
// those notifications and enqueues them.
type Planner struct {
	Repo   Store
	Queue  Queue
	Logger *slog.Logger
	// PublicURL is the api's public base URL, for links of runs that were
	// not started through the api (scheduled runs); "" leaves them out.
	PublicURL string
}

// RunFinished is the comparer's run-finished hook. Failures are logged: the
// api's reconciler decides for runs left undecided.
func (p *Planner) RunFinished(ctx context.Context, r *regression.Run) {
	if err := p.Plan(ctx, r.ID); err != nil {
		jobs.Log(p.Logger).Warn("decide the run's notifications; the reconciler will", "run_id", r.ID, "err", err)
	}
}

// Plan decides, once, the notifications of settled run runID and enqueues
// the pending ones.
func (p *Planner) Plan(ctx context.Context, runID string) error {
	r, err := p.Repo.GetRun(ctx, runID)
	if err != nil {
		return fmt.Errorf("load run %s: %w", runID, err)
	}
	if r.Status == regression.RunRunning {
		return nil
	}
	s, err := p.Repo.GetSuite(ctx, r.SuiteID)
	if err != nil {
		return fmt.Errorf("load suite %s: %w", r.SuiteID, err)
	}
	var ns []*regression.Notification
	if len(s.Notify) > 0 {
		prev, err := p.Repo.PreviousRunStatus(ctx, r)
		if err != nil {
			return err
		}
		if ns, err = p.decide(s, r, prev); err != nil {
			return err
		}
	}
	pending, err := p.Repo.PlanNotifications(ctx, r.ID, ns)
	if err != nil {
		return fmt.Errorf("record notifications of run %s: %w", r.ID, err)
	}
	for _, n := range pending {
		if err := p.Queue.Submit(ctx, Payload{NotificationID: n.ID}, 0); err != nil {
			jobs.Log(p.Logger).Warn("enqueue notification; the reconciler will", "notification_id", n.ID, "err", err)
		}
	}
	return nil
}

// decide lists the notifications of settled run r of suite s (prev: the
// status of the run before it), each with its message, built now: every
// attempt sends it as it is, whatever happens to the run since.
func (p *Planner) decide(s *regression.Suite, r *regression.Run, prev regression.RunStatus) ([]*regression.Notification, error) {
	prevFailed := prev == regression.RunFailed || prev == regression.RunNeedsReview || prev == regression.RunError
	maxRatio := 0.0
	for _, c := range r.Comparisons {
		if c.Status == regression.CompareFailed {
			maxRatio = max(maxRatio, c.DiffRatio)
		}
	}
	base := cmp.Or(r.DashboardURL, p.PublicURL)
	var ns []*regression.Notification
	for _, ch := range s.Notify {
		reason := ch.Reason(r.Status, prevFailed, maxRatio)
		if reason == "" {
			continue
		}
		msg, err := json.Marshal(NewMessage(s, r, reason, base))
		if err != nil {
			return nil, fmt.Errorf("message of run %s: %w", r.ID, err)
		}
		ns = append(ns, &regression.Notification{ID: jobs.NewID(), RunID: r.ID, ChannelID: ch.ID, Kind: ch.Kind,
			Reason: reason, Message: msg})
	}
	return ns, nil
}

// Handler runs notify:deliver tasks in a worker.
type Handler struct {
	Repo Store
	// HTTP sends chat and webhook messages (through the egress guard).
	HTTP HTTPDoer
	// Mail sends email (through the egress guard).
	Mail *Mailer
	// PublicURL is the api's public base URL, for links in runs that were
	// not started through the api (scheduled runs); "" leaves them out.
	PublicURL string
	// Timeout bounds one HTTP attempt (default 10s).
	Timeout time.Duration
	Logger  *slog.Logger
}

// Run is the asynq handler of KindNotify.
func (h *Handler) Run(ctx context.Context, p Payload) error {
	return h.Deliver(ctx, p.NotificationID, jobs.LastAttempt(ctx))
}

// Deliver makes one attempt at a notification. Success delivers it; a
// failure is recorded and returned so the queue retries, except on the last
// attempt and for failures a retry cannot fix: then it is failed for good.
func (h *Handler) Deliver(ctx context.Context, id string, lastAttempt bool) error {
	n, err := h.Repo.GetNotification(ctx, id)
	if errors.Is(err, jobs.ErrNotFound) {
		return fmt.Errorf("notification %s: %w", id, jobs.ErrNoRetry)
	}
	if err != nil {
		return fmt.Errorf("load notification %s: %w", id, err)
	}
	if n.Status != regression.NotificationPending {
		return nil // a duplicate task
	}
	log := jobs.Log(h.Logger).With("notification_id", n.ID, "run_id", n.RunID, "kind", n.Kind, "attempt", n.Attempts+1)
	r, err := h.Repo.GetRun(ctx, n.RunID)
	if err != nil {
		return fmt.Errorf("load run %s: %w", n.RunID, err)
	}
	s, err := h.Repo.GetSuite(ctx, r.SuiteID)
	if errors.Is(err, jobs.ErrNotFound) {
		return h.finish(ctx, log, n, permanent(errors.New("the suite was deleted")), true)
	}
	if err != nil {
		return fmt.Errorf("load suite %s: %w", r.SuiteID, err)
	}
	var ch *regression.Channel
	for i := range s.Notify {
		if s.Notify[i].ID == n.ChannelID {
			ch = &s.Notify[i]
		}
	}
	switch {
	case ch == nil:
		return h.finish(ctx, log, n, permanent(errors.New("the channel was removed from the suite")), true)
	case s.SecretsErr != nil && ch.Kind != regression.ChannelEmail:
		return h.finish(ctx, log, n, permanent(fmt.Errorf("the channel's url cannot be read: %w", s.SecretsErr)), true)
	}
	m, err := h.message(n, s, r)
	if err != nil {
		return h.finish(ctx, log, n, permanent(err), true)
	}
	return h.finish(ctx, log, n, h.send(ctx, ch, n, m), lastAttempt)
}

// message is the notification's message as it was decided; one decided
// before messages were kept is built from the run now.
func (h *Handler) message(n *regression.Notification, s *regression.Suite, r *regression.Run) (Message, error) {
	var m Message
	if len(n.Message) == 0 {
		return NewMessage(s, r, n.Reason, cmp.Or(r.DashboardURL, h.PublicURL)), nil
	}
	if err := json.Unmarshal(n.Message, &m); err != nil {
		return m, fmt.Errorf("the notification's message does not decode: %w", err)
	}
	return m, nil
}

// send formats m for the channel and sends it.
func (h *Handler) send(ctx context.Context, ch *regression.Channel, n *regression.Notification, m Message) error {
	id := n.ID
	if ch.Kind == regression.ChannelEmail {
		return h.mail(ctx, ch, n, m)
	}
	ctx, cancel := context.WithTimeout(ctx, h.timeout())
	defer cancel()
	var payload any
	switch ch.Kind {
	case regression.ChannelSlack:
		payload = m.Slack()
	case regression.ChannelDiscord:
		payload = m.Discord()
	case regression.ChannelTeams:
		payload = m.Teams()
	case regression.ChannelWebhook:
		return signedWebhook(ctx, h.HTTP, ch.URL, ch.Secret, id, m, time.Now())
	default:
		return permanent(fmt.Errorf("unknown channel kind %q", ch.Kind))
	}
	body, err := marshal(payload)
	if err != nil {
		return permanent(err)
	}
	return postJSON(ctx, h.HTTP, ch.URL, body, nil)
}

// mail sends an email notification when the allowlist admits every
// recipient and the suite's and key's mail budgets have room.
func (h *Handler) mail(ctx context.Context, ch *regression.Channel, n *regression.Notification, m Message) error {
	if h.Mail == nil || h.Mail.Config.Addr == "" {
		return permanent(errors.New("email is off on this worker: set SNAPQ_SMTP_ADDR and SNAPQ_SMTP_FROM"))
	}
	c := h.Mail.Config
	for _, to := range ch.To {
		if !c.AllowedDomains.Allows(to) {
			return permanent(fmt.Errorf("recipient %s: its domain is not in SNAPQ_SMTP_ALLOWED_DOMAINS", to))
		}
	}
	spent, err := h.Repo.ClaimMail(ctx, n.ID, c.maxPerSuite(), c.maxPerKey(), MailWindow)
	if err != nil {
		return err
	}
	if spent != "" {
		return permanent(fmt.Errorf("rate_limited: %s", spent))
	}
	return h.Mail.Send(ctx, ch.To, m.Subject(), m.Text())
}

// marshal is JSON without HTML escaping (Slack's <url|label> links stay
// readable on the wire).
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSpace(b.Bytes()), nil
}

// finish records the attempt's outcome and tells the queue what to do.
func (h *Handler) finish(ctx context.Context, log *slog.Logger, n *regression.Notification, sendErr error, lastAttempt bool) error {
	status, msg := regression.NotificationDelivered, ""
	final := sendErr != nil && (lastAttempt || isPermanent(sendErr))
	switch {
	case sendErr == nil:
	case final:
		status, msg = regression.NotificationFailed, sendErr.Error()
	default:
		status, msg = regression.NotificationPending, sendErr.Error()
	}
	rctx, cancel := jobs.Bookkeeping(ctx)
	defer cancel()
	if _, err := h.Repo.RecordNotificationAttempt(rctx, n.ID, status, msg); err != nil {
		log.Error("record notification attempt", "err", err)
		return err
	}
	switch {
	case sendErr == nil:
		log.Info("notification delivered")
		return nil
	case final:
		log.Warn("notification failed", "err", sendErr)
		return fmt.Errorf("%w: %w", sendErr, jobs.ErrNoRetry)
	default:
		log.Warn("notification attempt failed; retrying", "err", sendErr)
		return sendErr
	}
}

func (h *Handler) timeout() time.Duration {
	if h.Timeout > 0 {
		return h.Timeout
	}
	return 10 * time.Second
}

// reconcileGrace is how long a settled run may stay undecided, or a pending
// notification untouched, before the reconciler looks at it.
const reconcileGrace = 10 * time.Second

// unplannedWindow bounds how old an undecided run may be and still be
// announced: a worker that died an hour ago does not page anyone now.
const unplannedWindow = time.Hour

// ReconcileStep is the reconciler's pass for notifications: settled runs
// nobody decided for are decided; a pending notification whose task is
// missing is enqueued, one whose task the queue gave up on is failed.
// publicURL is the api's public base URL, for links of scheduled runs.
func ReconcileStep(repo Store, q Queue, log *slog.Logger, publicURL string) jobs.ReconcileStep {
	p := &Planner{Repo: repo, Queue: q, Logger: log, PublicURL: publicURL}
	return jobs.ReconcileStep{Name: "notifications", Run: func(ctx context.Context) (int, error) {
		now := time.Now()
		ids, err := repo.UnplannedRuns(ctx, now.Add(-unplannedWindow), now.Add(-reconcileGrace), 100)
		if err != nil {
			return 0, err
		}
		acted := 0
		var errs []error
		for _, id := range ids {
			acted++
			if err := p.Plan(ctx, id); err != nil {
				errs = append(errs, err)
			}
		}
		ns, err := repo.PendingNotifications(ctx, now.Add(-reconcileGrace), 1000)
		if err != nil {
			return acted, errors.Join(append(errs, err)...)
		}
		for _, n := range ns {
			state, lastErr, err := q.PayloadState(ctx, Payload{NotificationID: n.ID})
			if err != nil {
				errs = append(errs, err)
				continue
			}
			switch state {
			case "":
				err = q.Submit(ctx, Payload{NotificationID: n.ID}, 0)
			case "archived", "completed":
				msg := "the queue gave up on the notification"
				if lastErr != "" {
					msg += ": " + lastErr
				}
				_, err = repo.FailNotification(ctx, n.ID, msg)
			default:
				continue
			}
			acted++
			if err != nil {
				errs = append(errs, fmt.Errorf("notification %s: %w", n.ID, err))
			}
		}
		return acted, errors.Join(errs...)
	}}
}
