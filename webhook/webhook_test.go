package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/snapq/snapq/egress"
	"github.com/snapq/snapq/jobs"
)

// The reference vector of the Standard Webhooks specification.
func TestSignWebhookReferenceVector(t *testing.T) {
	t.Parallel()
	key, err := jobs.WebhookKey("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	if err != nil {
		t.Fatal(err)
	}
	got := Sign(key, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, []byte(`{"test": 2432232314}`))
	if want := "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="; got != want {
		t.Fatalf("SignWebhook = %s, want %s", got, want)
	}
}

func TestSignWebhookVerify(t *testing.T) {
	t.Parallel()
	body := []byte(`{"test": 2432232314}`)
	key, _ := jobs.WebhookKey("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	now := time.Unix(1614265330, 0)
	h := http.Header{}
	h.Set(HeaderID, "msg_p5jXN8AQM9LWM0D4loKWxJek")
	h.Set(HeaderTimestamp, "1614265330")
	h.Set(HeaderSignature, "v1,bm9wZQ== "+Sign(key, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, body))
	if err := Verify(key, h, body, now, 5*time.Minute); err != nil {
		t.Fatalf("verify with the right key: %v", err)
	}
	other, _ := jobs.WebhookKey("another-secret-of-16+")
	tests := []struct {
		name string
		key  []byte
		body string
		now  time.Time
	}{
		{name: "another secret", key: other, body: string(body), now: now},
		{name: "raw bytes of the whsec string", key: []byte("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"), body: string(body), now: now},
		{name: "tampered body", key: key, body: `{"test": 2432232315}`, now: now},
		{name: "too old", key: key, body: string(body), now: now.Add(6 * time.Minute)},
		{name: "from the future", key: key, body: string(body), now: now.Add(-6 * time.Minute)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if err := Verify(tt.key, h, []byte(tt.body), tt.now, 5*time.Minute); !errors.Is(err, ErrSignature) {
				t.Fatalf("VerifyWebhook = %v, want ErrSignature", err)
			}
		})
	}
}

// webhookRepo is the Handler's DeliveryStore, in memory.
type webhookRepo struct {
	mu       sync.Mutex
	batch    *jobs.Batch
	hook     *jobs.Webhook
	delivery Delivery
}

var _ DeliveryStore = (*webhookRepo)(nil)

func (r *webhookRepo) GetBatch(context.Context, string) (*jobs.Batch, error) { return r.batch, nil }

func (r *webhookRepo) GetBatchWebhook(context.Context, string) (*jobs.Webhook, error) {
	if r.hook == nil {
		return nil, jobs.ErrNotFound
	}
	return r.hook, nil
}

func (r *webhookRepo) GetWebhookDelivery(_ context.Context, id string) (*Delivery, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if id != r.delivery.ID {
		return nil, jobs.ErrNotFound
	}
	d := r.delivery
	return &d, nil
}

func (r *webhookRepo) RecordWebhookAttempt(_ context.Context, id string, a Attempt) (bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if id != r.delivery.ID || r.delivery.Status != DeliveryPending {
		return false, nil
	}
	r.delivery.Attempts++
	r.delivery.Status, r.delivery.LastStatus, r.delivery.LastError = a.Status, a.HTTPStatus, a.Error
	return true, nil
}

