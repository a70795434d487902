package bqtest

import (
	"encoding/json"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	bq "google.golang.org/api/bigquery/v2"
)

// The statements the fake runs: the shapes the sink issues, whitespace
// aside. {T} is a backtick-quoted table path, {SCOPE} the condition on an
// export's inventory and cluster. Anything else fails the job.
const (
	scope = "t.inventory_namespace = @inventory_namespace AND t.inventory_name = @inventory_name AND t.cluster = @cluster"
	parse = "PARSE_JSON(s.payload, wide_number_mode => 'round')"

	mergeShape = "MERGE {T} AS t USING (SELECT target_name, source_uid, resource_namespace, payload FROM {T} WHERE op = 'upsert') AS s " +
		"ON {SCOPE} AND t.target_name = s.target_name AND t.source_uid = s.source_uid " +
		"WHEN MATCHED AND (TO_JSON_STRING(t.payload) != TO_JSON_STRING(" + parse + ") OR t.resource_namespace != s.resource_namespace) THEN " +
		"UPDATE SET payload = " + parse + ", resource_namespace = s.resource_namespace, exported_at = @exported_at " +
		"WHEN NOT MATCHED BY TARGET THEN INSERT (inventory_namespace, inventory_name, target_name, source_uid, cluster, resource_namespace, payload, exported_at) " +
		"VALUES (@inventory_namespace, @inventory_name, s.target_name, s.source_uid, @cluster, s.resource_namespace, " + parse + ", @exported_at)"
	deleteStagedShape = "DELETE FROM {T} AS t WHERE {SCOPE} AND EXISTS (SELECT 1 FROM {T} AS s WHERE s.op = 'delete' " +
		"AND s.target_name = t.target_name AND s.source_uid = t.source_uid)"
	deleteUnstagedShape = "DELETE FROM {T} AS t WHERE {SCOPE} AND NOT EXISTS (SELECT 1 FROM {T} AS s " +
		"WHERE s.target_name = t.target_name AND s.source_uid = t.source_uid)"
	deleteAllShape = "DELETE FROM {T} AS t WHERE {SCOPE}"
	// keepShape ends a delete that leaves the kept targets' rows alone.
	keepShape  = " AND t.target_name NOT IN UNNEST(@kept_targets)"
	countShape = "SELECT COUNT(*) AS n FROM {T} AS t WHERE {SCOPE}"

	// The writer records: one row per sink table, cluster and inventory.
	writerKey         = "{SCOPE} AND t.sink_table = @sink_table"
	writerReadShape   = "SELECT writer FROM {T} AS t WHERE " + writerKey
	writerDeleteShape = "DELETE FROM {T} AS t WHERE " + writerKey
	writerSetShape    = "MERGE {T} AS t USING (SELECT 1) AS s ON " + writerKey + " " +
		"WHEN MATCHED THEN UPDATE SET writer = @writer, updated_at = CURRENT_TIMESTAMP() " +
		"WHEN NOT MATCHED THEN INSERT (sink_table, cluster, inventory_namespace, inventory_name, writer, updated_at) " +
		"VALUES (@sink_table, @cluster, @inventory_namespace, @inventory_name, @writer, CURRENT_TIMESTAMP())"
)

type statement struct {
	re     *regexp.Regexp
	kind   string // the statement type BigQuery reports
	params []string
	run    func(s *Server, x *execution) *jobError
}

