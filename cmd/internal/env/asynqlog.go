package env

import (
	"fmt"
	"log/slog"
)

// AsynqLogger adapts slog to asynq's Logger interface.
type AsynqLogger struct{ L *slog.Logger }

func (a AsynqLogger) Debug(args ...any) { a.L.Debug(fmt.Sprint(args...)) }
func (a AsynqLogger) Info(args ...any)  { a.L.Info(fmt.Sprint(args...)) }
func (a AsynqLogger) Warn(args ...any)  { a.L.Warn(fmt.Sprint(args...)) }
func (a AsynqLogger) Error(args ...any) { a.L.Error(fmt.Sprint(args...)) }

// Fatal logs at error level: asynq must not end the process.
func (a AsynqLogger) Fatal(args ...any) { a.L.Error(fmt.Sprint(args...)) }