func newWebhookRepo(url string) *webhookRepo {
	fin := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	return &webhookRepo{
		batch: &jobs.Batch{ID: "01a22b19-0000-7000-8000-000000000001", Total: 2, Counts: jobs.Counts{Succeeded: 1, Failed: 1},
			Labels: map[string]string{"team": "web"}, CreatedAt: fin.Add(-time.Minute), FinishedAt: &fin},
		hook:     &jobs.Webhook{URL: url, Secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"},
		delivery: Delivery{ID: "01a22b19-0000-7000-8000-0000000000d1", BatchID: "01a22b19-0000-7000-8000-000000000001", Event: jobs.EventBatchCompleted, Status: DeliveryPending},
	}
}

func TestWebhookDeliver(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var ids []string
	statuses := []int{500, 200}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		key, _ := jobs.WebhookKey("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
		if err := Verify(key, r.Header, body, time.Now(), 5*time.Minute); err != nil {
			t.Errorf("receiver: %v", err)
		}
		var ev struct {
			Type string
			Data map[string]any
		}
		if err := json.Unmarshal(body, &ev); err != nil || ev.Type != jobs.EventBatchCompleted || ev.Data["status"] != string(jobs.BatchCompleted) ||
			ev.Data["id"] != "01a22b19-0000-7000-8000-000000000001" || ev.Data["finished_at"] != "2026-05-01T12:00:00Z" {
			t.Errorf("receiver got body %s (%v)", body, err)
		}
		mu.Lock()
		ids = append(ids, r.Header.Get(HeaderID))
		code := statuses[0]
		statuses = statuses[1:]
		mu.Unlock()
		w.WriteHeader(code)
		io.WriteString(w, "not now")
	}))
	defer srv.Close()
	repo := newWebhookRepo(srv.URL + "/hook")
	h := &Handler{Repo: repo, Client: srv.Client(), Timeout: 5 * time.Second}
	ctx := context.Background()

	err := h.Deliver(ctx, repo.delivery.ID, false)
	if err == nil || errors.Is(err, jobs.ErrNoRetry) {
		t.Fatalf("first attempt (500) = %v; want a retryable error", err)
	}
	if d := repo.delivery; d.Status != DeliveryPending || d.Attempts != 1 || d.LastStatus != 500 || d.LastError != "receiver answered HTTP 500: not now" {
		t.Fatalf("after 500: %+v", d)
	}
	if err := h.Deliver(ctx, repo.delivery.ID, false); err != nil {
		t.Fatalf("second attempt (200) = %v", err)
	}
	if d := repo.delivery; d.Status != DeliveryDelivered || d.Attempts != 2 || d.LastStatus != 200 || d.LastError != "" {
		t.Fatalf("after 200: %+v", d)
	}
	if len(ids) != 2 || ids[0] != repo.delivery.ID || ids[1] != ids[0] {
		t.Fatalf("webhook-id per attempt = %v; want the delivery id twice", ids)
	}
	// A duplicate task of a delivered delivery sends nothing.
	if err := h.Deliver(ctx, repo.delivery.ID, false); err != nil || len(ids) != 2 {
		t.Fatalf("duplicate task: %v, %d requests", err, len(ids))
	}
}

func TestWebhookDeliverLastAttempt(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.RedirectHandler("https://elsewhere.example/", http.StatusFound))
	defer srv.Close()
	repo := newWebhookRepo(srv.URL)
	client := srv.Client()
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	h := &Handler{Repo: repo, Client: client}
	err := h.Deliver(context.Background(), repo.delivery.ID, true)
	if !errors.Is(err, jobs.ErrNoRetry) {
		t.Fatalf("last attempt = %v; want SkipRetry", err)
	}
	if d := repo.delivery; d.Status != DeliveryFailed || d.Attempts != 1 || d.LastStatus != 302 ||
		!strings.Contains(d.LastError, "redirects are not followed") {
		t.Fatalf("after the last attempt: %+v", d)
	}
}

// Through the egress guard's client, a loopback receiver is refused at once
// and never reached; allowed by the policy, it is reached.
func TestWebhookDeliverEgress(t *testing.T) {
	t.Parallel()
	var reached int
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		reached++
		mu.Unlock()
	}))
	defer srv.Close()

	repo := newWebhookRepo(srv.URL + "/hook")
	deny := egress.New(egress.Config{Policy: egress.NewPolicy(nil)})
	h := &Handler{Repo: repo, Client: deny.HTTPClient(5 * time.Second)}
	err := h.Deliver(context.Background(), repo.delivery.ID, false)
	if !errors.Is(err, jobs.ErrNoRetry) {
		t.Fatalf("blocked attempt = %v; want SkipRetry", err)
	}
	if d := repo.delivery; d.Status != DeliveryFailed || d.Attempts != 1 || d.LastStatus != 0 ||
		!strings.Contains(d.LastError, "blocked by the egress policy") || !strings.Contains(d.LastError, "loopback") {
		t.Fatalf("after a blocked attempt: %+v", d)
	}

	repo = newWebhookRepo(srv.URL + "/hook")
	allow := egress.New(egress.Config{Policy: egress.NewPolicy([]netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")})})
	h = &Handler{Repo: repo, Client: allow.HTTPClient(5 * time.Second)}
	if err := h.Deliver(context.Background(), repo.delivery.ID, false); err != nil || repo.delivery.Status != DeliveryDelivered {
		t.Fatalf("allowed receiver: %v, %+v", err, repo.delivery)
	}
	if reached != 1 {
		t.Fatalf("receiver reached %d times, want 1 (only the allowed attempt)", reached)
	}
}

func TestWebhookConfigValidate(t *testing.T) {
	t.Parallel()
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []Config{{MaxRetry: -1, Timeout: time.Second}, {MaxRetry: 8, Timeout: 0}, {MaxRetry: 8, Timeout: time.Hour}} {
		if err := c.Validate(); err == nil {
			t.Errorf("%+v accepted", c)
		}
	}
}
