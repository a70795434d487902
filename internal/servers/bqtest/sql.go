package bqtest

import (
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	bq "google.golang.org/api/bigquery/v2"
)

// The statements the fake runs: the shapes the sink issues, whitespace
// aside. {T} is a backtick-quoted table path and {S} the batch's staging
// table (every {S} must name the same one); {SCOPE} is the condition on
// one inventory's writer record. Anything else fails the job.
const (
	scope = "t.inventory_namespace = @inventory_namespace AND t.inventory_name = @inventory_name AND t.cluster = @cluster"
	parse = "PARSE_JSON(s.payload, wide_number_mode => 'round')"

	sameInventory = "s.inventory_namespace = t.inventory_namespace AND s.inventory_name = t.inventory_name"
	sameRow       = sameInventory + " AND s.target_name = t.target_name AND s.source_uid = t.source_uid"
	inBatch       = "t.cluster = @cluster AND EXISTS (SELECT 1 FROM {S} AS s WHERE s.op IN ('full', 'delta') AND " + sameInventory + ")"
	gone          = "(EXISTS (SELECT 1 FROM {S} AS s WHERE s.op = 'delete' AND " + sameRow + ") " +
		"OR (EXISTS (SELECT 1 FROM {S} AS s WHERE s.op = 'full' AND " + sameInventory + ") " +
		"AND NOT EXISTS (SELECT 1 FROM {S} AS s WHERE s.op = 'upsert' AND " + sameRow + ") " +
		"AND NOT EXISTS (SELECT 1 FROM {S} AS s WHERE s.op = 'keep' AND " + sameInventory + " AND s.target_name = t.target_name)))"

	mergeShape = "MERGE {T} AS t USING (SELECT inventory_namespace, inventory_name, target_name, source_uid, resource_namespace, payload FROM {S} WHERE op = 'upsert') AS s " +
		"ON t.cluster = @cluster AND " + sameRow + " " +
		"WHEN MATCHED AND (TO_JSON_STRING(t.payload) != TO_JSON_STRING(" + parse + ") OR t.resource_namespace != s.resource_namespace) THEN " +
		"UPDATE SET payload = " + parse + ", resource_namespace = s.resource_namespace, exported_at = @exported_at " +
		"WHEN NOT MATCHED BY TARGET THEN INSERT (inventory_namespace, inventory_name, target_name, source_uid, cluster, resource_namespace, payload, exported_at) " +
		"VALUES (s.inventory_namespace, s.inventory_name, s.target_name, s.source_uid, @cluster, s.resource_namespace, " + parse + ", @exported_at)"
	statsShape = "SELECT inventory_namespace, inventory_name, COUNT(*) AS n, COUNTIF(gone) AS gone, COUNTIF(wrote) AS wrote " +
		"FROM (SELECT t.inventory_namespace, t.inventory_name, " + gone + " AS gone, IFNULL(t.exported_at = @exported_at, FALSE) AS wrote " +
		"FROM {T} AS t WHERE " + inBatch + ") GROUP BY inventory_namespace, inventory_name"
	removeShape = "DELETE FROM {T} AS t WHERE " + inBatch + " AND " + gone
	countShape  = "SELECT t.inventory_namespace, t.inventory_name, COUNT(*) AS n FROM {T} AS t " +
		"WHERE t.cluster = @cluster AND CONCAT(t.inventory_namespace, '/', t.inventory_name) IN UNNEST(@scopes) " +
		"GROUP BY t.inventory_namespace, t.inventory_name"

	// The writer records: one row per sink table, cluster and inventory.
	writerKey       = "{SCOPE} AND t.sink_table = @sink_table"
	writerReadShape = "SELECT t.inventory_namespace, t.inventory_name, t.writer FROM {T} AS t " +
		"WHERE t.cluster = @cluster AND t.sink_table = @sink_table AND CONCAT(t.inventory_namespace, '/', t.inventory_name) IN UNNEST(@scopes)"
	writerDeleteShape = "DELETE FROM {T} AS t WHERE " + writerKey
	writerSetShape    = "MERGE {T} AS t USING (SELECT 1) AS s ON " + writerKey + " " +
		"WHEN MATCHED THEN UPDATE SET writer = @writer, updated_at = CURRENT_TIMESTAMP() " +
		"WHEN NOT MATCHED THEN INSERT (sink_table, cluster, inventory_namespace, inventory_name, writer, updated_at) " +
		"VALUES (@sink_table, @cluster, @inventory_namespace, @inventory_name, @writer, CURRENT_TIMESTAMP())"
)

