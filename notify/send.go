package notify

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/quotedprintable"
	"net"
	"net/http"
	"net/smtp"
	"net/textproto"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/snapq/snapq/egress"
	"github.com/snapq/snapq/jobs"
	"github.com/snapq/snapq/regression"
	"github.com/snapq/snapq/webhook"
)

// permanentError marks a failure a retry cannot fix: the egress policy
// refused the address, the receiver rejected the request (a 4xx other than
// 408 and 429), the SMTP server refused for good (5xx), or email is not
// configured.
type permanentError struct{ error }

func (e permanentError) Unwrap() error { return e.error }

func permanent(err error) error { return permanentError{err} }

// isPermanent reports whether a retry cannot fix err.
func isPermanent(err error) bool {
	var p permanentError
	return errors.As(err, &p)
}

// HTTPDoer sends chat and webhook requests: the worker's egress-guarded
// client (egress.Proxy.HTTPClient).
type HTTPDoer interface {
	Do(req *http.Request) (*http.Response, error)
}

// postJSON sends body to target and returns nil only for a 2xx answer.
func postJSON(ctx context.Context, hc HTTPDoer, target string, body []byte, header http.Header) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		return permanent(fmt.Errorf("build request: %w", err))
	}
	for k, v := range header {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "snapq-notify/1")
	resp, err := hc.Do(req)
	if err != nil {
		var de *egress.DialError
		if errors.As(err, &de) && errors.Is(err, egress.ErrBlocked) {
			return permanent(fmt.Errorf("blocked by the egress policy: %s (SNAPQ_EGRESS_ALLOW_CIDRS can allow it)", de.Reason))
		}
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // the URL is a secret: keep it out of the message
		}
		return fmt.Errorf("send: %w", err)
	}
	defer resp.Body.Close()
	snippet, _ := io.ReadAll(io.LimitReader(resp.Body, 256))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return nil
	}
	msg := fmt.Sprintf("receiver answered HTTP %d", resp.StatusCode)
	if s := strings.TrimSpace(strings.ToValidUTF8(string(snippet), "")); s != "" {
		msg += ": " + s
	}
	err = errors.New(msg)
	if resp.StatusCode >= 400 && resp.StatusCode < 500 && resp.StatusCode != http.StatusRequestTimeout &&
		resp.StatusCode != http.StatusTooManyRequests {
		return permanent(err)
	}
	return err
}

// signedWebhook sends m as a run.notification event signed like batch
// webhooks (Standard Webhooks headers; msgID is the notification's id).
func signedWebhook(ctx context.Context, hc HTTPDoer, target, secret, msgID string, m Message, now time.Time) error {
	key, err := jobs.WebhookKey(secret)
	if err != nil {
		return permanent(fmt.Errorf("webhook secret: %w", err))
	}
	body, err := json.Marshal(webhook.Event{Type: regression.EventRunNotification, Timestamp: now.UTC(), Data: m})
	if err != nil {
		return err
	}
	ts := now.Unix()
	h := http.Header{}
	h.Set(webhook.HeaderID, msgID)
	h.Set(webhook.HeaderTimestamp, strconv.FormatInt(ts, 10))
	h.Set(webhook.HeaderSignature, webhook.Sign(key, msgID, ts, body))
	return postJSON(ctx, hc, target, body, h)
}

// SMTP security modes (SMTPConfig.TLS).
const (
	// SMTPAuto upgrades with STARTTLS when the server offers it.
	SMTPAuto = "auto"
	// SMTPStartTLS requires STARTTLS.
	SMTPStartTLS = "starttls"
	// SMTPTLS connects over TLS from the first byte (port 465).
	SMTPTLS = "tls"
)