var (
	scopeParams = []string{"cluster", "inventory_name", "inventory_namespace"}
	statements  = []statement{
		{compile(mergeShape), "MERGE", append(slices.Clone(scopeParams), "exported_at"), (*Server).merge},
		{compile(deleteStagedShape), "DELETE", scopeParams, func(s *Server, x *execution) *jobError { return s.deleteWhere(x, true) }},
		{compile(deleteUnstagedShape), "DELETE", scopeParams, func(s *Server, x *execution) *jobError { return s.deleteWhere(x, false) }},
		{compile(deleteAllShape), "DELETE", scopeParams, func(s *Server, x *execution) *jobError { return s.deleteWhere(x, false) }},
		{compile(deleteUnstagedShape + keepShape), "DELETE", append(slices.Clone(scopeParams), "kept_targets"),
			func(s *Server, x *execution) *jobError { return s.deleteWhere(x, false) }},
		{compile(deleteAllShape + keepShape), "DELETE", append(slices.Clone(scopeParams), "kept_targets"),
			func(s *Server, x *execution) *jobError { return s.deleteWhere(x, false) }},
		{compile(countShape), "SELECT", scopeParams, (*Server).count},
		{compile(writerReadShape), "SELECT", append(slices.Clone(scopeParams), "sink_table"), (*Server).readWriter},
		{compile(writerDeleteShape), "DELETE", append(slices.Clone(scopeParams), "sink_table"), (*Server).deleteWriter},
		{compile(writerSetShape), "MERGE", append(slices.Clone(scopeParams), "sink_table", "writer"), (*Server).setWriter},
	}
)

func compile(shape string) *regexp.Regexp {
	pattern := regexp.QuoteMeta(shape)
	pattern = strings.ReplaceAll(pattern, regexp.QuoteMeta("{T}"), "`([^`]+)`")
	pattern = strings.ReplaceAll(pattern, regexp.QuoteMeta("{SCOPE}"), regexp.QuoteMeta(scope))
	return regexp.MustCompile("^" + pattern + "$")
}

// execution is one statement being run.
type execution struct {
	job      *job
	tables   []*table // in the order the statement names them
	ns, name string
	cluster  string
	at       time.Time
	params   map[string]Param
	affected int64
}

// query runs a query job: the probe's dry run, or one of the statements.
func (s *Server) query(project string, in *bq.Job, j *job) (*bq.JobStatistics, *jobError) {
	q := in.Configuration.Query
	st := Statement{SQL: q.Query, Params: map[string]Param{}, DryRun: in.Configuration.DryRun}
	for _, p := range q.QueryParameters {
		if p.ParameterType == nil || p.ParameterValue == nil {
			continue
		}
		par := Param{Type: p.ParameterType.Type, Value: p.ParameterValue.Value}
		if p.ParameterType.ArrayType != nil {
			par.Type = "ARRAY<" + p.ParameterType.ArrayType.Type + ">"
			for _, v := range p.ParameterValue.ArrayValues {
				par.Values = append(par.Values, v.Value)
			}
		}
		st.Params[p.Name] = par
	}
	s.log = append(s.log, st)
	if q.UseLegacySql == nil || *q.UseLegacySql {
		return nil, errorf("invalidQuery", "the sink must use GoogleSQL, not legacy SQL")
	}
	text := strings.Join(strings.Fields(q.Query), " ")
	if text == "SELECT 1" && st.DryRun {
		return &bq.JobStatistics{TotalBytesProcessed: 0, Query: &bq.JobStatistics2{StatementType: "SELECT"}}, nil
	}
	for _, stmt := range statements {
		m := stmt.re.FindStringSubmatch(text)
		if m == nil {
			continue
		}
		if got := slices.Sorted(maps.Keys(st.Params)); !slices.Equal(got, slices.Sorted(slices.Values(stmt.params))) {
			return nil, errorf("invalidQuery", "%s takes the parameters %v, got %v", stmt.kind, stmt.params, got)
		}
		x := &execution{job: j, params: st.Params}
		for _, path := range m[1:] {
			p, ds, name, ok := splitTable(path)
			if !ok {
				return nil, errorf("invalidQuery", "table %s is not project.dataset.table", path)
			}
			d := s.datasets[p+"."+ds]
			if d == nil {
				return nil, errorf("notFound", "Not found: Dataset %s:%s", p, ds)
			}
			if err := s.inLocation(in, d); err != nil {
				return nil, err
			}
			t := d.tables[name]
			if t == nil {
				return nil, errorf("notFound", "Not found: Table %s", path)
			}
			x.tables = append(x.tables, t)
		}
		if err := x.scope(st.Params); err != nil {
			return nil, err
		}
		if st.DryRun {
			return &bq.JobStatistics{Query: &bq.JobStatistics2{StatementType: stmt.kind}}, nil
		}
		if err := stmt.run(s, x); err != nil {
			return nil, err
		}
		stats := &bq.JobStatistics2{StatementType: stmt.kind}
		if stmt.kind != "SELECT" {
			stats.NumDmlAffectedRows = x.affected
		}
		return &bq.JobStatistics{Query: stats}, nil
	}
	return nil, errorf("invalidQuery", "the fake does not know this statement: %s", text)
}

