package regression

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/mail"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/snapq/snapq/jobs"
)

// Notification channels: a suite's `notify` list says where a settled run is
// announced (the notify package builds and sends the messages). A channel's
// URL and signing secret are secrets: write-only, sealed at rest like the
// vcs token; the API shows a channel's id, kind, filters and recipients.

// Channel kinds. They are part of the public API.
const (
	ChannelSlack   = "slack"
	ChannelDiscord = "discord"
	ChannelTeams   = "teams"
	ChannelEmail   = "email"
	ChannelWebhook = "webhook"
)

// ChannelKinds lists the kinds in the order messages name them.
var ChannelKinds = []string{ChannelSlack, ChannelDiscord, ChannelTeams, ChannelEmail, ChannelWebhook}

// Notification reasons: the `on` filter values. Recovered is a run that
// passed after a previous run of the same suite and branch that did not
// (failed, needed review or errored).
const (
	NotifyFailed      = string(RunFailed)
	NotifyNeedsReview = string(RunNeedsReview)
	NotifyError       = string(RunError)
	NotifyRecovered   = "recovered"
)

// NotifyReasons are the `on` values, and the default filter.
var NotifyReasons = []string{NotifyFailed, NotifyNeedsReview, NotifyError, NotifyRecovered}

// Limits of a suite's notify list.
const (
	MaxChannels   = 10
	MaxRecipients = 20
)

// EventRunNotification is the event type of a notify channel of kind webhook.
const EventRunNotification = "run.notification"

// ErrNoSecretKey: a suite with a vcs token or notify channels cannot be
// stored without SNAPQ_SECRET_KEY (their secrets are sealed at rest).
var ErrNoSecretKey = errors.New("set SNAPQ_SECRET_KEY on the api and the workers: vcs tokens and notify channel URLs are stored encrypted")

// Channel is one place a suite's settled runs are announced.
type Channel struct {
	// ID names the channel in a run's notifications; given by the server.
	// A PATCH that lists a channel by id without its url keeps its secrets.
	ID   string `json:"id,omitempty"`
	Kind string `json:"kind"`
	// URL is the incoming webhook (slack, discord), the workflow webhook
	// (teams) or the receiver (webhook). Write-only.
	URL string `json:"url,omitempty"`
	// Secret signs a webhook channel's deliveries (Standard Webhooks, as a
	// batch's webhook). Write-only.
	Secret string `json:"secret,omitempty"`
	// To lists an email channel's recipients.
	To []string `json:"to,omitempty"`
	// On filters by reason (NotifyReasons; empty: all of them).
	On []string `json:"on,omitempty"`
	// MinRatio: a failed run notifies only when one of its failed
	// comparisons changed at least this share of pixels (0: any).
	MinRatio float64 `json:"min_ratio,omitempty"`
	// Repeat: a failing run (failed, needs review, error) notifies even
	// when the previous run of the suite and branch was failing too. By
	// default only transitions notify: passing to failing, and failing to
	// passing (recovered).
	Repeat bool `json:"repeat,omitempty"`
}

// Public is the channel without its secrets.
func (c Channel) Public() Channel {
	c.URL, c.Secret = "", ""
	return c
}

// Reasons is the channel's filter, the default when it gives none.
func (c Channel) Reasons() []string {
	if len(c.On) == 0 {
		return NotifyReasons
	}
	return c.On
}

// Reason says why the channel hears of a settled run, or "" when it does
// not: the run's status (or recovered) must be in the filter, a failing run
// must follow a passing one (or none) unless the channel repeats, and a
// failed run must have changed at least MinRatio somewhere (maxRatio: the
// largest diff ratio of its failed comparisons). previousFailed: the
// previous settled run of the suite and branch failed, needed review or
// errored (an approved one passed).
func (c Channel) Reason(status RunStatus, previousFailed bool, maxRatio float64) string {
	var reason string
	switch status {
	case RunFailed, RunNeedsReview, RunError:
		if previousFailed && !c.Repeat {
			return ""
		}
		reason = string(status)
	case RunPassed:
		if previousFailed {
			reason = NotifyRecovered
		}
	}
	if reason == "" || !slices.Contains(c.Reasons(), reason) {
		return ""
	}
	if reason == NotifyFailed && maxRatio < c.MinRatio {
		return ""
	}
	return reason
}