// SMTPConfig is the workers' mail server (SNAPQ_SMTP_*).
type SMTPConfig struct {
	// Addr is host:port (SNAPQ_SMTP_ADDR); "" turns email channels off.
	Addr string
	// From is the sender address (SNAPQ_SMTP_FROM).
	From string
	// Username and Password authenticate with PLAIN when both are set
	// (SNAPQ_SMTP_USERNAME, SNAPQ_SMTP_PASSWORD); net/smtp sends them only
	// over TLS or to a loopback server.
	Username, Password string
	// TLS is SMTPAuto (default), SMTPStartTLS or SMTPTLS (SNAPQ_SMTP_TLS).
	TLS string
	// RootCAs verifies the server's certificate (nil: the system's).
	RootCAs *x509.CertPool
	// Timeout bounds one delivery (default 30s).
	Timeout time.Duration
	// AllowedDomains lists the domains mail may go to
	// (SNAPQ_SMTP_ALLOWED_DOMAINS; empty: no email is sent). The api refuses
	// other recipients when a suite is written; the worker checks again.
	AllowedDomains regression.MailDomains
	// MaxPerSuite and MaxPerKey cap the email notifications of one suite,
	// and of all the suites of one API key, per MailWindow
	// (SNAPQ_SMTP_MAX_PER_SUITE, default DefaultMaxPerSuite;
	// SNAPQ_SMTP_MAX_PER_KEY, default DefaultMaxPerKey). One over is failed
	// with "rate_limited" and not sent.
	MaxPerSuite, MaxPerKey int
}

// Mail budgets: email notifications per suite and per key within MailWindow.
const (
	DefaultMaxPerSuite = 10
	DefaultMaxPerKey   = 50
	MaxMailBudget      = 100000
	MailWindow         = time.Hour
)

func (c SMTPConfig) maxPerSuite() int { return cmp.Or(c.MaxPerSuite, DefaultMaxPerSuite) }
func (c SMTPConfig) maxPerKey() int   { return cmp.Or(c.MaxPerKey, DefaultMaxPerKey) }

// Validate names what is wrong.
func (c SMTPConfig) Validate() error {
	if c.Addr == "" {
		return nil
	}
	var errs []error
	if _, _, err := net.SplitHostPort(c.Addr); err != nil {
		errs = append(errs, fmt.Errorf("SNAPQ_SMTP_ADDR=%s: want host:port", c.Addr))
	}
	if c.From == "" {
		errs = append(errs, errors.New("SNAPQ_SMTP_FROM is required with SNAPQ_SMTP_ADDR"))
	}
	switch c.TLS {
	case "", SMTPAuto, SMTPStartTLS, SMTPTLS:
	default:
		errs = append(errs, fmt.Errorf("SNAPQ_SMTP_TLS=%s: want auto, starttls or tls", c.TLS))
	}
	if (c.Username == "") != (c.Password == "") {
		errs = append(errs, errors.New("set both SNAPQ_SMTP_USERNAME and SNAPQ_SMTP_PASSWORD, or neither"))
	}
	if c.MaxPerSuite < 0 || c.MaxPerSuite > MaxMailBudget {
		errs = append(errs, fmt.Errorf("SNAPQ_SMTP_MAX_PER_SUITE=%d: want 1 to %d", c.MaxPerSuite, MaxMailBudget))
	}
	if c.MaxPerKey < 0 || c.MaxPerKey > MaxMailBudget {
		errs = append(errs, fmt.Errorf("SNAPQ_SMTP_MAX_PER_KEY=%d: want 1 to %d", c.MaxPerKey, MaxMailBudget))
	}
	return errors.Join(errs...)
}

// Mailer sends email through the workers' SMTP server, dialed through the
// egress guard.
type Mailer struct {
	Config SMTPConfig
	// Dial connects (egress.Proxy.DialContext); nil: a plain net.Dialer.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
}

