package store_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/snapq/snapq/regression"
)

// A run's report state starts empty, keeps what fn returns even with an
// error (what was delivered stays delivered), and approvals take numbers
// after the end report's.
func TestVCSReportState(t *testing.T) {
	t.Parallel()
	st := setup(t)
	ctx := context.Background()
	g, s := newSuite(t, st)
	r, err := g.StartRun(ctx, s, regression.TriggerManual, nil, regression.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	boom := errors.New("the code host answered 502")
	err = st.WithVCSReport(ctx, r.ID, func(cur regression.VCSReportState) (regression.VCSReportState, error) {
		if cur != (regression.VCSReportState{}) {
			t.Errorf("a new run's report state: %+v", cur)
		}
		return regression.VCSReportState{Seq: 1, CheckRunID: "77"}, boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("WithVCSReport = %v, want fn's error", err)
	}
	_ = st.WithVCSReport(ctx, r.ID, func(cur regression.VCSReportState) (regression.VCSReportState, error) {
		if cur != (regression.VCSReportState{Seq: 1, CheckRunID: "77"}) {
			t.Errorf("after a partial delivery: %+v", cur)
		}
		return cur, nil
	})
	for want := 3; want <= 4; want++ {
		seq, run, err := st.DecideApprovalReport(ctx, r.ID)
		if err != nil || seq != want || run.ID != r.ID || run.Status != regression.RunRunning {
			t.Fatalf("approval report %d: %d, %+v, %v", want, seq, run, err)
		}
	}
}

// An email notification claims one unit of its suite's mail budget once
// (a retry claims again for free); past the budget it is refused, naming it.
func TestClaimMail(t *testing.T) {
	t.Parallel()
	st := setup(t)
	st.SetSealer(testSealer(t))
	ctx := context.Background()
	g := &regression.Service{Repo: st, Queue: nopQueue{}, MailDomains: regression.MailDomains{"example.com"}}
	s, err := g.CreateSuite(ctx, "", []byte(`{"name": "mail", "targets": [{"url": "https://example.com/", "name": "home"}],
		"notify": [{"kind": "email", "to": ["ops@example.com"]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for range 3 {
		r, err := g.StartRun(ctx, s, regression.TriggerManual, nil, regression.RunOptions{})
		if err != nil {
			t.Fatal(err)
		}
		n := &regression.Notification{ID: newTestID(t), RunID: r.ID, ChannelID: s.Notify[0].ID, Kind: regression.ChannelEmail,
			Reason: regression.NotifyFailed, Message: []byte(`{"suite": "mail"}`)}
		if _, err := st.PlanNotifications(ctx, r.ID, []*regression.Notification{n}); err != nil {
			t.Fatal(err)
		}
		got, err := st.GetNotification(ctx, n.ID)
		if err != nil || !strings.Contains(string(got.Message), `"suite"`) {
			t.Fatalf("stored message %q, %v", got.Message, err)
		}
		ids = append(ids, n.ID)
	}
	for i, want := range []string{"", "", ""} {
		if spent, err := st.ClaimMail(ctx, ids[0], 2, 10, time.Hour); err != nil || spent != want {
			t.Fatalf("claim %d of the first: %q, %v", i, spent, err)
		}
	}
	if spent, err := st.ClaimMail(ctx, ids[1], 2, 10, time.Hour); err != nil || spent != "" {
		t.Fatalf("second: %q, %v", spent, err)
	}
	if spent, err := st.ClaimMail(ctx, ids[2], 2, 10, time.Hour); err != nil || !strings.Contains(spent, "SNAPQ_SMTP_MAX_PER_SUITE=2") {
		t.Fatalf("third, over the suite's 2: %q, %v", spent, err)
	}
	if spent, err := st.ClaimMail(ctx, ids[2], 5, 2, time.Hour); err != nil || !strings.Contains(spent, "SNAPQ_SMTP_MAX_PER_KEY=2") {
		t.Fatalf("third, over the key's 2: %q, %v", spent, err)
	}
}
