package contract_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/snapq/snapq/internal/contract"
)

// BenchmarkCheck is the cost the contract adds to each e2e request.
func BenchmarkCheck(b *testing.B) {
	v, err := loadDoc()
	if err != nil {
		b.Fatal(err)
	}
	req := httptest.NewRequest(http.MethodGet, "http://127.0.0.1"+batchPath, nil)
	h := http.Header{"Content-Type": {"application/json"}}
	for b.Loop() {
		if viol := v.Check(context.Background(), contract.Exchange{Request: req, Status: 200, Header: h, Body: []byte(batchJSON)}); viol != nil {
			b.Fatal(viol)
		}
	}
}
