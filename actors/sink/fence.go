package sink

import "context"

// Fence lets one export at a time write a binding's sink, across the
// binding's incarnations: an actor that restarts, or a binding replaced
// because its sink or Secret changed, starts its next export only once the
// export cancelled before it has returned, so a late write of the old one
// never lands after (or beside) the new one. The inventory keeps a fence a
// binding key while it lives, and waits on all of them before its sinks
// are cleaned up.
type Fence struct{ ch chan struct{} }

// NewFence returns an open fence.
func NewFence() *Fence { return &Fence{ch: make(chan struct{}, 1)} }

// Acquire waits until no export holds the fence, then holds it.
func (f *Fence) Acquire(ctx context.Context) error {
	select {
	case f.ch <- struct{}{}:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// Release lets the next export through.
func (f *Fence) Release() { <-f.ch }

// Wait returns once no export holds the fence (or ctx ends).
func (f *Fence) Wait(ctx context.Context) error {
	if err := f.Acquire(ctx); err != nil {
		return err
	}
	f.Release()
	return nil
}
