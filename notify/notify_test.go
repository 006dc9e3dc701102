package notify

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/snapq/snapq/internal/fixtures"
	"github.com/snapq/snapq/jobs"
	"github.com/snapq/snapq/regression"
)

func sampleMessage() Message {
	s := &regression.Suite{ID: "s1", Name: "marketing"}
	cs := []*regression.Comparison{
		{Target: "home", Viewport: "1280x720", Segment: 1, Status: regression.ComparePassed},
		{Target: "pricing", Viewport: "1280x720", Segment: 2, Status: regression.CompareFailed, DiffRatio: 0.02,
			DiffArtifact: &jobs.Artifact{ID: "d1"}},
		{Target: "about", Viewport: "390x844", Segment: 1, Status: regression.CompareFailed, DiffRatio: 0.3,
			DiffArtifact: &jobs.Artifact{ID: "d2"}},
		{Target: "blog", Viewport: "1280x720", Segment: 1, Status: regression.CompareNew, CurrentArtifact: &jobs.Artifact{ID: "c3"}},
	}
	r := &regression.Run{ID: "r1", SuiteID: "s1", Status: regression.RunFailed, Comparisons: cs,
		Counts: regression.RunCounts{Total: 4, Passed: 1, Failed: 2, New: 1}}
	return NewMessage(s, r, regression.NotifyFailed, "https://snapq.example.com/")
}

// The message lists the most changed first, links each to its diff's
// thumbnail and the run to the dashboard.
func TestNewMessage(t *testing.T) {
	t.Parallel()
	m := sampleMessage()
	if m.Summary != "2 changed, 1 new, 1 passed" || m.RunURL != "https://snapq.example.com/#/runs/r1" {
		t.Fatalf("summary %q, run url %q", m.Summary, m.RunURL)
	}
	if len(m.Changes) != 3 || m.Changes[0].Target != "about" || m.Changes[1].Target != "pricing" || m.Changes[2].Target != "blog" {
		t.Fatalf("changes %+v", m.Changes)
	}
	if m.Changes[0].ThumbnailURL != "https://snapq.example.com/v1/artifacts/d2/thumbnail" ||
		m.Changes[2].ThumbnailURL != "https://snapq.example.com/v1/artifacts/c3/thumbnail" {
		t.Fatalf("thumbnail urls %+v", m.Changes)
	}
	if got := m.Changes[1].Label() + ": " + m.Changes[1].Detail(); got != "pricing 1280x720 #2: 2.00% changed" {
		t.Fatalf("label %q", got)
	}
	if !strings.Contains(m.Text(), "about 390x844: 30.00% changed https://snapq.example.com/v1/artifacts/d2/thumbnail") {
		t.Fatalf("text:\n%s", m.Text())
	}
}

// Each provider's payload has the documented top-level shape.
func TestPayloadShapes(t *testing.T) {
	t.Parallel()
	m := sampleMessage()
	raw, _ := marshal(m.Slack())
	var slack struct {
		Text   string `json:"text"`
		Blocks []struct {
			Type string `json:"type"`
		} `json:"blocks"`
	}
	if err := json.Unmarshal(raw, &slack); err != nil || slack.Text == "" || len(slack.Blocks) != 4 || slack.Blocks[0].Type != "header" ||
		!strings.Contains(string(raw), "<https://snapq.example.com/v1/artifacts/d2/thumbnail|about 390x844>") {
		t.Fatalf("slack: %s", raw)
	}
	raw, _ = json.Marshal(m.Discord())
	var discord struct {
		Content string `json:"content"`
		Embeds  []struct {
			Title, URL, Description string
			Color                   int
			Fields                  []struct{ Name, Value string }
		} `json:"embeds"`
	}
	if err := json.Unmarshal(raw, &discord); err != nil || discord.Content == "" || len(discord.Embeds) != 1 ||
		discord.Embeds[0].URL != m.RunURL || !strings.Contains(discord.Embeds[0].Description, "[about 390x844](https://snapq.example.com/v1/artifacts/d2/thumbnail)") {
		t.Fatalf("discord: %s", raw)
	}
	raw, _ = json.Marshal(m.Teams())
	var teams struct {
		Type        string `json:"type"`
		Attachments []struct {
			ContentType string `json:"contentType"`
			Content     struct {
				Type    string           `json:"type"`
				Version string           `json:"version"`
				Body    []map[string]any `json:"body"`
				Actions []map[string]any `json:"actions"`
			} `json:"content"`
		} `json:"attachments"`
	}
	if err := json.Unmarshal(raw, &teams); err != nil || teams.Type != "message" || len(teams.Attachments) != 1 ||
		teams.Attachments[0].ContentType != "application/vnd.microsoft.card.adaptive" || teams.Attachments[0].Content.Type != "AdaptiveCard" ||
		teams.Attachments[0].Content.Actions[0]["url"] != m.RunURL {
		t.Fatalf("teams: %s", raw)
	}
}