// Send delivers one text message to every recipient.
func (ml *Mailer) Send(ctx context.Context, to []string, subject, text string) error {
	c := ml.Config
	if c.Addr == "" {
		return permanent(errors.New("email is off: set SNAPQ_SMTP_ADDR and SNAPQ_SMTP_FROM on the workers"))
	}
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	host, _, _ := net.SplitHostPort(c.Addr)
	dial := ml.Dial
	if dial == nil {
		dial = (&net.Dialer{}).DialContext
	}
	conn, err := dial(ctx, "tcp", c.Addr)
	if err != nil {
		if errors.Is(err, egress.ErrBlocked) {
			return permanent(fmt.Errorf("SMTP server %s: %w (SNAPQ_EGRESS_ALLOW_CIDRS can allow it)", c.Addr, err))
		}
		return fmt.Errorf("connect to SMTP server %s: %w", c.Addr, err)
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	cl, err := ml.session(conn, host)
	if err != nil {
		return err
	}
	defer cl.Close()
	return ml.transaction(cl, to, subject, text)
}

// session greets the SMTP server on conn, secures the connection as SNAPQ_SMTP_TLS says and
// authenticates.
func (ml *Mailer) session(conn net.Conn, host string) (_ *smtp.Client, err error) {
	c := ml.Config
	tlsCfg := &tls.Config{ServerName: host, RootCAs: c.RootCAs, MinVersion: tls.VersionTLS12}
	if c.TLS == SMTPTLS {
		conn = tls.Client(conn, tlsCfg)
	}
	cl, err := smtp.NewClient(conn, host)
	if err != nil {
		return nil, smtpErr("greeting", err)
	}
	defer func() {
		if err != nil {
			_ = cl.Close()
		}
	}()
	if err := cl.Hello("snapq"); err != nil {
		return nil, smtpErr("EHLO", err)
	}
	if c.TLS != SMTPTLS {
		if ok, _ := cl.Extension("STARTTLS"); ok {
			if err := cl.StartTLS(tlsCfg); err != nil {
				return nil, smtpErr("STARTTLS", err)
			}
		} else if c.TLS == SMTPStartTLS {
			return nil, permanent(fmt.Errorf("SMTP server %s does not offer STARTTLS (SNAPQ_SMTP_TLS=starttls)", c.Addr))
		}
	}
	if c.Username != "" {
		if err := cl.Auth(smtp.PlainAuth("", c.Username, c.Password, host)); err != nil {
			return nil, smtpErr("AUTH", err)
		}
	}
	return cl, nil
}

// transaction sends one message to every recipient.
func (ml *Mailer) transaction(cl *smtp.Client, to []string, subject, text string) error {
	c := ml.Config
	if err := cl.Mail(c.From); err != nil {
		return smtpErr("MAIL FROM", err)
	}
	for _, rcpt := range to {
		if err := cl.Rcpt(rcpt); err != nil {
			return smtpErr("RCPT TO "+rcpt, err)
		}
	}
	w, err := cl.Data()
	if err != nil {
		return smtpErr("DATA", err)
	}
	if _, err := w.Write(mailBody(c.From, to, subject, text, time.Now())); err != nil {
		return smtpErr("DATA", err)
	}
	if err := w.Close(); err != nil {
		return smtpErr("DATA", err)
	}
	_ = cl.Quit()
	return nil
}

// smtpErr names the step; a 5xx answer is permanent.
func smtpErr(step string, err error) error {
	err = fmt.Errorf("SMTP %s: %w", step, err)
	var te *textproto.Error
	if errors.As(err, &te) && te.Code >= 500 {
		return permanent(err)
	}
	return err
}

// oneLine replaces every control character (CR and LF included) with a
// space: a header's text, attacker-worded (a suite's name), stays one line.
func oneLine(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)
}

// mailBody is an RFC 5322 message: UTF-8 text, quoted-printable.
func mailBody(from string, to []string, subject, text string, now time.Time) []byte {
	var b bytes.Buffer
	id := make([]byte, 12)
	_, _ = rand.Read(id)
	domain := "snapq"
	if at := strings.LastIndex(from, "@"); at >= 0 {
		domain = from[at+1:]
	}
	fmt.Fprintf(&b, "From: %s\r\n", from)
	fmt.Fprintf(&b, "To: %s\r\n", strings.Join(to, ", "))
	fmt.Fprintf(&b, "Subject: %s\r\n", mime.QEncoding.Encode("utf-8", oneLine(subject)))
	fmt.Fprintf(&b, "Date: %s\r\n", now.Format(time.RFC1123Z))
	fmt.Fprintf(&b, "Message-ID: <%s@%s>\r\n", hex.EncodeToString(id), domain)
	b.WriteString("MIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\n")
	qp := quotedprintable.NewWriter(&b)
	_, _ = qp.Write([]byte(strings.ReplaceAll(text, "\n", "\r\n")))
	_ = qp.Close()
	b.WriteString("\r\n")
	return b.Bytes()
}