type statement struct {
	re     *regexp.Regexp
	roles  []byte // per capture group: 'T' the table, 'S' the staging table
	kind   string // the statement type BigQuery reports
	params []string
	run    func(s *Server, x *execution) *jobError
}

// paramTypes are the types of the parameters the statements take.
var paramTypes = map[string]string{
	"inventory_namespace": "STRING", "inventory_name": "STRING", "cluster": "STRING", "sink_table": "STRING", "writer": "STRING",
	"exported_at": "TIMESTAMP", "scopes": "ARRAY<STRING>",
}

var (
	writerParams = []string{"cluster", "inventory_name", "inventory_namespace", "sink_table"}
	statements   = []statement{
		shape(mergeShape, "MERGE", (*Server).merge, "cluster", "exported_at"),
		shape(statsShape, "SELECT", (*Server).stats, "cluster", "exported_at"),
		shape(removeShape, "DELETE", (*Server).remove, "cluster"),
		shape(countShape, "SELECT", (*Server).count, "cluster", "scopes"),
		shape(writerReadShape, "SELECT", (*Server).readWriters, "cluster", "scopes", "sink_table"),
		shape(writerDeleteShape, "DELETE", (*Server).deleteWriter, writerParams...),
		shape(writerSetShape, "MERGE", (*Server).setWriter, append(slices.Clone(writerParams), "writer")...),
	}
)

// shape compiles a statement shape.
func shape(text, kind string, run func(*Server, *execution) *jobError, params ...string) statement {
	st := statement{kind: kind, run: run, params: params}
	pattern := regexp.QuoteMeta(text)
	pattern = strings.ReplaceAll(pattern, regexp.QuoteMeta("{SCOPE}"), regexp.QuoteMeta(scope))
	var out strings.Builder
	for i := 0; i < len(pattern); i++ {
		if rest := pattern[i:]; strings.HasPrefix(rest, regexp.QuoteMeta("{T}")) || strings.HasPrefix(rest, regexp.QuoteMeta("{S}")) {
			st.roles = append(st.roles, rest[2])
			out.WriteString("`([^`]+)`")
			i += len(regexp.QuoteMeta("{T}")) - 1
			continue
		}
		out.WriteByte(pattern[i])
	}
	st.re = regexp.MustCompile("^" + out.String() + "$")
	return st
}