// HTTP answers: 2xx delivers, 4xx is permanent, 5xx and 429 retry.
func TestPostJSONClassifies(t *testing.T) {
	t.Parallel()
	code := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.WriteHeader(code)
		_, _ = io.WriteString(w, "invalid_payload")
	}))
	defer srv.Close()
	for _, tc := range []struct {
		code            int
		wantErr, wantPe bool
	}{{200, false, false}, {204, false, false}, {400, true, true}, {404, true, true}, {429, true, false}, {503, true, false}} {
		code = tc.code
		err := postJSON(context.Background(), srv.Client(), srv.URL, []byte(`{}`), nil)
		if (err != nil) != tc.wantErr || isPermanent(err) != tc.wantPe {
			t.Errorf("HTTP %d: err %v, permanent %v", tc.code, err, isPermanent(err))
		}
	}
}

func selfSigned(t *testing.T) (*tls.Config, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}}, pool
}

// Email goes over STARTTLS when the server offers it (the certificate
// verified), authenticates, and carries the subject and text; starttls mode
// refuses a server without it.
func TestMailerSTARTTLS(t *testing.T) {
	t.Parallel()
	srvTLS, pool := selfSigned(t)
	srv, err := fixtures.StartSMTP(srvTLS)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	m := sampleMessage()
	ml := &Mailer{Config: SMTPConfig{Addr: srv.Addr, From: "snapq@example.com", Username: "u", Password: "p", RootCAs: pool}}
	if err := ml.Send(context.Background(), []string{"ops@example.com", "qa@example.com"}, m.Subject(), m.Text()); err != nil {
		t.Fatal(err)
	}
	got := srv.Messages()
	if len(got) != 1 || !got[0].TLS || got[0].Auth == "" || got[0].From != "snapq@example.com" || len(got[0].To) != 2 {
		t.Fatalf("mail %+v", got)
	}
	if !strings.Contains(got[0].Data, "Subject: =?utf-8?q?snapq_=C2=B7_marketing:_failed") ||
		!strings.Contains(got[0].Data, "Content-Type: text/plain; charset=utf-8") || !strings.Contains(got[0].Data, "Review the run") {
		t.Fatalf("data:\n%s", got[0].Data)
	}

	plain, err := fixtures.StartSMTP(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	ml = &Mailer{Config: SMTPConfig{Addr: plain.Addr, From: "snapq@example.com", TLS: SMTPStartTLS}}
	if err := ml.Send(context.Background(), []string{"ops@example.com"}, "s", "t"); !isPermanent(err) || len(plain.Messages()) != 0 {
		t.Fatalf("starttls required against a plain server: %v", err)
	}
}

// A suite's name is attacker-worded: CR/LF in it cannot add a header to the
// mail; the subject keeps the text on one line.
func TestMailBodyHeaderInjection(t *testing.T) {
	t.Parallel()
	subject := "snapq · site\r\nBcc: victim@evil.test\r\nX-Injected: 1: failed"
	raw := mailBody("snapq@example.test", []string{"ops@example.test"}, subject, "body\nline", time.Now())
	head, _, ok := strings.Cut(string(raw), "\r\n\r\n")
	if !ok {
		t.Fatalf("no header/body boundary:\n%s", raw)
	}
	for _, line := range strings.Split(head, "\r\n") {
		name, _, _ := strings.Cut(line, ":")
		switch name {
		case "From", "To", "Subject", "Date", "Message-ID", "MIME-Version", "Content-Type", "Content-Transfer-Encoding":
		default:
			t.Errorf("unexpected header line %q", line)
		}
	}
	if strings.ContainsAny(strings.ReplaceAll(head, "\r\n", ""), "\r\n") {
		t.Errorf("a bare CR or LF in the header:\n%q", head)
	}
}
