package e2e

import (
	"context"
	"encoding/json"
	"io"
	"mime"
	"mime/quotedprintable"
	"net"
	"net/http"
	"net/http/httptest"
	netmail "net/mail"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/snapq/snapq/internal/fixtures"
	"github.com/snapq/snapq/webhook"
)

// chatHook records every POST to a fake chat or webhook receiver, by path.
type chatHook struct {
	mu   sync.Mutex
	got  map[string][]hookReq
	code map[string]int // answer per path (default 200)
}

type hookReq struct {
	Header http.Header
	Body   []byte
}

func (h *chatHook) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	h.mu.Lock()
	h.got[r.URL.Path] = append(h.got[r.URL.Path], hookReq{Header: r.Header.Clone(), Body: body})
	h.mu.Unlock()
	switch r.URL.Path {
	case "/discord", "/discord-big":
		w.WriteHeader(http.StatusNoContent) // Discord's answer without ?wait=true
	case "/teams":
		w.WriteHeader(http.StatusAccepted) // a Teams workflow's answer
	default:
		_, _ = io.WriteString(w, "ok") // Slack's
	}
}

func (h *chatHook) list(path string) []hookReq {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]hookReq(nil), h.got[path]...)
}

// notifResp is a run's notification as GET /v1/runs/:id shows it.
type notifResp struct {
	ID        string `json:"id"`
	Channel   string `json:"channel"`
	Kind      string `json:"kind"`
	Reason    string `json:"reason"`
	Status    string `json:"status"`
	Attempts  int    `json:"attempts"`
	LastError string `json:"last_error"`
}

func (s *stack) runNotifications(id string) []notifResp {
	s.t.Helper()
	var r struct {
		Notifications []notifResp `json:"notifications"`
	}
	if code := s.do("GET", "/v1/runs/"+id, nil, &r); code != http.StatusOK {
		s.t.Fatalf("GET run %s: %d", id, code)
	}
	return r.Notifications
}