// validateChannels checks a suite's notify list, naming every bad field,
// and gives each channel without an id a new one.
func validateChannels(in []Channel, errs *jobs.FieldErrors) []Channel {
	if len(in) > MaxChannels {
		errs.Add("invalid_option", "notify", fmt.Sprintf("a suite has at most %d channels, got %d", MaxChannels, len(in)))
		return nil
	}
	out := make([]Channel, 0, len(in))
	ids := map[string]bool{}
	for i, c := range in {
		p := fmt.Sprintf("notify[%d]", i)
		c.Kind = strings.TrimSpace(c.Kind)
		switch {
		case c.ID == "":
			c.ID = jobs.NewID()
		case !jobs.ValidID(c.ID):
			errs.Add("invalid_option", p+".id", "must be the id of one of the suite's channels, or left out for a new one")
		case ids[c.ID]:
			errs.Add("invalid_option", p+".id", "the same channel is listed twice")
		}
		ids[c.ID] = true
		validateChannelKind(c, p, errs)
		for j, on := range c.On {
			if !slices.Contains(NotifyReasons, on) {
				errs.Add("invalid_option", fmt.Sprintf("%s.on[%d]", p, j), fmt.Sprintf("must be one of %s, got %q", strings.Join(NotifyReasons, ", "), on))
			}
		}
		if math.IsNaN(c.MinRatio) || c.MinRatio < 0 || c.MinRatio > 1 {
			errs.Add("invalid_option", p+".min_ratio", "must be between 0 and 1")
		}
		out = append(out, c)
	}
	return out
}

// validateChannelKind checks channel p by its kind: a url (and no
// recipients) or recipients (and no url), and a signing secret only for a
// webhook.
func validateChannelKind(c Channel, p string, errs *jobs.FieldErrors) {
	switch c.Kind {
	case ChannelSlack, ChannelDiscord, ChannelTeams, ChannelWebhook:
		if err := checkChannelURL(c.URL); err != nil {
			errs.Add("invalid_url", p+".url", err.Error())
		}
		if len(c.To) > 0 {
			errs.Add("invalid_option", p+".to", "only an email channel has recipients")
		}
	case ChannelEmail:
		if c.URL != "" {
			errs.Add("invalid_option", p+".url", "an email channel has recipients (to), not a url; the SMTP server is the workers' SNAPQ_SMTP_ADDR")
		}
		if len(c.To) == 0 || len(c.To) > MaxRecipients {
			errs.Add("invalid_option", p+".to", fmt.Sprintf("give 1-%d recipients", MaxRecipients))
		}
		for j, to := range c.To {
			if a, err := mail.ParseAddress(to); err != nil || a.Name != "" || strings.ContainsAny(to, "\r\n") {
				errs.Add("invalid_option", fmt.Sprintf("%s.to[%d]", p, j), "must be a plain email address such as ops@example.com")
			}
		}
	default:
		errs.Add("invalid_option", p+".kind", fmt.Sprintf("must be one of %s, got %q", strings.Join(ChannelKinds, ", "), c.Kind))
	}
	if c.Kind == ChannelWebhook {
		w := jobs.WebhookInput{URL: c.URL, Secret: c.Secret}
		var werrs jobs.FieldErrors
		jobs.ValidateWebhook(&w, &werrs)
		for _, e := range werrs {
			if e.Field == "webhook.secret" {
				errs.Add(e.Code, p+".secret", e.Message)
			}
		}
	} else if c.Secret != "" {
		errs.Add("invalid_option", p+".secret", "only a webhook channel has a signing secret")
	}
}

// checkChannelURL accepts an absolute http(s) URL without user info. Where
// it may point is the egress guard's business at delivery.
func checkChannelURL(raw string) error {
	if raw == "" {
		return errors.New("give the channel's url (it is never shown again)")
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return errors.New("must be an absolute http(s) URL")
	}
	if u.User != nil {
		return errors.New("must not carry user info")
	}
	if len(raw) > 2048 {
		return errors.New("must be at most 2048 characters")
	}
	return nil
}

