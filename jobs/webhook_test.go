package jobs

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

	"github.com/google/go-cmp/cmp"
	"github.com/hibiken/asynq"

	"github.com/snapq/snapq/egress"
)

// The reference vector of the Standard Webhooks specification.
func TestSignWebhookReferenceVector(t *testing.T) {
	t.Parallel()
	key, err := WebhookKey("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	if err != nil {
		t.Fatal(err)
	}
	got := SignWebhook(key, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, []byte(`{"test": 2432232314}`))
	if want := "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="; got != want {
		t.Fatalf("SignWebhook = %s, want %s", got, want)
	}
}

func TestSignWebhookVerify(t *testing.T) {
	t.Parallel()
	body := []byte(`{"test": 2432232314}`)
	key, _ := WebhookKey("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	now := time.Unix(1614265330, 0)
	h := http.Header{}
	h.Set(HeaderWebhookID, "msg_p5jXN8AQM9LWM0D4loKWxJek")
	h.Set(HeaderWebhookTimestamp, "1614265330")
	h.Set(HeaderWebhookSignature, "v1,bm9wZQ== "+SignWebhook(key, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, body))
	if err := VerifyWebhook(key, h, body, now, 5*time.Minute); err != nil {
		t.Fatalf("verify with the right key: %v", err)
	}
	other, _ := WebhookKey("another-secret-of-16+")
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
			if err := VerifyWebhook(tt.key, h, []byte(tt.body), tt.now, 5*time.Minute); !errors.Is(err, ErrWebhookSignature) {
				t.Fatalf("VerifyWebhook = %v, want ErrWebhookSignature", err)
			}
		})
	}
}

func TestSignWebhookKey(t *testing.T) {
	t.Parallel()
	if k, err := WebhookKey("plain-secret-1234567"); err != nil || string(k) != "plain-secret-1234567" {
		t.Errorf("raw secret: %q, %v", k, err)
	}
	if k, err := WebhookKey("whsec_aGVsbG8gd29ybGQgMTIzNA=="); err != nil || string(k) != "hello world 1234" {
		t.Errorf("whsec secret: %q, %v", k, err)
	}
	if _, err := WebhookKey("whsec_not*base64*at*all"); err == nil {
		t.Error("bad whsec secret accepted")
	}
}

func TestParseBatchRequestWebhook(t *testing.T) {
	t.Parallel()
	_, req, err := ParseBatchRequest([]byte(`{"urls": ["https://a.example/"],
		"webhook": {"url": "HTTPS://Hooks.Example/in?x=1#f", "secret": "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}}`), 0)
	if err != nil {
		t.Fatal(err)
	}
	want := &Webhook{URL: "https://hooks.example/in?x=1", Secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}
	if diff := cmp.Diff(want, req.BatchWebhook()); diff != "" {
		t.Errorf("webhook (-want +got):\n%s", diff)
	}
	if _, req, _ := ParseBatchRequest([]byte(`{"urls": ["https://a.example/"]}`), 0); req.BatchWebhook() != nil {
		t.Error("a batch without webhook has one")
	}

	long := strings.Repeat("s", MaxWebhookSecret+1)
	tests := []struct {
		name string
		hook string
		want []string
	}{
		{name: "empty object", hook: `{}`, want: []string{"webhook.url", "webhook.secret"}},
		{name: "bad scheme", hook: `{"url": "ftp://hooks.example/", "secret": "0123456789abcdef"}`, want: []string{"webhook.url"}},
		{name: "user info", hook: `{"url": "https://u:p@hooks.example/", "secret": "0123456789abcdef"}`, want: []string{"webhook.url"}},
		{name: "short secret", hook: `{"url": "https://hooks.example/", "secret": "0123456789abcde"}`, want: []string{"webhook.secret"}},
		{name: "long secret", hook: `{"url": "https://hooks.example/", "secret": "` + long + `"}`, want: []string{"webhook.secret"}},
		{name: "bad whsec", hook: `{"url": "https://hooks.example/", "secret": "whsec_%%%%%%%%%%%%%%%%"}`, want: []string{"webhook.secret"}},
		{name: "unknown key", hook: `{"url": "https://hooks.example/", "secret": "0123456789abcdef", "events": []}`, want: []string{"webhook.events"}},
		{name: "not an object", hook: `"https://hooks.example/"`, want: []string{"webhook"}},
		{name: "wrong type", hook: `{"url": 5, "secret": "0123456789abcdef"}`, want: []string{"webhook.url"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, _, err := ParseBatchRequest([]byte(`{"urls": ["https://a.example/"], "webhook": `+tt.hook+`}`), 0)
			if diff := cmp.Diff(tt.want, fields(t, err)); diff != "" {
				t.Errorf("bad fields (-want +got):\n%s", diff)
			}
		})
	}
}

// webhookRepo is an in-memory WebhookRepository plus GetBatch.
type webhookRepo struct {
	Repository
	mu       sync.Mutex
	batch    *Batch
	hook     *Webhook
	delivery WebhookDelivery
}

func (r *webhookRepo) GetBatch(context.Context, string) (*Batch, error) { return r.batch, nil }

