// Package bqtest is an in-process fake of exactly the BigQuery REST
// endpoints the BigQuery sink calls, for tests and benchmarks: no BigQuery
// emulator builds here (they need ZetaSQL). It is driven through the
// official client, which must accept its answers.
//
// It keeps tables in memory and serves datasets.get, tables.get, insert
// and delete, jobs.insert (queries, dry runs and load jobs, uploaded in
// one multipart request or in resumable chunks), jobs.get and
// jobs.getQueryResults, and the OAuth token endpoint of a service-account
// key it issued (the JWT's signature is checked). A query is run only when
// it is one of the statement shapes the sink issues (statements.go): any
// other text fails the job, so SQL the sink starts sending that the fake
// does not know fails the tests instead of passing unseen. The fake
// records every statement with its parameters for tests to assert on.
//
// What it cannot prove is listed in docs/sinks.md: real BigQuery's SQL
// dialect, type coercions, quotas, DML concurrency and job latency.
package bqtest

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	bq "google.golang.org/api/bigquery/v2"

	"kollect.dev/kollect/internal/sinktest"
)

// Server is a running fake.
type Server struct {
	// URL is the API root to give the sink as its endpoint.
	URL string
	srv *sinktest.Server

	mu       sync.Mutex
	datasets map[string]*dataset // project.dataset
	jobs     map[string]*job
	uploads  map[string]*bq.Job // resumable upload sessions
	media    map[string][]byte
	accounts map[string]*account // client_email
	tokens   map[string]time.Time
	auth     bool
	log      []Statement
	version  int64
	// dmlTakes is how long a statement that changes a table runs (0: it
	// is done when inserted); running and mostRunning count, per table,
	// the statements running now and the most that ever ran at once.
	dmlTakes time.Duration
	// refuse fails a load job holding a row of these inventory
	// namespaces (RefuseRowsOf); loads counts the load jobs run.
	refuse      []string
	loads       int
	running     map[string]int
	mostRunning map[string]int
}

type dataset struct {
	meta   *bq.Dataset
	tables map[string]*table
}

type table struct {
	meta *bq.Table
	rows []Row
}

// Row is a row of a table: column values (STRING as string, JSON as its
// canonical text, TIMESTAMP as time.Time) and Version, which changes
// whenever the row is written.
type Row struct {
	Values  map[string]any
	Version int64
}

// Statement is a query the fake received.
type Statement struct {
	SQL    string
	Params map[string]Param
	DryRun bool
}

// Param is a query parameter's type and value as sent.
type Param struct {
	Type, Value string
	Values      []string // an ARRAY parameter's elements
}

// Start serves the fake on a loopback port; it stops when the test ends.
func Start(tb testing.TB) *Server {
	tb.Helper()
	s := &Server{datasets: map[string]*dataset{}, jobs: map[string]*job{}, uploads: map[string]*bq.Job{},
		media: map[string][]byte{}, accounts: map[string]*account{}, tokens: map[string]time.Time{},
		running: map[string]int{}, mostRunning: map[string]int{}}
	srv, err := sinktest.Serve(s.handler())
	if err != nil {
		tb.Fatalf("bqtest: %v", err)
	}
	s.srv, s.URL = srv, "http://"+srv.Addr
	tb.Cleanup(srv.Stop)
	return s
}

// Stop takes the server down; Restart brings it back with its data.
func (s *Server) Stop()          { s.srv.Stop() }
func (s *Server) Restart() error { return s.srv.Restart() }

// Addr is host:port, as BIGQUERY_EMULATOR_HOST names an emulator.
func (s *Server) Addr() string { return s.srv.Addr }

// CreateDataset makes a dataset exist (the sink never creates one).
func (s *Server) CreateDataset(project, name, location string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.datasets[project+"."+name] = &dataset{tables: map[string]*table{}, meta: &bq.Dataset{
		Id: project + ":" + name, Location: location, Kind: "bigquery#dataset",
		DatasetReference: &bq.DatasetReference{ProjectId: project, DatasetId: name}}}
}

// Table returns a table's metadata and rows, or false.
func (s *Server) Table(project, ds, name string) (*bq.Table, []Row, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.table(project, ds, name)
	if t == nil {
		return nil, nil, false
	}
	out := make([]Row, len(t.rows))
	copy(out, t.rows)
	return t.meta, out, true
}

// Tables lists a dataset's tables.
func (s *Server) Tables(project, ds string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	if d := s.datasets[project+"."+ds]; d != nil {
		for name := range d.tables {
			out = append(out, name)
		}
	}
	return out
}

// StatementsTake makes every statement that changes a table run for d
// before it is done, as BigQuery's DML jobs take seconds: a caller that
// stops waiting leaves it running.
func (s *Server) StatementsTake(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dmlTakes = d
}

// RefuseRowsOf makes every load job holding a row whose
// inventory_namespace is ns fail as BigQuery fails a row it cannot take
// (too large, a value it cannot parse): the whole job, reason invalid.
func (s *Server) RefuseRowsOf(ns string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refuse = append(s.refuse, ns)
}

// Loads is how many load jobs ran.
func (s *Server) Loads() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.loads
}

// MostRunning is the most statements that changed table
// (project.dataset.table) at once.
func (s *Server) MostRunning(table string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mostRunning[table]
}

