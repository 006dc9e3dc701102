package capture

import (
	"io"
	"log/slog"
	"os"
)

// testLogger logs to stderr with SNAPQ_TEST_LOG=1, else discards.
func testLogger() *slog.Logger {
	if os.Getenv("SNAPQ_TEST_LOG") == "1" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}
