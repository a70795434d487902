package bigquery

import (
	"fmt"
	"strings"
	"time"

	"cloud.google.com/go/bigquery"
)

// Parameter names every statement shares: the scope of an export.
const (
	paramNamespace  = "inventory_namespace"
	paramName       = "inventory_name"
	paramCluster    = "cluster"
	paramExportedAt = "exported_at"
	paramKept       = "kept_targets"
)

// Schema is the table an ensure-mode sink creates (SEMANTICS §11.8).
func Schema() bigquery.Schema {
	req := func(name string) *bigquery.FieldSchema {
		return &bigquery.FieldSchema{Name: name, Type: bigquery.StringFieldType, Required: true}
	}
	return bigquery.Schema{
		req("inventory_namespace"), req("inventory_name"), req("target_name"), req("source_uid"), req("cluster"), req("resource_namespace"),
		{Name: "payload", Type: bigquery.JSONFieldType},
		{Name: "exported_at", Type: bigquery.TimestampFieldType},
	}
}

// Clustering are the table's clustering columns.
var Clustering = []string{"cluster", "inventory_namespace", "inventory_name", "resource_namespace"}

// stagingSchema is the staging table a load job fills: op is upsert (a
// row to merge) or delete (the key of a row that is gone); payload is the
// row's JSON text, parsed by the MERGE.
func stagingSchema() bigquery.Schema {
	return bigquery.Schema{
		{Name: "op", Type: bigquery.StringFieldType, Required: true},
		{Name: "target_name", Type: bigquery.StringFieldType, Required: true},
		{Name: "source_uid", Type: bigquery.StringFieldType, Required: true},
		{Name: "resource_namespace", Type: bigquery.StringFieldType},
		{Name: "payload", Type: bigquery.StringFieldType},
	}
}

// statements are the SQL of one sink: fixed text naming its table and its
// staging table; every value is a query parameter.
type statements struct {
	table, stage string // quoted `project.dataset.table`
	stageTable   string // the staging table's name
}

func newStatements(project, dataset, table, stage string) statements {
	return statements{table: quote(project, dataset, table), stage: quote(project, dataset, stage), stageTable: stage}
}

func (s statements) stageName() string { return s.stageTable }

// quote is a backtick-quoted table path; names are checked by validName.
func quote(project, dataset, table string) string {
	return "`" + project + "." + dataset + "." + table + "`"
}

const scopeCondition = `t.inventory_namespace = @inventory_namespace AND t.inventory_name = @inventory_name AND t.cluster = @cluster`

// merge inserts staged rows that are new and updates those whose content
// or namespace differs; identical rows are not touched.
func (s statements) merge() string {
	return `MERGE ` + s.table + ` AS t
USING (SELECT target_name, source_uid, resource_namespace, payload FROM ` + s.stage + ` WHERE op = 'upsert') AS s
ON ` + scopeCondition + ` AND t.target_name = s.target_name AND t.source_uid = s.source_uid
WHEN MATCHED AND (TO_JSON_STRING(t.payload) != TO_JSON_STRING(PARSE_JSON(s.payload, wide_number_mode => 'round')) OR t.resource_namespace != s.resource_namespace) THEN
  UPDATE SET payload = PARSE_JSON(s.payload, wide_number_mode => 'round'), resource_namespace = s.resource_namespace, exported_at = @exported_at
WHEN NOT MATCHED BY TARGET THEN
  INSERT (inventory_namespace, inventory_name, target_name, source_uid, cluster, resource_namespace, payload, exported_at)
  VALUES (@inventory_namespace, @inventory_name, s.target_name, s.source_uid, @cluster, s.resource_namespace, PARSE_JSON(s.payload, wide_number_mode => 'round'), @exported_at)`
}

// deleteStaged deletes the rows whose keys are staged as deletes.
func (s statements) deleteStaged() string {
	return `DELETE FROM ` + s.table + ` AS t
WHERE ` + scopeCondition + `
  AND EXISTS (SELECT 1 FROM ` + s.stage + ` AS s WHERE s.op = 'delete' AND s.target_name = t.target_name AND s.source_uid = t.source_uid)`
}

// keepCondition leaves the rows of the targets a partial snapshot keeps
// (@kept_targets) as they are.
const keepCondition = `
  AND t.target_name NOT IN UNNEST(@kept_targets)`

// deleteUnstaged deletes the scope's rows the staging table does not hold:
// it holds the whole snapshot (but the kept targets' rows, when keeping).
func (s statements) deleteUnstaged(keeping bool) string {
	sql := `DELETE FROM ` + s.table + ` AS t
WHERE ` + scopeCondition + `
  AND NOT EXISTS (SELECT 1 FROM ` + s.stage + ` AS s WHERE s.target_name = t.target_name AND s.source_uid = t.source_uid)`
	if keeping {
		sql += keepCondition
	}
	return sql
}

// deleteAll deletes every row of the scope (but the kept targets' rows,
// when keeping): the snapshot is empty.
func (s statements) deleteAll(keeping bool) string {
	sql := `DELETE FROM ` + s.table + ` AS t
WHERE ` + scopeCondition
	if keeping {
		sql += keepCondition
	}
	return sql
}

// keptParam is the @kept_targets parameter of keepCondition.
func keptParam(kept []string) bigquery.QueryParameter {
	return bigquery.QueryParameter{Name: paramKept, Value: kept}
}

// count counts the scope's rows.
func (s statements) count() string {
	return `SELECT COUNT(*) AS n FROM ` + s.table + ` AS t
WHERE ` + scopeCondition
}

// params are a statement's parameters.
func params(namespace, name, cluster string, at time.Time, withTime bool) []bigquery.QueryParameter {
	p := []bigquery.QueryParameter{{Name: paramNamespace, Value: namespace}, {Name: paramName, Value: name}, {Name: paramCluster, Value: cluster}}
	if withTime {
		p = append(p, bigquery.QueryParameter{Name: paramExportedAt, Value: at})
	}
	return p
}

// validName checks a project, dataset or table name can be quoted: no
// backtick, backslash or control character, and not empty.
func validName(what, v string) error {
	if strings.TrimSpace(v) == "" {
		return fmt.Errorf("bigquery.%s is empty", what)
	}
	for _, r := range v {
		if r == '`' || r == '\\' || r < 0x20 || r == 0x7f {
			return fmt.Errorf("bigquery.%s %q holds a character BigQuery names cannot have", what, v)
		}
	}
	if what != "table" && strings.ContainsAny(v, " /") {
		return fmt.Errorf("bigquery.%s %q holds a space or '/'", what, v)
	}
	return nil
}
