package main

import (
	"log/slog"
	"net/http"
	"net/http/pprof"
	"time"
)

// servePprof serves Go's profiler on addr (SNAPQ_PPROF_ADDR, e.g.
// 127.0.0.1:6060) for diagnosing a slow or hungry worker.
func servePprof(addr string, log *slog.Logger) {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/heap", pprof.Handler("heap").ServeHTTP)
	mux.HandleFunc("/debug/pprof/goroutine", pprof.Handler("goroutine").ServeHTTP)
	srv := &http.Server{Addr: addr, Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	log.Info("pprof listening", "addr", addr)
	if err := srv.ListenAndServe(); err != nil {
		log.Warn("pprof server stopped", "err", err)
	}
}