func (r *webhookRepo) GetBatchWebhook(context.Context, string) (*Webhook, error) {
	if r.hook == nil {
		return nil, ErrNotFound
	}
	return r.hook, nil
}

func (r *webhookRepo) GetWebhookDelivery(_ context.Context, id string) (*WebhookDelivery, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if id != r.delivery.ID {
		return nil, ErrNotFound
	}
	d := r.delivery
	return &d, nil
}

func (r *webhookRepo) RecordWebhookAttempt(_ context.Context, id string, a WebhookAttempt) (bool, error) {
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
		batch: &Batch{ID: "01a22b19-0000-7000-8000-000000000001", Total: 2, Counts: Counts{Succeeded: 1, Failed: 1},
			Labels: map[string]string{"team": "web"}, CreatedAt: fin.Add(-time.Minute), FinishedAt: &fin},
		hook:     &Webhook{URL: url, Secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"},
		delivery: WebhookDelivery{ID: "01a22b19-0000-7000-8000-0000000000d1", BatchID: "01a22b19-0000-7000-8000-000000000001", Event: EventBatchCompleted, Status: DeliveryPending},
	}
}

func TestWebhookDeliver(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var ids []string
	statuses := []int{500, 200}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		key, _ := WebhookKey("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
		if err := VerifyWebhook(key, r.Header, body, time.Now(), 5*time.Minute); err != nil {
			t.Errorf("receiver: %v", err)
		}
		var ev struct {
			Type string
			Data map[string]any
		}
		if err := json.Unmarshal(body, &ev); err != nil || ev.Type != EventBatchCompleted || ev.Data["status"] != BatchCompleted ||
			ev.Data["id"] != "01a22b19-0000-7000-8000-000000000001" || ev.Data["finished_at"] != "2026-05-01T12:00:00Z" {
			t.Errorf("receiver got body %s (%v)", body, err)
		}
		mu.Lock()
		ids = append(ids, r.Header.Get(HeaderWebhookID))
		code := statuses[0]
		statuses = statuses[1:]
		mu.Unlock()
		w.WriteHeader(code)
		io.WriteString(w, "not now")
	}))
	defer srv.Close()
	repo := newWebhookRepo(srv.URL + "/hook")
	h := &WebhookHandler{Repo: repo, Client: srv.Client(), Timeout: 5 * time.Second}
	ctx := context.Background()

	err := h.Deliver(ctx, repo.delivery.ID, false)
	if err == nil || errors.Is(err, asynq.SkipRetry) {
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
	h := &WebhookHandler{Repo: repo, Client: client}
	err := h.Deliver(context.Background(), repo.delivery.ID, true)
	if !errors.Is(err, asynq.SkipRetry) {
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
	h := &WebhookHandler{Repo: repo, Client: deny.HTTPClient(5 * time.Second)}
	err := h.Deliver(context.Background(), repo.delivery.ID, false)
	if !errors.Is(err, asynq.SkipRetry) {
		t.Fatalf("blocked attempt = %v; want SkipRetry", err)
	}
	if d := repo.delivery; d.Status != DeliveryFailed || d.Attempts != 1 || d.LastStatus != 0 ||
		!strings.Contains(d.LastError, "blocked by the egress policy") || !strings.Contains(d.LastError, "loopback") {
		t.Fatalf("after a blocked attempt: %+v", d)
	}

	repo = newWebhookRepo(srv.URL + "/hook")
	allow := egress.New(egress.Config{Policy: egress.NewPolicy([]netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")})})
	h = &WebhookHandler{Repo: repo, Client: allow.HTTPClient(5 * time.Second)}
	if err := h.Deliver(context.Background(), repo.delivery.ID, false); err != nil || repo.delivery.Status != DeliveryDelivered {
		t.Fatalf("allowed receiver: %v, %+v", err, repo.delivery)
	}
	if reached != 1 {
		t.Fatalf("receiver reached %d times, want 1 (only the allowed attempt)", reached)
	}
}

func TestWebhookRetryDelay(t *testing.T) {
	t.Parallel()
	f := TaskRetryDelay(time.Second)
	hook, capture := asynq.NewTask(KindWebhook, nil), asynq.NewTask(KindCapture, nil)
	if d := f(20, nil, hook); d < 10*time.Minute || d > 12*time.Minute {
		t.Errorf("webhook delay after 20 retries = %s, want about 10m", d)
	}
	if d := f(20, nil, capture); d < 5*time.Minute || d > 6*time.Minute {
		t.Errorf("capture delay after 20 retries = %s, want about 5m", d)
	}
	if d := f(0, nil, hook); d < time.Second || d > 1200*time.Millisecond {
		t.Errorf("first webhook delay = %s, want about 1s", d)
	}
}

func TestWebhookConfigValidate(t *testing.T) {
	t.Parallel()
	if err := DefaultWebhookConfig().Validate(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []WebhookConfig{{MaxRetry: -1, Timeout: time.Second}, {MaxRetry: 8, Timeout: 0}, {MaxRetry: 8, Timeout: time.Hour}} {
		if err := c.Validate(); err == nil {
			t.Errorf("%+v accepted", c)
		}
	}
}
