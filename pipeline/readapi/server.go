package readapi

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	kollectv1alpha1 "kollect.dev/kollect/api/v1alpha1"
	"kollect.dev/kollect/model/rows"
)

// Server answers the read API's routes.
type Server struct {
	Store *Store
	// Reader reads KollectInventories and KollectTargets (the manager's
	// cache): the status routes, and which inventories exist.
	Reader client.Reader
	Auth   Authorizer
	Log    logr.Logger
	// Heartbeat spaces the comments a watch sends while nothing changes,
	// so proxies keep the stream open; 0 is 25 seconds.
	Heartbeat time.Duration
}

//go:embed openapi.json
var openAPI []byte

// Routes are the routes the server answers, in the OpenAPI document's
// words (a test checks that each is documented).
var Routes = []string{
	"/v1alpha1/inventory", "/v1alpha1/inventory/watch", "/v1alpha1/inventory/{namespace}/{name}",
	"/v1alpha1/status/inventories", "/v1alpha1/status/targets", "/inventory", "/inventory/watch", "/v1alpha1/openapi.json",
}

// Handler returns the routes.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1alpha1/inventory", s.list)
	mux.HandleFunc("GET /inventory", s.list)
	mux.HandleFunc("GET /v1alpha1/inventory/watch", s.watch)
	mux.HandleFunc("GET /inventory/watch", s.watch)
	mux.HandleFunc("GET /v1alpha1/inventory/{namespace}/{name}", s.get)
	mux.HandleFunc("GET /v1alpha1/status/inventories", s.inventoryStatus)
	mux.HandleFunc("GET /v1alpha1/status/targets", s.targetStatus)
	mux.HandleFunc("GET /v1alpha1/openapi.json", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(openAPI)
	})
	return mux
}

// Runnable serves the routes on addr in the manager, on every replica:
// status routes answer anywhere, inventory routes where the engine runs.
func (s *Server) Runnable(addr string) manager.Runnable {
	return &manager.Server{Name: "inventory-http", Server: &http.Server{Addr: addr, Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second}}
}

func (s *Server) list(w http.ResponseWriter, r *http.Request) {
	f, ok := s.filter(w, r)
	if !ok {
		return
	}
	states, ok := s.states(r.Context(), w)
	if ok {
		s.write(w, http.StatusOK, summarize(states, f))
	}
}

func (s *Server) get(w http.ResponseWriter, r *http.Request) {
	ns, name := r.PathValue("namespace"), r.PathValue("name")
	if !s.allow(w, r, Access{Verb: "get", Resource: "kollectinventories", Namespace: ns, Name: name}) || !s.leading(w) {
		return
	}
	f, err := parseFilter(r.URL.Query())
	if err != nil {
		s.fail(w, http.StatusBadRequest, err)
		return
	}
	var inv kollectv1alpha1.KollectInventory
	if err := s.Reader.Get(r.Context(), client.ObjectKey{Namespace: ns, Name: name}, &inv); err != nil {
		s.fail(w, status(err), err)
		return
	}
	st := s.Store.Get(Ref{Cluster: s.Store.cluster, Namespace: ns, Name: name})
	if st == nil {
		st = &State{Ref: Ref{Cluster: s.Store.cluster, Namespace: ns, Name: name}} // not built yet
	}
	s.write(w, http.StatusOK, single(st, f))
}

// filter authorizes a list or watch and reads its query.
func (s *Server) filter(w http.ResponseWriter, r *http.Request) (Filter, bool) {
	f, err := parseFilter(r.URL.Query())
	if err != nil {
		s.fail(w, http.StatusBadRequest, err)
		return f, false
	}
	return f, s.allow(w, r, Access{Verb: "list", Resource: "kollectinventories", Namespace: f.Namespace}) && s.leading(w)
}

// states returns the stored states of inventories that exist, and forgets
// those of inventories deleted since.
func (s *Server) states(ctx context.Context, w http.ResponseWriter) ([]*State, bool) {
	var list kollectv1alpha1.KollectInventoryList
	if err := s.Reader.List(ctx, &list); err != nil {
		s.fail(w, http.StatusServiceUnavailable, err)
		return nil, false
	}
	exist := map[Ref]bool{}
	for _, inv := range list.Items {
		exist[Ref{Cluster: s.Store.cluster, Namespace: inv.Namespace, Name: inv.Name}] = true
	}
	s.Store.Forget(func(ref Ref) bool { return ref.Cluster == s.Store.cluster && !exist[ref] })
	return s.Store.List(), true
}