// waitNotifications polls the run until every notification is delivered or
// failed, and returns them.
func (s *stack) waitNotifications(id string, n int, timeout time.Duration) []notifResp {
	s.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ns := s.runNotifications(id)
		done := len(ns) == n
		for _, x := range ns {
			done = done && x.Status != "pending"
		}
		if done {
			return ns
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("run %s: notifications not settled after %s: %+v", id, timeout, ns)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// stackDB is the stack's own database URL (its schema).
func (s *stack) stackDB() string {
	for _, kv := range s.procs.Env {
		if v, ok := strings.CutPrefix(kv, "SNAPQ_DATABASE_URL="); ok {
			return v
		}
	}
	s.t.Fatal("the stack has no SNAPQ_DATABASE_URL")
	return ""
}

// Notifications end to end: a suite with Slack, Discord, Teams, email and
// webhook channels, each with its own filter. Three runs: the first needs
// review (new baselines), the second fails (a changed heading), the third
// passes again (recovered). Every receiver gets exactly the messages its
// filter lets through, in its provider's shape, with the diff thumbnail and
// run links; a channel whose receiver is down at first gets its message
// after retries, and the run shows the attempts. Channel urls are never
// shown and are stored sealed.
func TestNotifications(t *testing.T) {
	t.Parallel()
	mail, err := fixtures.StartSMTP(nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(mail.Close)
	s := startStack(t, "SNAPQ_SECRET_KEY="+secretKey(t), "SNAPQ_SMTP_ADDR="+mail.Addr, "SNAPQ_SMTP_FROM=snapq@example.test",
		"SNAPQ_SMTP_ALLOWED_DOMAINS=example.test")
	hooks := &chatHook{got: map[string][]hookReq{}}
	recv := httptest.NewServer(hooks)
	t.Cleanup(recv.Close)
	// The flaky receiver: a port nothing listens on until later.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	flakyAddr := ln.Addr().String()
	ln.Close()
	site := httptest.NewServer(&changingSite{color: "#223344", blocks: 1})
	t.Cleanup(site.Close)

	// Validation names each bad field.
	var bad map[string]any
	code := s.do("POST", "/v1/suites", map[string]any{"name": "bad", "targets": []map[string]any{{"url": site.URL + "/page"}},
		"notify": []map[string]any{{"kind": "pager", "url": recv.URL}, {"kind": "slack", "url": "not a url"},
			{"kind": "slack", "url": recv.URL + "/slack", "on": []string{"sometimes"}}}}, &bad)
	if raw, _ := json.Marshal(bad); code != http.StatusBadRequest && code != http.StatusUnprocessableEntity ||
		!strings.Contains(string(raw), "notify[0].kind") || !strings.Contains(string(raw), "notify[1].url") ||
		!strings.Contains(string(raw), "notify[2].on[0]") {
		t.Fatalf("bad channels: %d %s", code, raw)
	}

	const hookSecret = "notify-signing-secret-0123456789"
	channels := []map[string]any{
		{"kind": "slack", "url": recv.URL + "/slack", "on": []string{"failed"}},
		{"kind": "discord", "url": recv.URL + "/discord", "on": []string{"failed", "recovered"}},
		{"kind": "teams", "url": recv.URL + "/teams", "on": []string{"needs_review"}},
		{"kind": "email", "to": []string{"ops@example.test"}, "on": []string{"failed"}},
		{"kind": "webhook", "url": recv.URL + "/hook", "secret": hookSecret, "on": []string{"recovered"}},
		{"kind": "slack", "url": "http://" + flakyAddr + "/flaky", "on": []string{"failed"}},
		{"kind": "discord", "url": recv.URL + "/discord-big", "on": []string{"failed"}, "min_ratio": 0.9},
	}
	var suite map[string]any
	if code := s.do("POST", "/v1/suites", map[string]any{"name": "alarm",
		"targets": []map[string]any{{"url": site.URL + "/page", "name": "home"}}, "notify": channels}, &suite); code != http.StatusCreated {
		t.Fatalf("create suite: %d %v", code, suite)
	}
	raw, _ := json.Marshal(suite)
	if strings.Contains(string(raw), recv.URL) || strings.Contains(string(raw), flakyAddr) || strings.Contains(string(raw), hookSecret) {
		t.Fatalf("the suite shows a channel's url or secret: %s", raw)
	}
	id := suite["id"].(string)
	conn, err := pgx.Connect(context.Background(), s.stackDB())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var notify, sealed []byte
	if err := conn.QueryRow(context.Background(), `SELECT notify::text::bytea, notify_sealed FROM suites WHERE id = $1`, id).Scan(&notify, &sealed); err != nil {
		t.Fatal(err)
	}
	if len(sealed) == 0 || strings.Contains(string(notify)+string(sealed), recv.URL) || strings.Contains(string(sealed), hookSecret) {
		t.Fatalf("stored channels are not sealed: notify %s, sealed %d bytes", notify, len(sealed))
	}

	// Run 1: no baselines yet, so it needs review: Teams only.
	r1 := s.waitRun(s.startRun(id), 2*time.Minute)
	if r1.Status != "needs_review" {
		t.Fatalf("run 1: %s", r1.Status)
	}
	n1 := s.waitNotifications(r1.ID, 1, 30*time.Second)
	if n1[0].Kind != "teams" || n1[0].Reason != "needs_review" || n1[0].Status != "delivered" || n1[0].Attempts != 1 {
		t.Fatalf("run 1 notifications: %+v", n1)
	}
	if code := s.do("POST", "/v1/runs/"+r1.ID+"/approve", map[string]any{"all": true}, nil); code != http.StatusOK {
		t.Fatalf("approve: %d", code)
	}

	// Run 2: the heading changed: failed. Slack, Discord, email and the
	// flaky Slack; not Teams, the webhook, nor the Discord with min_ratio 0.9.
	site.Config.Handler.(*changingSite).set("#aa2211", 1)
	start := time.Now()
	r2 := s.waitRun(s.startRun(id), 2*time.Minute)
	if r2.Status != "failed" {
		t.Fatalf("run 2: %s %s", r2.Status, statuses(r2))
	}
	// The flaky receiver stays down until its first attempt failed (recorded
	// as pending with an error), then comes up; the retries deliver the
	// message, so it shows at least 2 attempts.
	flakyID := suite["notify"].([]any)[5].(map[string]any)["id"].(string)
	deadline := time.Now().Add(30 * time.Second)
	for {
		var fn *notifResp
		for _, n := range s.runNotifications(r2.ID) {
			if n.Channel == flakyID {
				fn = &n
			}
		}
		if fn != nil && fn.Attempts >= 1 {
			if fn.Status != "pending" || fn.LastError == "" {
				t.Fatalf("the flaky channel's failed attempt: %+v", *fn)
			}
			t.Logf("while the receiver is down: %+v", *fn)
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no attempt at the flaky channel in 30 s")
		}
		time.Sleep(200 * time.Millisecond)
	}
	if ln, err = net.Listen("tcp", flakyAddr); err != nil {
		t.Fatalf("bring the flaky receiver up on %s: %v", flakyAddr, err)
	}
	flaky := &httptest.Server{Listener: ln, Config: &http.Server{Handler: hooks}}
	flaky.Start()
	t.Cleanup(flaky.Close)
	n2 := s.waitNotifications(r2.ID, 4, 90*time.Second)
	var fn notifResp
	kinds := map[string]int{}
	for _, n := range n2 {
		if n.Status != "delivered" || n.Reason != "failed" {
			t.Fatalf("run 2 notification %+v", n)
		}
		kinds[n.Kind]++
		if n.Channel == flakyID {
			fn = n
		}
	}
	if kinds["slack"] != 2 || kinds["discord"] != 1 || kinds["email"] != 1 || fn.Attempts < 2 || fn.LastError != "" {
		t.Fatalf("run 2 notifications: %+v", n2)
	}
	t.Logf("the flaky receiver got its message after %d attempts, %s after the run started", fn.Attempts, time.Since(start).Round(time.Second))

	// Run 3: back to the approved heading: passed after a failure: recovered.
	site.Config.Handler.(*changingSite).set("#223344", 1)
	r3 := s.waitRun(s.startRun(id), 2*time.Minute)
	if r3.Status != "passed" {
		t.Fatalf("run 3: %s %s", r3.Status, statuses(r3))
	}
	n3 := s.waitNotifications(r3.ID, 2, 30*time.Second)
	for _, n := range n3 {
		if n.Status != "delivered" || n.Reason != "recovered" || (n.Kind != "discord" && n.Kind != "webhook") {
			t.Fatalf("run 3 notifications: %+v", n3)
		}
	}

	// Each receiver got exactly what its filter let through.
	for path, want := range map[string]int{"/slack": 1, "/discord": 2, "/teams": 1, "/hook": 1, "/flaky": 1, "/discord-big": 0} {
		if got := len(hooks.list(path)); got != want {
			t.Errorf("%s received %d messages, want %d", path, got, want)
		}
	}
	if got := len(mail.Messages()); got != 1 {
		t.Errorf("the SMTP server received %d messages, want 1", got)
	}
	if t.Failed() {
		t.FailNow()
	}

	// Shapes and links.
	runLink := s.api + "/#/runs/" + r2.ID
	var slack struct {
		Text   string           `json:"text"`
		Blocks []map[string]any `json:"blocks"`
	}
	sraw := hooks.list("/slack")[0].Body
	if err := json.Unmarshal(sraw, &slack); err != nil || !strings.Contains(slack.Text, "alarm") || len(slack.Blocks) < 3 ||
		!strings.Contains(string(sraw), "1 changed") ||
		!strings.Contains(string(sraw), s.api+"/v1/artifacts/") || !strings.Contains(string(sraw), "/thumbnail|home 1280x720") ||
		!strings.Contains(string(sraw), runLink) {
		t.Fatalf("slack message: %s", sraw)
	}
	thumb := string(sraw)[strings.Index(string(sraw), s.api+"/v1/artifacts/"):]
	thumb = thumb[:strings.Index(thumb, "|")]
	resp, err := http.Get(thumb)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "image/jpeg" {
		t.Fatalf("the message's thumbnail link %s: %d %s", thumb, resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	var discord struct {
		Content string `json:"content"`
		Embeds  []struct {
			Title, URL, Description string
		} `json:"embeds"`
	}
	draw := hooks.list("/discord")[0].Body
	if err := json.Unmarshal(draw, &discord); err != nil || discord.Content == "" || len(discord.Embeds) != 1 ||
		discord.Embeds[0].URL != runLink || !strings.Contains(discord.Embeds[0].Description, "/thumbnail)") {
		t.Fatalf("discord message: %s", draw)
	}
	var teams struct {
		Type        string `json:"type"`
		Attachments []struct {
			ContentType string         `json:"contentType"`
			Content     map[string]any `json:"content"`
		} `json:"attachments"`
	}
	traw := hooks.list("/teams")[0].Body
	if err := json.Unmarshal(traw, &teams); err != nil || teams.Type != "message" || len(teams.Attachments) != 1 ||
		teams.Attachments[0].ContentType != "application/vnd.microsoft.card.adaptive" || teams.Attachments[0].Content["type"] != "AdaptiveCard" ||
		!strings.Contains(string(traw), s.api+"/#/runs/"+r1.ID) {
		t.Fatalf("teams message: %s", traw)
	}
	m := mail.Messages()[0]
	msg, err := netmail.ReadMessage(strings.NewReader(m.Data))
	if err != nil {
		t.Fatalf("mail does not parse: %v\n%s", err, m.Data)
	}
	subject, _ := new(mime.WordDecoder).DecodeHeader(msg.Header.Get("Subject"))
	text, _ := io.ReadAll(quotedprintable.NewReader(msg.Body))
	if m.From != "snapq@example.test" || len(m.To) != 1 || m.To[0] != "ops@example.test" ||
		!strings.HasPrefix(subject, "snapq · alarm: failed") || !strings.Contains(string(text), "Review the run: "+runLink) ||
		!strings.Contains(string(text), "/thumbnail") {
		t.Fatalf("mail: subject %q, text:\n%s", subject, text)
	}
	h := hooks.list("/hook")[0]
	if err := webhook.Verify([]byte(hookSecret), h.Header, h.Body, time.Now(), 5*time.Minute); err != nil {
		t.Fatalf("webhook channel signature: %v", err)
	}
	var ev struct {
		Type string `json:"type"`
		Data struct {
			Reason string `json:"reason"`
			RunID  string `json:"run_id"`
		} `json:"data"`
	}
	if err := json.Unmarshal(h.Body, &ev); err != nil || ev.Type != "run.notification" || ev.Data.Reason != "recovered" || ev.Data.RunID != r3.ID {
		t.Fatalf("webhook event: %s", h.Body)
	}
}
