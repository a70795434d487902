package bqtest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	bq "google.golang.org/api/bigquery/v2"
)

// job is a finished job: its resource, and its result for queries.
type job struct {
	resource *bq.Job
	schema   *bq.TableSchema
	rows     []*bq.TableRow
	failure  *bq.ErrorProto
}

// jobError is a job's failure: a reason BigQuery uses and a message.
type jobError struct{ reason, msg string }

func (e *jobError) Error() string { return e.msg }

func errorf(reason, format string, args ...any) *jobError {
	return &jobError{reason: reason, msg: fmt.Sprintf(format, args...)}
}

func (s *Server) insertJob(w http.ResponseWriter, r *http.Request) {
	var in bq.Job
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil || in.Configuration == nil || in.Configuration.Query == nil {
		fail(w, http.StatusBadRequest, "invalid", "the fake runs query jobs here; load jobs come through the upload endpoint")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	project := r.PathValue("p")
	if s.duplicate(w, project, &in) {
		return
	}
	run := func(j *job) (*bq.JobStatistics, *jobError) { return s.query(project, &in, j) }
	if table, ok := mutates(in.Configuration); ok && s.dmlTakes > 0 {
		reply(w, s.start(project, &in, table, run).resource)
		return
	}
	reply(w, s.finish(project, &in, run).resource)
}

// duplicate refuses a job whose id names one that exists, as BigQuery does
// (409 Already Exists): a client that retries a start whose answer was lost
// gets this, not a second job.
func (s *Server) duplicate(w http.ResponseWriter, project string, in *bq.Job) bool {
	if in.JobReference == nil || in.JobReference.JobId == "" || s.jobs[in.JobReference.JobId] == nil {
		return false
	}
	fail(w, http.StatusConflict, "duplicate", "Already Exists: Job "+project+":"+in.JobReference.JobId)
	return true
}

// mutates reports whether a query job changes a table, and which: its
// statement names it first.
func mutates(c *bq.JobConfiguration) (string, bool) {
	if c.DryRun || c.Query == nil {
		return "", false
	}
	text := strings.TrimSpace(c.Query.Query)
	if strings.HasPrefix(text, "SELECT") {
		return "", false
	}
	_, rest, _ := strings.Cut(text, "`")
	table, _, _ := strings.Cut(rest, "`")
	return table, true
}

// start runs a statement that changes table as BigQuery does: the job is
// RUNNING for dmlTakes, then done, whether or not anyone still waits for
// it. It counts the statements running on each table at once.
func (s *Server) start(project string, in *bq.Job, table string, run func(*job) (*bq.JobStatistics, *jobError)) *job {
	if in.JobReference == nil {
		in.JobReference = &bq.JobReference{ProjectId: project}
	}
	if in.JobReference.JobId == "" {
		in.JobReference.JobId = newID()
	}
	id := in.JobReference.JobId
	now := time.Now().UnixMilli()
	j := &job{resource: &bq.Job{Kind: "bigquery#job", Id: project + ":" + id, JobReference: in.JobReference,
		Configuration: in.Configuration, Status: &bq.JobStatus{State: "RUNNING"},
		Statistics: &bq.JobStatistics{CreationTime: now, StartTime: now}}}
	s.jobs[id] = j
	s.running[table]++
	s.mostRunning[table] = max(s.mostRunning[table], s.running[table])
	time.AfterFunc(s.dmlTakes, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.running[table]--
		s.finish(project, in, run)
	})
	return j
}

// finish runs a job and records it as done (dry runs are not recorded).
func (s *Server) finish(project string, in *bq.Job, run func(*job) (*bq.JobStatistics, *jobError)) *job {
	ref := in.JobReference
	if ref == nil {
		ref = &bq.JobReference{ProjectId: project}
	}
	if ref.JobId == "" {
		ref.JobId = newID()
	}
	now := time.Now().UnixMilli()
	j := &job{resource: &bq.Job{Kind: "bigquery#job", Id: project + ":" + ref.JobId, JobReference: ref,
		Configuration: in.Configuration, Status: &bq.JobStatus{State: "DONE"}}}
	stats, err := run(j)
	if stats == nil {
		stats = &bq.JobStatistics{}
	}
	stats.CreationTime, stats.StartTime, stats.EndTime = now, now, time.Now().UnixMilli()
	j.resource.Statistics = stats
	if err != nil {
		j.failure = &bq.ErrorProto{Reason: err.reason, Message: err.msg}
		j.resource.Status.ErrorResult = j.failure
		j.resource.Status.Errors = []*bq.ErrorProto{j.failure}
	}
	if !in.Configuration.DryRun {
		s.jobs[ref.JobId] = j
	}
	return j
}

func (s *Server) getJob(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	j := s.jobs[r.PathValue("j")]
	if j == nil {
		fail(w, http.StatusNotFound, "notFound", "Not found: Job "+r.PathValue("j"))
		return
	}
	reply(w, j.resource)
}

