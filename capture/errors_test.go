package capture

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/go-rod/rod"
)

func TestClassify(t *testing.T) {
	t.Parallel()
	nav := func(reason string) error { return fmt.Errorf("navigate x: %w", &rod.NavigationError{Reason: reason}) }
	crashed, cancel := context.WithCancelCause(context.Background())
	cancel(errTargetCrashed)
	expired, cancel2 := context.WithTimeout(context.Background(), 0)
	defer cancel2()
	canceled, cancel3 := context.WithCancel(context.Background())
	cancel3()
	bg := context.Background()

	tests := []struct {
		name        string
		parent, job context.Context
		err         error
		code        string
		retryable   bool
	}{
		{"dns", bg, bg, nav("net::ERR_NAME_NOT_RESOLVED"), CodeDNSFailure, false},
		{"dns resolution", bg, bg, nav("net::ERR_NAME_RESOLUTION_FAILED"), CodeDNSFailure, false},
		{"refused", bg, bg, nav("net::ERR_CONNECTION_REFUSED"), CodeConnectionFailed, true},
		{"reset", bg, bg, nav("net::ERR_CONNECTION_RESET"), CodeConnectionFailed, true},
		{"unreachable", bg, bg, nav("net::ERR_ADDRESS_UNREACHABLE"), CodeConnectionFailed, true},
		{"empty response", bg, bg, nav("net::ERR_EMPTY_RESPONSE"), CodeConnectionFailed, true},
		{"aborted", bg, bg, nav("net::ERR_ABORTED"), CodeConnectionFailed, true},
		{"ssl", bg, bg, nav("net::ERR_SSL_PROTOCOL_ERROR"), CodeTLSFailed, false},
		{"cert", bg, bg, nav("net::ERR_CERT_AUTHORITY_INVALID"), CodeCertificateError, false},
		{"cert date", bg, bg, nav("net::ERR_CERT_DATE_INVALID"), CodeCertificateError, false},
		{"cert name", bg, bg, nav("net::ERR_CERT_COMMON_NAME_INVALID"), CodeCertificateError, false},
		{"client cert", bg, bg, nav("net::ERR_SSL_CLIENT_AUTH_CERT_NEEDED"), CodeCertificateError, false},
		{"unsafe port", bg, bg, nav("net::ERR_UNSAFE_PORT"), CodeUnsafePort, false},
		{"blocked by client", bg, bg, nav("net::ERR_BLOCKED_BY_CLIENT"), CodeBlockedByClient, false},
		{"blocked by response", bg, bg, nav("net::ERR_BLOCKED_BY_RESPONSE"), CodeBlockedByResponse, false},
		{"invalid url", bg, bg, nav("net::ERR_INVALID_URL"), CodeInvalidURL, false},
		{"disallowed scheme", bg, bg, nav("net::ERR_DISALLOWED_URL_SCHEME"), CodeInvalidURL, false},
		{"too many redirects", bg, bg, nav("net::ERR_TOO_MANY_REDIRECTS"), CodeRedirectFailed, false},
		{"invalid response", bg, bg, nav("net::ERR_INVALID_HTTP_RESPONSE"), CodeInvalidResponse, true},
		{"dns timeout", bg, bg, nav("net::ERR_DNS_TIMED_OUT"), CodeConnectionFailed, true},
		{"connection timed out", bg, bg, nav("net::ERR_CONNECTION_TIMED_OUT"), CodeConnectionFailed, true},
		{"unknown net error", bg, bg, nav("net::ERR_SOMETHING_NEW"), CodeNavigationFailed, true},
		{"deadline", expired, expired, context.DeadlineExceeded, CodeNavigationTimeout, true},
		{"canceled", canceled, canceled, context.Canceled, CodeCanceled, true},
		{"renderer crash wins over the canceled call", bg, crashed, context.Canceled, CodeBrowserCrashed, true},
		{"browser gone", bg, bg, fmt.Errorf("x: %w", errBrowserGone), CodeBrowserCrashed, true},
		{"call timeout", bg, bg, fmt.Errorf("%w (30s)", errCallTimeout), CodeInternal, true},
		{"classified passes through", bg, bg, newError(CodeSelectorTimeout, false, nil, "x"), CodeSelectorTimeout, false},
		{"anything else", bg, bg, errors.New("boom"), CodeInternal, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := classify(tt.parent, tt.job, phaseNavigate, tt.err)
			if got.Code != tt.code || got.Retryable != tt.retryable {
				t.Errorf("classify(%v) = %s retryable=%v, want %s retryable=%v", tt.err, got.Code, got.Retryable, tt.code, tt.retryable)
			}
		})
	}
}