// Statements returns the queries received so far.
func (s *Server) Statements() []Statement {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Statement(nil), s.log...)
}

func (s *Server) table(project, ds, name string) *table {
	if d := s.datasets[project+"."+ds]; d != nil {
		return d.tables[name]
	}
	return nil
}

func (s *Server) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /token", s.token)
	api := http.NewServeMux()
	api.HandleFunc("GET /bigquery/v2/projects/{p}/datasets/{d}", s.getDataset)
	api.HandleFunc("GET /bigquery/v2/projects/{p}/datasets/{d}/tables/{t}", s.getTable)
	api.HandleFunc("POST /bigquery/v2/projects/{p}/datasets/{d}/tables", s.insertTable)
	api.HandleFunc("DELETE /bigquery/v2/projects/{p}/datasets/{d}/tables/{t}", s.deleteTable)
	api.HandleFunc("POST /bigquery/v2/projects/{p}/jobs", s.insertJob)
	api.HandleFunc("GET /bigquery/v2/projects/{p}/jobs/{j}", s.getJob)
	api.HandleFunc("GET /bigquery/v2/projects/{p}/queries/{j}", s.getQueryResults)
	api.HandleFunc("POST /upload/bigquery/v2/projects/{p}/jobs", s.upload)
	mux.Handle("/", s.authorized(api))
	return mux
}

func (s *Server) getDataset(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.datasets[r.PathValue("p")+"."+r.PathValue("d")]
	if d == nil {
		fail(w, http.StatusNotFound, "notFound", "Not found: Dataset "+r.PathValue("p")+":"+r.PathValue("d"))
		return
	}
	reply(w, d.meta)
}

func (s *Server) getTable(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.table(r.PathValue("p"), r.PathValue("d"), r.PathValue("t"))
	if t == nil {
		fail(w, http.StatusNotFound, "notFound", "Not found: Table "+r.PathValue("p")+":"+r.PathValue("d")+"."+r.PathValue("t"))
		return
	}
	meta := *t.meta
	meta.NumRows = uint64(len(t.rows))
	reply(w, &meta)
}

func (s *Server) insertTable(w http.ResponseWriter, r *http.Request) {
	var t bq.Table
	if err := json.NewDecoder(r.Body).Decode(&t); err != nil || t.TableReference == nil || t.Schema == nil {
		fail(w, http.StatusBadRequest, "invalid", fmt.Sprintf("table resource: %v", err))
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.datasets[r.PathValue("p")+"."+r.PathValue("d")]
	switch {
	case d == nil:
		fail(w, http.StatusNotFound, "notFound", "Not found: Dataset "+r.PathValue("p")+":"+r.PathValue("d"))
	case d.tables[t.TableReference.TableId] != nil:
		fail(w, http.StatusConflict, "duplicate", "Already Exists: Table "+t.TableReference.TableId)
	default:
		if err := checkSchema(&t); err != nil {
			fail(w, http.StatusBadRequest, "invalid", err.Error())
			return
		}
		t.Kind, t.Id = "bigquery#table", r.PathValue("p")+":"+r.PathValue("d")+"."+t.TableReference.TableId
		t.CreationTime = time.Now().UnixMilli()
		d.tables[t.TableReference.TableId] = &table{meta: &t}
		reply(w, &t)
	}
}

// checkSchema refuses what BigQuery refuses of a new table's layout:
// partitioning on a column that is not a TIMESTAMP or DATE, clustering on
// more than four columns or on a column it lacks.
func checkSchema(t *bq.Table) error {
	cols := map[string]string{}
	for _, f := range t.Schema.Fields {
		cols[f.Name] = f.Type
	}
	if p := t.TimePartitioning; p != nil && p.Field != "" {
		if typ := cols[p.Field]; typ != "TIMESTAMP" && typ != "DATE" && typ != "DATETIME" {
			return fmt.Errorf("partitioning field %s must be TIMESTAMP, DATE or DATETIME, not %q", p.Field, typ)
		}
	}
	if c := t.Clustering; c != nil {
		if len(c.Fields) > 4 {
			return fmt.Errorf("at most 4 clustering fields, got %d", len(c.Fields))
		}
		for _, f := range c.Fields {
			if _, ok := cols[f]; !ok {
				return fmt.Errorf("clustering field %s is not a column", f)
			}
		}
	}
	return nil
}

func (s *Server) deleteTable(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.datasets[r.PathValue("p")+"."+r.PathValue("d")]
	if d == nil || d.tables[r.PathValue("t")] == nil {
		fail(w, http.StatusNotFound, "notFound", "Not found: Table "+r.PathValue("t"))
		return
	}
	delete(d.tables, r.PathValue("t"))
	w.WriteHeader(http.StatusNoContent)
}

func reply(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// fail answers with Google's JSON error format.
func fail(w http.ResponseWriter, code int, reason, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{
		"code": code, "message": msg, "errors": []map[string]string{{"reason": reason, "message": msg}},
	}})
}

func newID() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func splitTable(path string) (project, ds, name string, ok bool) {
	parts := strings.Split(path, ".")
	if len(parts) != 3 {
		return "", "", "", false
	}
	return parts[0], parts[1], parts[2], true
}