func (s *Server) getQueryResults(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	j := s.jobs[r.PathValue("j")]
	switch {
	case j == nil:
		fail(w, http.StatusNotFound, "notFound", "Not found: Job "+r.PathValue("j"))
		return
	case j.failure != nil:
		fail(w, http.StatusBadRequest, j.failure.Reason, j.failure.Message)
		return
	case j.resource.Configuration.Query == nil:
		fail(w, http.StatusBadRequest, "invalid", "not a query job")
		return
	case j.resource.Status.State != "DONE":
		reply(w, &bq.GetQueryResultsResponse{Kind: "bigquery#getQueryResultsResponse", JobReference: j.resource.JobReference})
		return
	}
	res := &bq.GetQueryResultsResponse{Kind: "bigquery#getQueryResultsResponse", JobReference: j.resource.JobReference,
		JobComplete: true, Schema: j.schema, TotalRows: uint64(len(j.rows))}
	if q := j.resource.Statistics.Query; q != nil {
		res.NumDmlAffectedRows = q.NumDmlAffectedRows
	}
	if r.URL.Query().Get("maxResults") != "0" {
		res.Rows = j.rows
	}
	reply(w, res)
}

// upload takes a load job with its data: in one multipart request, or
// resumable (a session, then chunks).
func (s *Server) upload(w http.ResponseWriter, r *http.Request) {
	project := r.PathValue("p")
	switch q := r.URL.Query(); {
	case q.Get("uploadType") == "multipart":
		in, media, err := readMultipart(r)
		if err != nil {
			fail(w, http.StatusBadRequest, "invalid", err.Error())
			return
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.duplicate(w, project, in) {
			return
		}
		reply(w, s.finish(project, in, func(*job) (*bq.JobStatistics, *jobError) { return s.load(project, in, media) }).resource)
	case q.Get("uploadType") == "resumable" && q.Get("upload_id") == "":
		var in bq.Job
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
			fail(w, http.StatusBadRequest, "invalid", err.Error())
			return
		}
		id := newID()
		s.mu.Lock()
		s.uploads[id] = &in
		s.media[id] = nil
		s.mu.Unlock()
		w.Header().Set("Location", s.URL+r.URL.Path+"?uploadType=resumable&upload_id="+id)
		w.WriteHeader(http.StatusOK)
	case q.Get("uploadType") == "resumable":
		s.chunk(w, r, project, q.Get("upload_id"))
	default:
		fail(w, http.StatusBadRequest, "invalid", "uploadType must be multipart or resumable")
	}
}

// chunk appends one chunk of a resumable upload; the last one runs the job.
func (s *Server) chunk(w http.ResponseWriter, r *http.Request, project, id string) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		fail(w, http.StatusBadRequest, "invalid", err.Error())
		return
	}
	// Content-Range: bytes first-last/total, bytes first-last/*, bytes */total
	spec, ok := strings.CutPrefix(r.Header.Get("Content-Range"), "bytes ")
	rng, total, _ := strings.Cut(spec, "/")
	s.mu.Lock()
	defer s.mu.Unlock()
	in := s.uploads[id]
	if !ok || in == nil {
		fail(w, http.StatusBadRequest, "invalid", "unknown upload session or Content-Range")
		return
	}
	if rng != "*" {
		first, _, _ := strings.Cut(rng, "-")
		if off, err := strconv.Atoi(first); err != nil || off != len(s.media[id]) {
			fail(w, http.StatusBadRequest, "invalid", fmt.Sprintf("chunk at %s, the session holds %d bytes", first, len(s.media[id])))
			return
		}
		s.media[id] = append(s.media[id], body...)
	}
	if total == "*" {
		w.Header().Set("X-Http-Status-Code-Override", "308")
		w.Header().Set("Range", fmt.Sprintf("bytes=0-%d", len(s.media[id])-1))
		w.WriteHeader(http.StatusOK)
		return
	}
	if n, err := strconv.Atoi(total); err != nil || n != len(s.media[id]) {
		fail(w, http.StatusBadRequest, "invalid", fmt.Sprintf("upload of %s bytes holds %d", total, len(s.media[id])))
		return
	}
	media := s.media[id]
	delete(s.uploads, id)
	delete(s.media, id)
	if s.duplicate(w, project, in) {
		return
	}
	reply(w, s.finish(project, in, func(*job) (*bq.JobStatistics, *jobError) { return s.load(project, in, media) }).resource)
}

func readMultipart(r *http.Request) (*bq.Job, []byte, error) {
	_, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil {
		return nil, nil, err
	}
	mr := multipart.NewReader(r.Body, params["boundary"])
	var parts [][]byte
	for {
		p, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, nil, err
		}
		b, err := io.ReadAll(p)
		if err != nil {
			return nil, nil, err
		}
		parts = append(parts, b)
	}
	if len(parts) != 2 {
		return nil, nil, fmt.Errorf("a multipart upload has the job and the data, got %d parts", len(parts))
	}
	var in bq.Job
	if err := json.Unmarshal(parts[0], &in); err != nil {
		return nil, nil, err
	}
	return &in, parts[1], nil
}