// execution is one statement being run.
type execution struct {
	job      *job
	table    *table // the table the statement reads or changes
	stage    *table // the batch's staging table, or nil
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
		stage := ""
		for i, path := range m[1:] {
			if stmt.roles[i] == 'S' {
				if stage != "" && stage != path {
					return nil, errorf("invalidQuery", "the statement names two staging tables, %s and %s", stage, path)
				}
				stage = path
			}
			t, err := s.lookup(in, path)
			if err != nil {
				return nil, err
			}
			if stmt.roles[i] == 'S' {
				x.stage = t
			} else {
				x.table = t
			}
		}
		if err := x.typed(st.Params); err != nil {
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

// lookup finds the table a statement names.
func (s *Server) lookup(in *bq.Job, path string) (*table, *jobError) {
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
	return t, nil
}

// typed type-checks the parameters and reads the scope's.
func (x *execution) typed(params map[string]Param) *jobError {
	for name, p := range params {
		if want := paramTypes[name]; p.Type != want {
			return errorf("invalidQuery", "parameter @%s must be a %s, got %q", name, want, p.Type)
		}
	}
	x.ns, x.name, x.cluster = params["inventory_namespace"].Value, params["inventory_name"].Value, params["cluster"].Value
	if p, ok := params["exported_at"]; ok {
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
	return r.Values["inventory_namespace"] == x.ns && r.Values["inventory_name"] == x.name && r.Values["cluster"] == x.cluster &&
		r.Values["sink_table"] == x.params["sink_table"].Value
}

// readWriters reads the writer records of the inventories @scopes names.
func (s *Server) readWriters(x *execution) *jobError {
	scopes := x.params["scopes"].Values
	x.job.schema = &bq.TableSchema{Fields: []*bq.TableFieldSchema{{Name: "inventory_namespace", Type: "STRING"}, {Name: "inventory_name", Type: "STRING"},
		{Name: "writer", Type: "STRING"}}}
	x.job.rows = nil
	for _, r := range x.table.rows {
		name := fmt.Sprintf("%v/%v", r.Values["inventory_namespace"], r.Values["inventory_name"])
		if r.Values["cluster"] == x.cluster && r.Values["sink_table"] == x.params["sink_table"].Value && slices.Contains(scopes, name) {
			x.job.rows = append(x.job.rows, &bq.TableRow{F: []*bq.TableCell{{V: r.Values["inventory_namespace"]}, {V: r.Values["inventory_name"]}, {V: r.Values["writer"]}}})
		}
	}
	return nil
}

func (s *Server) deleteWriter(x *execution) *jobError {
	x.removeRows(x.table, x.isWriter)
	return nil
}

func (s *Server) setWriter(x *execution) *jobError {
	t := x.table
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

// inventory names an inventory (namespace/name).
type inventory struct{ ns, name any }

// rowKey is a row's key within its cluster.
type rowKey struct {
	inventory
	target, uid any
}

func inventoryOf(r Row) inventory {
	return inventory{r.Values["inventory_namespace"], r.Values["inventory_name"]}
}

func keyOf(r Row) rowKey {
	return rowKey{inventoryOf(r), r.Values["target_name"], r.Values["source_uid"]}
}

// batch is what a staging table says: per inventory its header's op, its
// staged upserts (by key), deletes and kept targets.
type batch struct {
	ops     map[inventory]string
	upserts map[rowKey][]Row
	order   []rowKey
	deletes map[rowKey]bool
	kept    map[inventory][]any
}

func (x *execution) batch() *batch {
	b := &batch{ops: map[inventory]string{}, upserts: map[rowKey][]Row{}, deletes: map[rowKey]bool{}, kept: map[inventory][]any{}}
	for _, r := range x.stage.rows {
		switch r.Values["op"] {
		case "full", "delta":
			b.ops[inventoryOf(r)] = r.Values["op"].(string)
		case "upsert":
			k := keyOf(r)
			if _, seen := b.upserts[k]; !seen {
				b.order = append(b.order, k)
			}
			b.upserts[k] = append(b.upserts[k], r)
		case "delete":
			b.deletes[keyOf(r)] = true
		case "keep":
			b.kept[inventoryOf(r)] = append(b.kept[inventoryOf(r)], r.Values["target_name"])
		}
	}
	return b
}

// in reports whether a table row belongs to an inventory of the batch.
func (b *batch) in(x *execution, r Row) bool {
	_, ok := b.ops[inventoryOf(r)]
	return ok && r.Values["cluster"] == x.cluster
}

// gone reports whether the batch removes a table row of its inventories.
func (b *batch) gone(r Row) bool {
	k := keyOf(r)
	if b.deletes[k] {
		return true
	}
	return b.ops[k.inventory] == "full" && len(b.upserts[k]) == 0 && !slices.Contains(b.kept[k.inventory], r.Values["target_name"])
}

// merge: staged upserts update rows whose content or namespace differs
// and insert the rest; a target row matched by two staged rows fails the
// job, as in BigQuery.
func (s *Server) merge(x *execution) *jobError {
	b := x.batch()
	matched := map[rowKey]bool{}
	for i, r := range x.table.rows {
		if r.Values["cluster"] != x.cluster {
			continue
		}
		src := b.upserts[keyOf(r)]
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
		x.table.rows[i] = Row{Values: values, Version: s.version}
		x.affected++
	}
	for _, k := range b.order {
		if matched[k] {
			continue
		}
		for _, src := range b.upserts[k] { // unmatched source rows are all inserted
			payload, err := canonical(src.Values["payload"])
			if err != nil {
				return err
			}
			s.version++
			x.table.rows = append(x.table.rows, Row{Version: s.version, Values: map[string]any{
				"inventory_namespace": src.Values["inventory_namespace"], "inventory_name": src.Values["inventory_name"],
				"target_name": src.Values["target_name"], "source_uid": src.Values["source_uid"],
				"cluster": x.cluster, "resource_namespace": src.Values["resource_namespace"], "payload": payload, "exported_at": x.at}})
			x.affected++
		}
	}
	return nil
}

// stats counts, per inventory of the batch, its rows, those the batch
// removes and those written at @exported_at.
func (s *Server) stats(x *execution) *jobError {
	b := x.batch()
	type count struct{ n, gone, wrote int }
	counts := map[inventory]*count{}
	var order []inventory
	for _, r := range x.table.rows {
		if !b.in(x, r) {
			continue
		}
		c := counts[inventoryOf(r)]
		if c == nil {
			c = &count{}
			counts[inventoryOf(r)] = c
			order = append(order, inventoryOf(r))
		}
		c.n++
		if b.gone(r) {
			c.gone++
		}
		if at, ok := r.Values["exported_at"].(time.Time); ok && at.Equal(x.at) {
			c.wrote++
		}
	}
	x.job.schema = &bq.TableSchema{Fields: []*bq.TableFieldSchema{{Name: "inventory_namespace", Type: "STRING"}, {Name: "inventory_name", Type: "STRING"},
		{Name: "n", Type: "INTEGER"}, {Name: "gone", Type: "INTEGER"}, {Name: "wrote", Type: "INTEGER"}}}
	x.job.rows = nil
	for _, inv := range order {
		c := counts[inv]
		x.job.rows = append(x.job.rows, &bq.TableRow{F: []*bq.TableCell{{V: inv.ns}, {V: inv.name},
			{V: strconv.Itoa(c.n)}, {V: strconv.Itoa(c.gone)}, {V: strconv.Itoa(c.wrote)}}})
	}
	return nil
}

// remove deletes the rows the batch removes.
func (s *Server) remove(x *execution) *jobError {
	b := x.batch()
	x.removeRows(x.table, func(r Row) bool { return b.in(x, r) && b.gone(r) })
	return nil
}

// removeRows deletes t's rows that gone picks, counting them as affected.
func (x *execution) removeRows(t *table, gone func(Row) bool) {
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

// count counts the rows of the inventories @scopes names.
func (s *Server) count(x *execution) *jobError {
	scopes := x.params["scopes"].Values
	counts := map[string]int{}
	var order []string
	for _, r := range x.table.rows {
		name := fmt.Sprintf("%v/%v", r.Values["inventory_namespace"], r.Values["inventory_name"])
		if r.Values["cluster"] != x.cluster || !slices.Contains(scopes, name) {
			continue
		}
		if counts[name] == 0 {
			order = append(order, name)
		}
		counts[name]++
	}
	x.job.schema = &bq.TableSchema{Fields: []*bq.TableFieldSchema{{Name: "inventory_namespace", Type: "STRING"}, {Name: "inventory_name", Type: "STRING"},
		{Name: "n", Type: "INTEGER"}}}
	x.job.rows = nil
	for _, name := range order {
		ns, n, _ := strings.Cut(name, "/")
		x.job.rows = append(x.job.rows, &bq.TableRow{F: []*bq.TableCell{{V: ns}, {V: n}, {V: strconv.Itoa(counts[name])}}})
	}
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
