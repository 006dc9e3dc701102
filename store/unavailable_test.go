package store_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/snapq/snapq/internal/testenv"
	"github.com/snapq/snapq/jobs"
	"github.com/snapq/snapq/store"
)

// What says "the database cannot be reached" is jobs.ErrUnavailable; what the
// server answered about the data is not.
func TestUnavailableClassification(t *testing.T) {
	t.Parallel()
	port, err := testenv.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	// A real connect error: nothing listens on the port.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, refused := pgx.Connect(ctx, "postgres://snapq@127.0.0.1:"+port+"/snapq?sslmode=disable&connect_timeout=2")
	if refused == nil {
		t.Fatal("connect to a closed port succeeded")
	}
	reset := &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{name: "connection refused", err: refused, want: true},
		{name: "connection reset", err: fmt.Errorf("query: %w", reset), want: true},
		{name: "unexpected EOF", err: io.ErrUnexpectedEOF, want: true},
		{name: "conn closed", err: fmt.Errorf("begin: %w", pgconn.ErrConnClosed), want: true},
		{name: "deadline", err: fmt.Errorf("acquire: %w", context.DeadlineExceeded), want: true},
		{name: "admin shutdown", err: &pgconn.PgError{Code: "57P01", Message: "terminating connection due to administrator command"}, want: true},
		{name: "starting up", err: &pgconn.PgError{Code: "57P03", Message: "the database system is starting up"}, want: true},
		{name: "connection failure", err: &pgconn.PgError{Code: "08006"}, want: true},
		{name: "too many connections", err: &pgconn.PgError{Code: "53300"}, want: true},
		{name: "unique violation", err: &pgconn.PgError{Code: "23505"}, want: false},
		{name: "serialization failure", err: &pgconn.PgError{Code: "40001"}, want: false},
		{name: "bad password", err: &pgconn.PgError{Code: "28P01"}, want: false},
		{name: "no rows", err: pgx.ErrNoRows, want: false},
		{name: "canceled", err: fmt.Errorf("query: %w", context.Canceled), want: false},
		{name: "not found", err: jobs.ErrNotFound, want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := store.Unavailable(tt.err)
			if got := errors.Is(err, jobs.ErrUnavailable); got != tt.want {
				t.Errorf("unavailable(%v) = %v; errors.Is(ErrUnavailable) = %v, want %v", tt.err, err, got, tt.want)
			}
			if !errors.Is(err, tt.err) {
				t.Errorf("unavailable(%v) = %v lost the original error", tt.err, err)
			}
		})
	}
}
