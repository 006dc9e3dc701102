package jobs

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

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
