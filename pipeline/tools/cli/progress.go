package cli

import (
	"fmt"
	"io"
	"os"
	"time"

	"golang.org/x/term"
	"k8s.io/utils/clock"
)

// progress reports long lists on stderr: a line rewritten in place when
// stderr is a terminal, plain lines (one per finished kind) otherwise.
type progress struct {
	w     io.Writer
	tty   bool
	last  time.Time
	clock clock.PassiveClock
}

func newProgress(w io.Writer, clk clock.PassiveClock) *progress {
	f, ok := w.(*os.File)
	return &progress{w: w, clock: clk, tty: ok && term.IsTerminal(int(f.Fd()))}
}

// update shows work in progress (terminals only, at most ten times a
// second).
func (p *progress) update(msg string) {
	if !p.tty || p.clock.Since(p.last) < 100*time.Millisecond {
		return
	}
	p.last = p.clock.Now()
	fmt.Fprintf(p.w, "\r\033[K%s", msg)
}

// done reports a finished step.
func (p *progress) done(msg string) {
	if p.tty {
		fmt.Fprintf(p.w, "\r\033[K%s\n", msg)
		return
	}
	fmt.Fprintln(p.w, msg)
}
