package readapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

// watch streams server-sent events: first an `inventory` frame with the
// summary of what f selects now, then one for each inventory whose rows
// change, carrying that inventory's summary under f. Changes that arrive
// while a frame is written fold into the next frame of their inventory,
// so a slow reader sees every inventory's latest state, never a queue.
func (s *Server) watch(w http.ResponseWriter, r *http.Request) {
	f, ok := s.filter(w, r)
	if !ok {
		return
	}
	flusher, ok := w.(http.Flusher)
	if !ok {
		s.fail(w, http.StatusInternalServerError, fmt.Errorf("this connection cannot stream"))
		return
	}
	watcher, stop := s.Store.Watch() // before the first frame: no change falls between
	defer stop()
	states, ok := s.states(r.Context(), w)
	if !ok {
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	if err := frame(w, summarize(states, f)); err != nil {
		return
	}
	flusher.Flush()
	beat := s.Heartbeat
	if beat <= 0 {
		beat = 25 * time.Second
	}
	ticker := time.NewTicker(beat)
	defer ticker.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-ticker.C:
			if _, err := fmt.Fprint(w, ": heartbeat\n\n"); err != nil {
				return
			}
		case <-watcher.Changed():
			for _, ref := range watcher.Take() {
				st := s.Store.Get(ref)
				if st == nil || !f.selects(ref) {
					continue
				}
				one := f
				one.Cluster, one.Namespace, one.Inventory = ref.Cluster, ref.Namespace, ref.Name
				if err := frame(w, summarize([]*State{st}, one)); err != nil {
					return
				}
			}
		}
		flusher.Flush()
	}
}

// frame writes one `inventory` event carrying v.
func frame(w http.ResponseWriter, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "event: inventory\ndata: %s\n\n", data)
	return err
}
