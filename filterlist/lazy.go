package filterlist

import (
	"fmt"
	"log/slog"
	"os"
	"sync"
)

// Lazy is an Engine built on first use: a worker whose jobs never ask for blocking does not
// pay the lists' load (seconds of CPU and about 150 MB). NewLazy checks the files up front,
// so a wrong SNAPQ_FILTER_LISTS still stops the worker at start.
type Lazy struct {
	files map[string][]string
	log   *slog.Logger
	once  sync.Once
	eng   *Engine
}

// NewLazy is a Lazy over files (as Load takes them) after checking each file is readable.
func NewLazy(files map[string][]string, log *slog.Logger) (*Lazy, error) {
	for cat, names := range files {
		for _, name := range names {
			f, err := os.Open(name)
			if err != nil {
				return nil, fmt.Errorf("filter lists: %s: %w", cat, err)
			}
			f.Close()
		}
	}
	if log == nil {
		log = slog.Default()
	}
	return &Lazy{files: files, log: log}, nil
}

// engine loads the lists once; a failure is logged and leaves the engine nil (nothing is
// blocked, and the job's result counts no blocking).
func (l *Lazy) engine() *Engine {
	l.once.Do(func() {
		eng, err := Load(l.files)
		if err != nil {
			l.log.Error("filter lists failed to load; nothing is blocked", "err", err)
			return
		}
		l.eng = eng
	})
	return l.eng
}

// Match is Engine.Match, after the first use's load.
func (l *Lazy) Match(rawURL, pageURL, resourceType string, mainFrame bool, cats []string) string {
	if e := l.engine(); e != nil {
		return e.Match(rawURL, pageURL, resourceType, mainFrame, cats)
	}
	return ""
}

// Selectors is Engine.Selectors, after the first use's load.
func (l *Lazy) Selectors(host string, cats []string) map[string][]string {
	if e := l.engine(); e != nil {
		return e.Selectors(host, cats)
	}
	return nil
}
