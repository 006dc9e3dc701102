package capture

import (
	"context"
	"fmt"
)

// The interactive lane: Config.InteractiveTabs of a browser's Tabs are kept
// for captures somebody waits for (a synchronous API call, an agent's tool).
// Other captures take a batch token first, of which there are Tabs minus
// InteractiveTabs, so they never hold the reserved tabs; an interactive
// capture takes any free tab. The caller marks a capture interactive on its
// context (the worker does, for the tasks of the interactive queue).

type interactiveKey struct{}

// WithInteractive marks the captures run with ctx as interactive.
func WithInteractive(ctx context.Context) context.Context {
	return context.WithValue(ctx, interactiveKey{}, true)
}

// Interactive reports whether ctx is marked by WithInteractive.
func Interactive(ctx context.Context) bool {
	v, _ := ctx.Value(interactiveKey{}).(bool)
	return v
}

// batchSlots is the token channel of non-interactive captures; nil when no
// tab is reserved.
func batchSlots(cfg Config) chan struct{} {
	if cfg.InteractiveTabs <= 0 || cfg.InteractiveTabs >= cfg.Tabs {
		return nil
	}
	return make(chan struct{}, cfg.Tabs-cfg.InteractiveTabs)
}

// enterLane takes a batch token for a non-interactive capture; the returned
// func gives it back.
func (b *Browser) enterLane(ctx context.Context) (func(), error) {
	if b.batch == nil || Interactive(ctx) {
		return func() {}, nil
	}
	select {
	case b.batch <- struct{}{}:
		return func() { <-b.batch }, nil
	case <-ctx.Done():
		return nil, classify(ctx, ctx, phaseSlot, ctx.Err())
	}
}

// validateLane checks InteractiveTabs against Tabs.
func (c Config) validateLane() error {
	if c.InteractiveTabs < 0 || (c.InteractiveTabs > 0 && c.InteractiveTabs >= c.Tabs) {
		return fmt.Errorf("interactive tabs must be 0 to tabs-1 (%d), got %d", c.Tabs-1, c.InteractiveTabs)
	}
	return nil
}

// Lanes runs interactive captures (WithInteractive) on a Browser of their own, so a
// synchronous capture never shares a Chromium's renderers, recycling or tab pool with a
// batch, and the other captures on Batch. Interactive nil: every capture runs on Batch.
type Lanes struct {
	Batch, Interactive *Browser
}

// Capture runs req on the lane's browser (Browser.Capture).
func (l Lanes) Capture(ctx context.Context, req Request) (*Result, error) {
	if l.Interactive != nil && Interactive(ctx) {
		return l.Interactive.Capture(ctx, req)
	}
	return l.Batch.Capture(ctx, req)
}