// load runs a load job of NDJSON data, checking each line against the
// schema as BigQuery does: unknown fields, missing required fields and
// values of the wrong type fail the job.
func (s *Server) load(project string, in *bq.Job, media []byte) (*bq.JobStatistics, *jobError) {
	cfg := in.Configuration.Load
	if cfg == nil || cfg.DestinationTable == nil {
		return nil, errorf("invalid", "a load job needs a destination table")
	}
	if cfg.SourceFormat != "NEWLINE_DELIMITED_JSON" {
		return nil, errorf("invalid", "the fake loads NEWLINE_DELIMITED_JSON, not %q", cfg.SourceFormat)
	}
	dst := cfg.DestinationTable
	d := s.datasets[dst.ProjectId+"."+dst.DatasetId]
	if d == nil {
		return nil, errorf("notFound", "Not found: Dataset %s:%s", dst.ProjectId, dst.DatasetId)
	}
	if err := s.inLocation(in, d); err != nil {
		return nil, err
	}
	t := d.tables[dst.TableId]
	switch {
	case t == nil && cfg.CreateDisposition == "CREATE_IF_NEEDED":
		if cfg.Schema == nil {
			return nil, errorf("invalid", "no schema for a new table")
		}
		t = &table{meta: &bq.Table{Kind: "bigquery#table", Schema: cfg.Schema,
			TableReference: &bq.TableReference{ProjectId: dst.ProjectId, DatasetId: dst.DatasetId, TableId: dst.TableId}}}
	case t == nil:
		return nil, errorf("notFound", "Not found: Table %s", dst.TableId)
	case cfg.WriteDisposition == "WRITE_EMPTY" && len(t.rows) > 0:
		return nil, errorf("duplicate", "Already Exists: Table %s is not empty", dst.TableId)
	}
	schema := t.meta.Schema
	if cfg.Schema != nil {
		schema = cfg.Schema
	}
	s.loads++
	var loaded []Row
	dec := json.NewDecoder(bytes.NewReader(media))
	dec.UseNumber()
	for line := 1; dec.More(); line++ {
		var v map[string]any
		if err := dec.Decode(&v); err != nil {
			return nil, errorf("invalid", "line %d: %v", line, err)
		}
		row, err := typed(schema, v, cfg.IgnoreUnknownValues)
		if err != nil {
			return nil, errorf("invalid", "line %d: %s", line, err)
		}
		if ns, _ := row["inventory_namespace"].(string); slices.Contains(s.refuse, ns) {
			return nil, errorf("invalid", "line %d: the row is refused (RefuseRowsOf %s)", line, ns)
		}
		s.version++
		loaded = append(loaded, Row{Values: row, Version: s.version})
	}
	if cfg.WriteDisposition == "WRITE_TRUNCATE" {
		t.rows, t.meta.Schema = nil, schema
	}
	t.rows = append(t.rows, loaded...)
	d.tables[dst.TableId] = t
	return &bq.JobStatistics{Load: &bq.JobStatistics3{OutputRows: int64(len(loaded)), InputFileBytes: int64(len(media))}}, nil
}

// typed checks one NDJSON object against a schema of STRING columns (the
// only type the sink loads) and returns its values.
func typed(schema *bq.TableSchema, v map[string]any, ignoreUnknown bool) (map[string]any, error) {
	out := map[string]any{}
	cols := map[string]*bq.TableFieldSchema{}
	for _, f := range schema.Fields {
		cols[f.Name] = f
	}
	for k, val := range v {
		f := cols[k]
		switch {
		case f == nil && ignoreUnknown:
			continue
		case f == nil:
			return nil, fmt.Errorf("no such field: %s", k)
		case val == nil:
			continue
		case f.Type != "STRING":
			return nil, fmt.Errorf("the fake loads STRING columns, not %s (%s)", f.Type, k)
		}
		str, ok := val.(string)
		if !ok {
			return nil, fmt.Errorf("field %s: %v is not a string", k, val)
		}
		out[k] = str
	}
	for _, f := range schema.Fields {
		if _, ok := out[f.Name]; !ok && f.Mode == "REQUIRED" {
			return nil, fmt.Errorf("missing required field: %s", f.Name)
		}
	}
	return out, nil
}

// inLocation refuses a job whose location is not its dataset's, as
// BigQuery answers "not found in location".
func (s *Server) inLocation(in *bq.Job, d *dataset) *jobError {
	if ref := in.JobReference; ref != nil && ref.Location != "" && d.meta.Location != "" && !strings.EqualFold(ref.Location, d.meta.Location) {
		return errorf("notFound", "Not found: Dataset %s was not found in location %s", d.meta.Id, ref.Location)
	}
	return nil
}