// scope reads and type-checks the scope parameters.
func (x *execution) scope(params map[string]Param) *jobError {
	for _, name := range scopeParams {
		if params[name].Type != "STRING" {
			return errorf("invalidQuery", "parameter @%s must be a STRING, got %q", name, params[name].Type)
		}
	}
	x.ns, x.name, x.cluster = params["inventory_namespace"].Value, params["inventory_name"].Value, params["cluster"].Value
	if p, ok := params["exported_at"]; ok {
		if p.Type != "TIMESTAMP" {
			return errorf("invalidQuery", "parameter @exported_at must be a TIMESTAMP, got %q", p.Type)
		}
		at, err := parseTimestamp(p.Value)
		if err != nil {
			return errorf("invalidQuery", "parameter @exported_at: %v", err)
		}
		x.at = at
	}
	return nil
}

func parseTimestamp(v string) (time.Time, error) {
	var err error
	for _, layout := range []string{"2006-01-02 15:04:05.999999-07:00", "2006-01-02 15:04:05.999999Z07:00", time.RFC3339Nano} {
		var t time.Time
		if t, err = time.Parse(layout, v); err == nil {
			return t, nil
		}
	}
	return time.Time{}, err
}

// isWriter reports whether r is the writer record the statement names.
func (x *execution) isWriter(r Row) bool {
	return x.inScope(r) && r.Values["sink_table"] == x.params["sink_table"].Value
}

func (s *Server) readWriter(x *execution) *jobError {
	x.job.schema = &bq.TableSchema{Fields: []*bq.TableFieldSchema{{Name: "writer", Type: "STRING", Mode: "NULLABLE"}}}
	x.job.rows = nil
	for _, r := range x.tables[0].rows {
		if x.isWriter(r) {
			x.job.rows = append(x.job.rows, &bq.TableRow{F: []*bq.TableCell{{V: r.Values["writer"]}}})
		}
	}
	return nil
}

func (s *Server) deleteWriter(x *execution) *jobError {
	x.remove(x.tables[0], x.isWriter)
	return nil
}

func (s *Server) setWriter(x *execution) *jobError {
	t := x.tables[0]
	s.version++
	x.affected = 1
	for i, r := range t.rows {
		if x.isWriter(r) {
			values := maps.Clone(r.Values)
			values["writer"], values["updated_at"] = x.params["writer"].Value, time.Now().UTC()
			t.rows[i] = Row{Values: values, Version: s.version}
			return nil
		}
	}
	t.rows = append(t.rows, Row{Version: s.version, Values: map[string]any{"sink_table": x.params["sink_table"].Value, "cluster": x.cluster,
		"inventory_namespace": x.ns, "inventory_name": x.name, "writer": x.params["writer"].Value, "updated_at": time.Now().UTC()}})
	return nil
}

func (x *execution) inScope(r Row) bool {
	return r.Values["inventory_namespace"] == x.ns && r.Values["inventory_name"] == x.name && r.Values["cluster"] == x.cluster
}

type key struct{ target, uid any }

func keyOf(r Row) key { return key{r.Values["target_name"], r.Values["source_uid"]} }