// keepChannelSecrets fills in the secrets of channels a PATCH lists by id
// without a url: the stored channel's.
func keepChannelSecrets(patch []Channel, cur []Channel) []Channel {
	for i, c := range patch {
		if c.ID == "" || c.URL != "" {
			continue
		}
		for _, old := range cur {
			if old.ID == c.ID && old.Kind == c.Kind {
				patch[i].URL = old.URL
				if c.Secret == "" {
					patch[i].Secret = old.Secret
				}
			}
		}
	}
	return patch
}

// Notification statuses. They are part of the public API.
const (
	NotificationPending   = "pending"
	NotificationDelivered = "delivered"
	NotificationFailed    = "failed"
)

// Notification is one message of a run to one channel, with the outcome of
// its attempts.
type Notification struct {
	ID          string
	RunID       string
	ChannelID   string
	Kind        string
	Reason      string
	Status      string
	Attempts    int
	LastError   string
	CreatedAt   time.Time
	UpdatedAt   time.Time
	DeliveredAt *time.Time
	// Message is what every attempt sends (the notify package's Message as
	// JSON), built when the notification is decided; nil for one decided
	// before messages were kept (it is built at delivery).
	Message json.RawMessage
}

// Codes of email recipients the operator's allowlist refuses.
const (
	CodeEmailDisabled       = "email_disabled"
	CodeRecipientNotAllowed = "recipient_not_allowed"
)

// MailDomains is the operator's allowlist of email recipients' domains
// (SNAPQ_SMTP_ALLOWED_DOMAINS): "example.com" admits that domain only,
// "*.example.com" its subdomains. Empty: email channels are refused.
type MailDomains []string

// ParseMailDomains reads a comma-separated allowlist, lower-cased.
func ParseMailDomains(list string) (MailDomains, error) {
	var out MailDomains
	for _, d := range strings.Split(list, ",") {
		d = strings.ToLower(strings.TrimSpace(d))
		if d == "" {
			continue
		}
		host := strings.TrimPrefix(d, "*.")
		if strings.ContainsAny(host, "*@/ ") || strings.HasPrefix(host, ".") || !strings.Contains(host, ".") && host != "localhost" {
			return nil, fmt.Errorf("SNAPQ_SMTP_ALLOWED_DOMAINS: %q is not a domain (example.com, or *.example.com for its subdomains)", d)
		}
		out = append(out, d)
	}
	return out, nil
}

// Allows reports whether the address's domain is on the list.
func (m MailDomains) Allows(addr string) bool {
	at := strings.LastIndex(addr, "@")
	if at < 0 {
		return false
	}
	domain := strings.ToLower(strings.TrimSuffix(addr[at+1:], "."))
	for _, d := range m {
		if sub, ok := strings.CutPrefix(d, "*."); ok {
			if strings.HasSuffix(domain, "."+sub) {
				return true
			}
		} else if domain == d {
			return true
		}
	}
	return false
}

// CheckRecipients names every email channel of chs the allowlist refuses:
// all of them when the list is empty (email is off), else each recipient
// off the list (notify[i].to[j]), in errs.
func (m MailDomains) CheckRecipients(chs []Channel, errs *jobs.FieldErrors) {
	for i, c := range chs {
		if c.Kind != ChannelEmail {
			continue
		}
		if len(m) == 0 {
			errs.Add(CodeEmailDisabled, fmt.Sprintf("notify[%d].kind", i),
				"email is off on this server: the operator lists the domains mail may go to in SNAPQ_SMTP_ALLOWED_DOMAINS")
			continue
		}
		for j, to := range c.To {
			if !m.Allows(to) {
				errs.Add(CodeRecipientNotAllowed, fmt.Sprintf("notify[%d].to[%d]", i, j),
					"this address's domain is not on the server's list of domains mail may go to (SNAPQ_SMTP_ALLOWED_DOMAINS)")
			}
		}
	}
}
