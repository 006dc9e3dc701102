package e2e

import (
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"net/http/httptest"
	netmail "net/mail"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/snapq/snapq/internal/fixtures"
)

// Email is bounded: a recipient whose domain is off the operator's list
// (SNAPQ_SMTP_ALLOWED_DOMAINS) is refused at the API with the field named;
// a vcs api_url over plain http to a remote host is refused; a failing run
// after a failing one notifies only the channels that repeat; the suite's
// mail budget (SNAPQ_SMTP_MAX_PER_SUITE) fails the mail past it with
// rate_limited; and a suite name with CR/LF adds no header to the mail.
func TestNotifyMailBounds(t *testing.T) {
	t.Parallel()
	mail, err := fixtures.StartSMTP(nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(mail.Close)
	s := startStack(t, "SNAPQ_SECRET_KEY="+secretKey(t), "SNAPQ_SMTP_ADDR="+mail.Addr, "SNAPQ_SMTP_FROM=snapq@example.test",
		"SNAPQ_SMTP_ALLOWED_DOMAINS=example.test", "SNAPQ_SMTP_MAX_PER_SUITE=1")
	hooks := &chatHook{got: map[string][]hookReq{}}
	recv := httptest.NewServer(hooks)
	t.Cleanup(recv.Close)
	site := httptest.NewServer(&changingSite{color: "#223344", blocks: 1})
	t.Cleanup(site.Close)

	var bad errResp
	code := s.do("POST", "/v1/suites", map[string]any{"name": "relay", "targets": []map[string]any{{"url": site.URL + "/page"}},
		"notify": []map[string]any{{"kind": "email", "to": []string{"ops@example.test", "anyone@elsewhere.test"}}}}, &bad)
	if code != http.StatusBadRequest || bad.Error.Code != "recipient_not_allowed" || bad.Error.Field != "notify[0].to[1]" {
		t.Fatalf("a recipient off the allowlist: %d %+v", code, bad.Error)
	}
	bad = errResp{}
	code = s.do("POST", "/v1/suites", map[string]any{"name": "clear", "targets": []map[string]any{{"url": site.URL + "/page"}},
		"vcs": map[string]any{"provider": "github", "api_url": "http://ghe.example.test/api/v3", "repo": "a/b", "token": "t"}}, &bad)
	if code != http.StatusBadRequest || bad.Error.Field != "vcs.api_url" {
		t.Fatalf("a plain-http api_url to a remote host: %d %+v", code, bad.Error)
	}

	const name = "relay\r\nBcc: victim@elsewhere.test"
	var suite map[string]any
	if code := s.do("POST", "/v1/suites", map[string]any{"name": name,
		"targets": []map[string]any{{"url": site.URL + "/page", "name": "home"}},
		"notify": []map[string]any{
			{"kind": "email", "to": []string{"ops@example.test"}, "repeat": true},
			{"kind": "slack", "url": recv.URL + "/once"},
			{"kind": "slack", "url": recv.URL + "/repeat", "repeat": true},
		}}, &suite); code != http.StatusCreated {
		t.Fatalf("create suite: %d %v", code, suite)
	}
	chans := suite["notify"].([]any)
	if chans[0].(map[string]any)["repeat"] != true || chans[1].(map[string]any)["repeat"] != nil {
		t.Fatalf("channels as shown: %v", chans)
	}
	id := suite["id"].(string)
	// Run 1: no baselines: needs review, after no run: every channel hears.
	r1 := s.waitRun(s.startRun(id), 2*time.Minute)
	if n := s.waitNotifications(r1.ID, 3, time.Minute); len(n) != 3 || n[0].Status != "delivered" || n[1].Status != "delivered" || n[2].Status != "delivered" {
		t.Fatalf("run 1 (%s) notifications: %+v", r1.Status, n)
	}
	// Run 2: needs review again (nobody approved): a repeat. The repeating
	// Slack hears; the other does not; the repeating email is over the
	// suite's budget of 1 per hour.
	r2 := s.waitRun(s.startRun(id), 2*time.Minute)
	n2 := s.waitNotifications(r2.ID, 2, time.Minute)
	kinds := map[string]notifResp{}
	for _, n := range n2 {
		kinds[n.Kind] = n
	}
	if e := kinds["email"]; e.Status != "failed" || !strings.Contains(e.LastError, "rate_limited") ||
		!strings.Contains(e.LastError, "SNAPQ_SMTP_MAX_PER_SUITE") {
		t.Fatalf("run 2 (%s): the email over the budget: %+v", r2.Status, n2)
	}
	if sl := kinds["slack"]; sl.Status != "delivered" {
		t.Fatalf("run 2: the repeating slack channel: %+v", n2)
	}
	if got := [2]int{len(hooks.list("/once")), len(hooks.list("/repeat"))}; got != [2]int{1, 2} {
		t.Fatalf("slack messages (transitions only, repeating): %v, want [1 2]", got)
	}
	msgs := mail.Messages()
	if len(msgs) != 1 || len(msgs[0].To) != 1 || msgs[0].To[0] != "ops@example.test" {
		t.Fatalf("the SMTP server got %d messages: %+v", len(msgs), msgs)
	}
	msg, err := netmail.ReadMessage(strings.NewReader(msgs[0].Data))
	if err != nil {
		t.Fatalf("mail does not parse: %v\n%s", err, msgs[0].Data)
	}
	if bcc := msg.Header.Get("Bcc"); bcc != "" {
		t.Fatalf("the suite's name injected a Bcc header: %q", bcc)
	}
	subject, _ := new(mime.WordDecoder).DecodeHeader(msg.Header.Get("Subject"))
	if !strings.Contains(subject, "relay  Bcc: victim@elsewhere.test") || strings.ContainsAny(subject, "\r\n") {
		t.Fatalf("subject %q: the name's text, on one line", subject)
	}
}

// gatedHook answers 500 until opened, then 200, and records every body.
type gatedHook struct {
	mu     sync.Mutex
	open   bool
	bodies [][]byte
}

func (h *gatedHook) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	h.mu.Lock()
	defer h.mu.Unlock()
	h.bodies = append(h.bodies, body)
	if !h.open {
		w.WriteHeader(http.StatusInternalServerError)
		return
	}
	w.WriteHeader(http.StatusAccepted)
}