// merge: staged upserts update rows whose content or namespace differs
// and insert the rest; a target row matched by two staged rows fails the
// job, as in BigQuery.
func (s *Server) merge(x *execution) *jobError {
	target, stage := x.tables[0], x.tables[1]
	sources := map[key][]Row{}
	var order []key
	for _, r := range stage.rows {
		if r.Values["op"] != "upsert" {
			continue
		}
		k := keyOf(r)
		if _, seen := sources[k]; !seen {
			order = append(order, k)
		}
		sources[k] = append(sources[k], r)
	}
	matched := map[key]bool{}
	for i, r := range target.rows {
		if !x.inScope(r) {
			continue
		}
		src := sources[keyOf(r)]
		if len(src) == 0 {
			continue
		}
		if len(src) > 1 {
			return errorf("invalidQuery", "UPDATE/MERGE must match at most one source row for each target row")
		}
		matched[keyOf(r)] = true
		payload, err := canonical(src[0].Values["payload"])
		if err != nil {
			return err
		}
		if payload == r.Values["payload"] && src[0].Values["resource_namespace"] == r.Values["resource_namespace"] {
			continue
		}
		s.version++
		values := maps.Clone(r.Values)
		values["payload"], values["resource_namespace"], values["exported_at"] = payload, src[0].Values["resource_namespace"], x.at
		target.rows[i] = Row{Values: values, Version: s.version}
		x.affected++
	}
	for _, k := range order {
		if matched[k] {
			continue
		}
		for _, src := range sources[k] { // unmatched source rows are all inserted
			payload, err := canonical(src.Values["payload"])
			if err != nil {
				return err
			}
			s.version++
			target.rows = append(target.rows, Row{Version: s.version, Values: map[string]any{
				"inventory_namespace": x.ns, "inventory_name": x.name, "target_name": src.Values["target_name"], "source_uid": src.Values["source_uid"],
				"cluster": x.cluster, "resource_namespace": src.Values["resource_namespace"], "payload": payload, "exported_at": x.at}})
			x.affected++
		}
	}
	return nil
}

// deleteWhere deletes the scope's rows whose key is staged as a delete
// (staged), or, without a staging table, all of them, or with one, those
// it does not hold.
func (s *Server) deleteWhere(x *execution, staged bool) *jobError {
	target := x.tables[0]
	var keys map[key]bool
	if len(x.tables) > 1 {
		keys = map[key]bool{}
		for _, r := range x.tables[1].rows {
			if !staged || r.Values["op"] == "delete" {
				keys[keyOf(r)] = true
			}
		}
	}
	var keep []string
	if p, ok := x.params["kept_targets"]; ok {
		if p.Type != "ARRAY<STRING>" {
			return errorf("invalidQuery", "parameter @kept_targets must be an ARRAY<STRING>, got %q", p.Type)
		}
		keep = p.Values
	}
	x.remove(target, func(r Row) bool {
		name, _ := r.Values["target_name"].(string)
		return x.inScope(r) && (keys == nil || keys[keyOf(r)] == staged) && !slices.Contains(keep, name)
	})
	return nil
}

// remove deletes t's rows that gone picks, counting them as affected.
func (x *execution) remove(t *table, gone func(Row) bool) {
	kept := t.rows[:0]
	for _, r := range t.rows {
		if gone(r) {
			x.affected++
			continue
		}
		kept = append(kept, r)
	}
	t.rows = kept
}

func (s *Server) count(x *execution) *jobError {
	n := 0
	for _, r := range x.tables[0].rows {
		if x.inScope(r) {
			n++
		}
	}
	x.job.schema = &bq.TableSchema{Fields: []*bq.TableFieldSchema{{Name: "n", Type: "INTEGER", Mode: "NULLABLE"}}}
	x.job.rows = []*bq.TableRow{{F: []*bq.TableCell{{V: strconv.Itoa(n)}}}}
	return nil
}

// canonical is PARSE_JSON then TO_JSON_STRING: the JSON text with object
// keys sorted, what the fake stores in a JSON column.
func canonical(v any) (string, *jobError) {
	text, ok := v.(string)
	if !ok {
		return "", errorf("invalidQuery", "PARSE_JSON of a non-string value")
	}
	var parsed any
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	if err := dec.Decode(&parsed); err != nil {
		return "", errorf("invalidQuery", "PARSE_JSON: %v", err)
	}
	out, err := json.Marshal(parsed)
	if err != nil {
		return "", errorf("invalidQuery", "TO_JSON_STRING: %v", err)
	}
	return string(out), nil
}
