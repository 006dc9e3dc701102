package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/snapq/snapq/jobs"
)

// unavailable wraps err with jobs.ErrUnavailable when it says Postgres could
// not be reached rather than anything about the data: the queue then waits
// for the database instead of spending a job's retries on the outage.
func unavailable(err error) error {
	if err == nil || !isUnavailable(err) {
		return err
	}
	return fmt.Errorf("%w: %w", jobs.ErrUnavailable, err)
}

// isUnavailable classifies pgx's errors: a failed connect (refused, reset,
// authentication racing a restart), a connection lost mid-query (EOF, reset,
// "conn closed"), a deadline that ran out while waiting for the database, and
// the server's own "going away" answers — SQLSTATE class 08 (connection
// exception), 57P01 admin_shutdown, 57P02 crash_shutdown, 57P03
// cannot_connect_now (starting up or in recovery) and 53300
// too_many_connections. A cancelled context is not an outage: the caller
// gave up (a worker's shutdown).
func isUnavailable(err error) bool {
	if errors.Is(err, context.Canceled) {
		return false
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch {
		case strings.HasPrefix(pe.Code, "08"),
			pe.Code == "57P01", pe.Code == "57P02", pe.Code == "57P03", pe.Code == "53300":
			return true
		}
		return false // the server answered: constraint violations, bad SQL, serialization failures
	}
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) {
		return true
	}
	if pgconn.Timeout(err) || pgconn.SafeToRetry(err) || errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var opErr *net.OpError
	if errors.As(err, &opErr) {
		return true
	}
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EPIPE) || errors.Is(err, net.ErrClosed) || errors.Is(err, pgconn.ErrConnClosed)
}