// StatusItem is one object's status on the status routes.
type StatusItem struct {
	Name               string             `json:"name"`
	Namespace          string             `json:"namespace"`
	Generation         int64              `json:"generation"`
	ObservedGeneration int64              `json:"observedGeneration"`
	ItemCount          int64              `json:"itemCount"`
	Conditions         []metav1.Condition `json:"conditions"`
	LastExportTime     *metav1.Time       `json:"lastExportTime,omitempty"`
}

// StatusList is the status routes' JSON.
type StatusList struct {
	SchemaVersion string       `json:"schemaVersion"`
	Items         []StatusItem `json:"items"`
}

func (s *Server) inventoryStatus(w http.ResponseWriter, r *http.Request) {
	ns := r.URL.Query().Get("namespace")
	if !s.allow(w, r, Access{Verb: "list", Resource: "kollectinventories", Namespace: ns}) {
		return
	}
	var list kollectv1alpha1.KollectInventoryList
	if err := s.Reader.List(r.Context(), &list, client.InNamespace(ns)); err != nil {
		s.fail(w, http.StatusServiceUnavailable, err)
		return
	}
	out := StatusList{SchemaVersion: rows.SchemaVersion, Items: []StatusItem{}}
	for _, inv := range list.Items {
		out.Items = append(out.Items, StatusItem{Name: inv.Name, Namespace: inv.Namespace, Generation: inv.Generation,
			ObservedGeneration: inv.Status.ObservedGeneration, ItemCount: int64(inv.Status.ItemCount), Conditions: nonNil(inv.Status.Conditions),
			LastExportTime: inv.Status.LastExportTime})
	}
	s.write(w, http.StatusOK, out)
}

func (s *Server) targetStatus(w http.ResponseWriter, r *http.Request) {
	ns := r.URL.Query().Get("namespace")
	if !s.allow(w, r, Access{Verb: "list", Resource: "kollecttargets", Namespace: ns}) {
		return
	}
	var list kollectv1alpha1.KollectTargetList
	if err := s.Reader.List(r.Context(), &list, client.InNamespace(ns)); err != nil {
		s.fail(w, http.StatusServiceUnavailable, err)
		return
	}
	out := StatusList{SchemaVersion: rows.SchemaVersion, Items: []StatusItem{}}
	for _, t := range list.Items {
		item := StatusItem{Name: t.Name, Namespace: t.Namespace, Generation: t.Generation,
			ObservedGeneration: t.Status.ObservedGeneration, Conditions: nonNil(t.Status.Conditions)}
		if t.Status.CollectedCount != nil {
			item.ItemCount = *t.Status.CollectedCount
		}
		out.Items = append(out.Items, item)
	}
	s.write(w, http.StatusOK, out)
}

func nonNil(c []metav1.Condition) []metav1.Condition {
	if c == nil {
		return []metav1.Condition{}
	}
	return c
}

// allow asks the authorizer; a refusal is answered here.
func (s *Server) allow(w http.ResponseWriter, r *http.Request, a Access) bool {
	err := s.Auth.Allow(r.Context(), r, a)
	switch {
	case err == nil:
		return true
	case errors.Is(err, errUnauthenticated):
		w.Header().Set("WWW-Authenticate", `Bearer realm="kollect"`)
		s.fail(w, http.StatusUnauthorized, err)
	case errors.Is(err, errForbidden):
		s.fail(w, http.StatusForbidden, err)
	default:
		s.Log.Error(err, "cannot authorize a read API request", "path", r.URL.Path)
		s.fail(w, http.StatusServiceUnavailable, err)
	}
	return false
}

// leading answers 503 on a replica whose engine does not run.
func (s *Server) leading(w http.ResponseWriter) bool {
	if s.Store.Leading() {
		return true
	}
	w.Header().Set("Retry-After", "5")
	s.fail(w, http.StatusServiceUnavailable, errors.New("this replica does not run the collection engine (another replica leads): retry"))
	return false
}

func status(err error) int {
	if client.IgnoreNotFound(err) == nil {
		return http.StatusNotFound
	}
	return http.StatusServiceUnavailable
}

func (s *Server) fail(w http.ResponseWriter, code int, err error) {
	s.write(w, code, map[string]string{"error": err.Error()})
}

func (s *Server) write(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	if err := json.NewEncoder(w).Encode(v); err != nil {
		s.Log.V(1).Info("a read API response was cut short", "error", err.Error())
	}
}
