package regression

import (
	"errors"
	"slices"
	"testing"

	"github.com/snapq/snapq/jobs"
)

// A bad channel is named field by field: unknown kind, bad url, unknown
// `on` value, out-of-range min_ratio, an email channel without recipients.
func TestNotifyValidation(t *testing.T) {
	t.Parallel()
	_, err := ParseSuite([]byte(`{"name": "s", "targets": [{"url": "https://example.com/"}], "notify": [
		{"kind": "pager", "url": "https://example.com/x"},
		{"kind": "slack", "url": "ftp://example.com/x"},
		{"kind": "discord", "url": "https://discord.com/api/webhooks/1/x", "on": ["failed", "sometimes"]},
		{"kind": "teams", "url": "https://example.com/wf", "min_ratio": 2},
		{"kind": "email"},
		{"kind": "email", "to": ["Ops <ops@example.com>", "nope"]},
		{"kind": "webhook", "url": "https://example.com/h"},
		{"kind": "slack"}]}`))
	var ve *jobs.ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("err = %v", err)
	}
	var fields []string
	for _, f := range ve.Fields {
		fields = append(fields, f.Field)
	}
	for _, want := range []string{"notify[0].kind", "notify[1].url", "notify[2].on[1]", "notify[3].min_ratio", "notify[4].to",
		"notify[5].to[0]", "notify[5].to[1]", "notify[6].secret", "notify[7].url"} {
		if !slices.Contains(fields, want) {
			t.Errorf("no error on %s; got %v", want, ve.Fields)
		}
	}
	if len(fields) != 9 {
		t.Errorf("got %d errors, want 9: %v", len(fields), ve.Fields)
	}
	s, err := ParseSuite([]byte(`{"name": "s", "targets": [{"url": "https://example.com/"}], "notify": [
		{"kind": "slack", "url": "https://hooks.slack.com/services/T/B/X", "on": ["failed"], "min_ratio": 0.05},
		{"kind": "email", "to": ["ops@example.com"]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Notify) != 2 || !jobs.ValidID(s.Notify[0].ID) || s.Notify[0].ID == s.Notify[1].ID {
		t.Fatalf("channels %+v: each gets an id", s.Notify)
	}
}

func TestChannelReason(t *testing.T) {
	t.Parallel()
	all := Channel{}
	failedOnly := Channel{On: []string{NotifyFailed}, MinRatio: 0.05}
	recovered := Channel{On: []string{NotifyRecovered}}
	for _, tc := range []struct {
		name       string
		ch         Channel
		status     RunStatus
		prevFailed bool
		ratio      float64
		want       string
	}{
		{"failed, default filter", all, RunFailed, false, 0.001, NotifyFailed},
		{"needs review", all, RunNeedsReview, false, 0, NotifyNeedsReview},
		{"error", all, RunError, false, 0, NotifyError},
		{"passed after passed", all, RunPassed, false, 0, ""},
		{"passed after failed", all, RunPassed, true, 0, NotifyRecovered},
		{"failed above min_ratio", failedOnly, RunFailed, false, 0.06, NotifyFailed},
		{"failed below min_ratio", failedOnly, RunFailed, false, 0.04, ""},
		{"needs review filtered out", failedOnly, RunNeedsReview, false, 0, ""},
		{"recovered only, failed", recovered, RunFailed, true, 1, ""},
		{"recovered only, recovered", recovered, RunPassed, true, 0, NotifyRecovered},
		{"approved is never announced", all, RunApproved, true, 0, ""},
		{"failed after failed: not a transition", all, RunFailed, true, 1, ""},
		{"needs review after error: not a transition", all, RunNeedsReview, true, 0, ""},
		{"failed after failed, repeating", Channel{Repeat: true}, RunFailed, true, 1, NotifyFailed},
		{"error after failed, repeating", Channel{Repeat: true}, RunError, true, 0, NotifyError},
	} {
		if got := tc.ch.Reason(tc.status, tc.prevFailed, tc.ratio); got != tc.want {
			t.Errorf("%s: Reason = %q, want %q", tc.name, got, tc.want)
		}
	}
}

// The operator's allowlist: exact domains and *.subdomains; an empty list
// refuses every email channel; each recipient off the list is named.
func TestMailDomains(t *testing.T) {
	t.Parallel()
	m, err := ParseMailDomains(" Example.com, *.corp.example ,")
	if err != nil {
		t.Fatal(err)
	}
	for addr, want := range map[string]bool{"ops@example.com": true, "ops@EXAMPLE.COM": true, "a@sub.example.com": false,
		"a@x.corp.example": true, "a@corp.example": false, "a@evil.com": false, "a@example.com.evil.com": false, "no-at": false} {
		if got := m.Allows(addr); got != want {
			t.Errorf("Allows(%q) = %v, want %v", addr, got, want)
		}
	}
	for _, bad := range []string{"@example.com", "a/b", "*", "example"} {
		if _, err := ParseMailDomains(bad); err == nil {
			t.Errorf("ParseMailDomains(%q) accepted", bad)
		}
	}
	chs := []Channel{{Kind: ChannelSlack}, {Kind: ChannelEmail, To: []string{"ops@example.com", "x@evil.com"}}}
	var errs jobs.FieldErrors
	m.CheckRecipients(chs, &errs)
	if len(errs) != 1 || errs[0].Field != "notify[1].to[1]" || errs[0].Code != CodeRecipientNotAllowed {
		t.Fatalf("CheckRecipients = %+v", errs)
	}
	errs = nil
	MailDomains(nil).CheckRecipients(chs, &errs)
	if len(errs) != 1 || errs[0].Field != "notify[1].kind" || errs[0].Code != CodeEmailDisabled {
		t.Fatalf("CheckRecipients without a list = %+v", errs)
	}
}
