package main

import (
	"context"
	"fmt"
	"math"
	"sort"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Change kinds during churn.
const (
	changeUpdate = "update"
	changeDelete = "delete"
	changeCreate = "create" // an object deleted earlier in the churn comes back
)

// churn changes objects at the churn rate for the churn time, and measures
// for every change the time until Postgres shows it: the new version, the
// row gone, or the row back. Every deleteEvery-th change deletes its object
// instead of updating it; the object's next change creates it again. want
// (object name → version) follows the changes.
func churn(ctx context.Context, c client.Client, db *pgx.Conn, o ClusterOptions, objs objects, want map[string]string, res *ClusterResult) error {
	every := time.Duration(float64(time.Second) / o.ChurnRate)
	deleteEvery := 0
	if o.DeleteShare > 0 {
		deleteEvery = max(1, int(math.Round(1/o.DeleteShare)))
	}
	start := time.Now()
	type pending struct {
		version string // "" once deleted
		at      time.Time
		change  string
	}
	var mu sync.Mutex
	waiting := map[string]pending{}
	var lags []time.Duration
	done := make(chan struct{})
	go func() { // watch Postgres for the changes
		defer close(done)
		for {
			mu.Lock()
			n := len(waiting)
			mu.Unlock()
			finished := time.Since(start) > o.ChurnFor
			if finished && n == 0 || ctx.Err() != nil || time.Since(start) > o.ChurnFor+2*time.Minute {
				return
			}
			got, _, err := pgVersions(ctx, db)
			seen := time.Now()
			if err == nil {
				mu.Lock()
				for name, p := range waiting {
					v, present := got[name]
					if p.version == "" && !present || p.version != "" && v == p.version {
						lags = append(lags, seen.Sub(p.at))
						res.LagSamples = append(res.LagSamples, LagSample{At: p.at.Sub(start), Lag: seen.Sub(p.at), Change: p.change})
						delete(waiting, name)
					}
				}
				mu.Unlock()
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()
	// Writers fed at the churn rate, one per 40 changes/s (at least
	// eight): a writer is bounded by the API server's round trip, about
	// 25 ms on a busy 2-core machine.
	type change struct {
		ob      object
		kind    string
		version string
	}
	writers := max(8, int(o.ChurnRate/40))
	work := make(chan change, 64)
	var wg sync.WaitGroup
	var writeErr error
	var errOnce sync.Once
	for range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ch := range work {
				mu.Lock()
				// A newer change supersedes one not seen yet.
				waiting[ch.ob.name] = pending{version: ch.version, at: time.Now(), change: ch.kind}
				mu.Unlock()
				var err error
				switch ch.kind {
				case changeUpdate:
					err = ch.ob.update(ctx, c, ch.version)
				case changeDelete:
					err = ch.ob.delete(ctx, c)
				case changeCreate:
					err = ch.ob.create(ctx, c, ch.version)
				}
				if err != nil {
					errOnce.Do(func() { writeErr = err })
				}
			}
		}()
	}
	deleted := map[int]bool{}
	for u := 0; time.Since(start) < o.ChurnFor && ctx.Err() == nil; u++ {
		if wait := time.Until(start.Add(every * time.Duration(u))); wait > 0 {
			time.Sleep(wait)
		}
		// A stride coprime with the object count visits every object once
		// per round, mixing kinds, and never hands two writers the same
		// object at once.
		i := (u * stride(objs.n)) % objs.n
		ob := objs.at(i)
		ch := change{ob: ob, kind: changeUpdate, version: fmt.Sprintf("v%d", u+1)}
		switch {
		case deleted[i]:
			ch.kind = changeCreate
			delete(deleted, i)
			res.Creates++
		case deleteEvery > 0 && u%deleteEvery == deleteEvery-1:
			ch.kind, ch.version = changeDelete, ""
			deleted[i] = true
			res.Deletes++
		default:
			res.Updates++
		}
		if ch.version == "" {
			delete(want, ob.name)
		} else {
			want[ob.name] = ch.version
		}
		work <- ch
	}
	close(work)
	wg.Wait()
	if writeErr != nil {
		return writeErr
	}
	<-done
	sort.Slice(lags, func(a, b int) bool { return lags[a] < lags[b] })
	res.Lag = map[string]float64{}
	if n := len(lags); n > 0 {
		q := func(p float64) time.Duration { return lags[min(n-1, int(p*float64(n)))] }
		res.LagP50, res.LagP95, res.LagP99, res.LagMax = q(0.50), q(0.95), q(0.99), lags[n-1]
		res.Lag = map[string]float64{"p50": res.LagP50.Seconds(), "p95": res.LagP95.Seconds(), "p99": res.LagP99.Seconds(), "max": res.LagMax.Seconds()}
	}
	return nil
}

// stride returns a step coprime with n, near n/3 so consecutive changes
// land in different namespaces and kinds.
func stride(n int) int {
	gcd := func(a, b int) int {
		for b != 0 {
			a, b = b, a%b
		}
		return a
	}
	for s := max(1, n/3+1); s < n; s++ {
		if gcd(s, n) == 1 {
			return s
		}
	}
	return 1
}