func (h *gatedHook) setOpen() {
	h.mu.Lock()
	h.open = true
	h.mu.Unlock()
}

func (h *gatedHook) last() []byte {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.bodies[len(h.bodies)-1]
}

// A failure alarm whose first delivery failed (the receiver answered 500)
// and that is retried after a human approved the run still says failed: a
// notification's message is fixed when it is decided.
func TestNotifyRetryKeepsMessage(t *testing.T) {
	t.Parallel()
	s := sharedStack(t)
	hook := &gatedHook{}
	recv := httptest.NewServer(hook)
	t.Cleanup(recv.Close)
	site := httptest.NewServer(&changingSite{color: "#223344", blocks: 1})
	t.Cleanup(site.Close)
	var suite map[string]any
	if code := s.do("POST", "/v1/suites", map[string]any{"name": "keep",
		"targets": []map[string]any{{"url": site.URL + "/page", "name": "home"}},
		"notify":  []map[string]any{{"kind": "teams", "url": recv.URL + "/teams", "on": []string{"failed"}}}}, &suite); code != http.StatusCreated {
		t.Fatalf("create suite: %d %v", code, suite)
	}
	id := suite["id"].(string)
	r1 := s.waitRun(s.startRun(id), 2*time.Minute)
	s.approveAll(r1.ID)
	site.Config.Handler.(*changingSite).set("#aa2211", 1)
	r2 := s.waitRun(s.startRun(id), 2*time.Minute)
	if r2.Status != "failed" {
		t.Fatalf("run 2: %s %s", r2.Status, statuses(r2))
	}
	deadline := time.Now().Add(time.Minute)
	for {
		ns := s.runNotifications(r2.ID)
		if len(ns) == 1 && ns[0].Attempts >= 1 {
			if ns[0].Status != "pending" {
				t.Fatalf("after the receiver's 500: %+v", ns[0])
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no failed attempt in a minute: %+v", ns)
		}
		time.Sleep(200 * time.Millisecond)
	}
	s.approveAll(r2.ID)
	if r := s.waitRun(r2.ID, time.Minute); r.Status != "approved" {
		t.Fatalf("run 2 after approval: %s", r.Status)
	}
	hook.setOpen()
	if n := s.waitNotifications(r2.ID, 1, 2*time.Minute); n[0].Status != "delivered" || n[0].Attempts < 2 {
		t.Fatalf("notification: %+v", n)
	}
	var card struct {
		Attachments []struct {
			Content struct {
				Body []struct {
					Text string `json:"text"`
				} `json:"body"`
			} `json:"content"`
		} `json:"attachments"`
	}
	body := hook.last()
	if err := json.Unmarshal(body, &card); err != nil || len(card.Attachments) != 1 || len(card.Attachments[0].Content.Body) == 0 {
		t.Fatalf("teams message: %v %s", err, body)
	}
	if title := card.Attachments[0].Content.Body[0].Text; title != "snapq · keep: failed" || strings.Contains(string(body), "approved") {
		t.Fatalf("the delivered alarm says %q; want the decided failure, not the approval:\n%s", title, body)
	}
}
