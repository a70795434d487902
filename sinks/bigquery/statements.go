package bigquery

import (
	"fmt"
	"strings"

	"cloud.google.com/go/bigquery"
)

// Parameter names of the statements.
const (
	paramNamespace  = "inventory_namespace"
	paramName       = "inventory_name"
	paramCluster    = "cluster"
	paramExportedAt = "exported_at"
	paramScopes     = "scopes"
)

// Schema is the table an ensure-mode sink creates.
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

// The ops of staged rows. Every inventory of a batch has one header row,
// opFull (the staged upserts are its whole snapshot: its other rows go,
// but the kept targets') or opDelta (only what changed is staged); then
// its upserts (whole rows), deletes (keys) and kept targets (opKeep, the
// target's name only).
const (
	opFull   = "full"
	opDelta  = "delta"
	opUpsert = "upsert"
	opDelete = "delete"
	opKeep   = "keep"
)

// stagingSchema is the staging table a batch's load job fills: every row
// names its inventory; payload is the row's JSON text, parsed by the
// MERGE.
func stagingSchema() bigquery.Schema {
	req := func(name string) *bigquery.FieldSchema {
		return &bigquery.FieldSchema{Name: name, Type: bigquery.StringFieldType, Required: true}
	}
	return bigquery.Schema{
		req("op"), req("inventory_namespace"), req("inventory_name"),
		{Name: "target_name", Type: bigquery.StringFieldType},
		{Name: "source_uid", Type: bigquery.StringFieldType},
		{Name: "resource_namespace", Type: bigquery.StringFieldType},
		{Name: "payload", Type: bigquery.StringFieldType},
	}
}

// statements are the SQL of one table and one batch's staging table:
// fixed text naming the two; every value is a query parameter or a
// staged row.
type statements struct {
	table, stage string // quoted `project.dataset.table`
}

func newStatements(project, dataset, table, stage string) statements {
	return statements{table: quote(project, dataset, table), stage: quote(project, dataset, stage)}
}

// quote is a backtick-quoted table path; names are checked by validName.
func quote(project, dataset, table string) string {
	return "`" + project + "." + dataset + "." + table + "`"
}

// scopeCondition is the condition on the writer records of one inventory.
const scopeCondition = `t.inventory_namespace = @inventory_namespace AND t.inventory_name = @inventory_name AND t.cluster = @cluster`

// Conditions between the table (t) and staged rows (s, h).
const (
	sameInventory = `s.inventory_namespace = t.inventory_namespace AND s.inventory_name = t.inventory_name`
	sameRow       = sameInventory + ` AND s.target_name = t.target_name AND s.source_uid = t.source_uid`
	// inBatch: the row belongs to an inventory of the batch.
	inBatch = `t.cluster = @cluster AND EXISTS (SELECT 1 FROM {S} AS s WHERE s.op IN ('full', 'delta') AND ` + sameInventory + `)`
	// gone: the row is staged as a delete, or its inventory's whole
	// snapshot is staged without it and its target is not kept.
	gone = `(EXISTS (SELECT 1 FROM {S} AS s WHERE s.op = 'delete' AND ` + sameRow + `)
    OR (EXISTS (SELECT 1 FROM {S} AS s WHERE s.op = 'full' AND ` + sameInventory + `)
      AND NOT EXISTS (SELECT 1 FROM {S} AS s WHERE s.op = 'upsert' AND ` + sameRow + `)
      AND NOT EXISTS (SELECT 1 FROM {S} AS s WHERE s.op = 'keep' AND ` + sameInventory + ` AND s.target_name = t.target_name)))`
)

func (s statements) fill(sql string) string {
	return strings.ReplaceAll(sql, "{S}", s.stage)
}

// merge inserts staged rows that are new and updates those whose content
// or namespace differs; identical rows are not touched. A row it writes
// carries the batch's @exported_at, which the stats count.
func (s statements) merge() string {
	return `MERGE ` + s.table + ` AS t
USING (SELECT inventory_namespace, inventory_name, target_name, source_uid, resource_namespace, payload FROM ` + s.stage + ` WHERE op = 'upsert') AS s
ON t.cluster = @cluster AND ` + sameRow + `
WHEN MATCHED AND (TO_JSON_STRING(t.payload) != TO_JSON_STRING(PARSE_JSON(s.payload, wide_number_mode => 'round')) OR t.resource_namespace != s.resource_namespace) THEN
  UPDATE SET payload = PARSE_JSON(s.payload, wide_number_mode => 'round'), resource_namespace = s.resource_namespace, exported_at = @exported_at
WHEN NOT MATCHED BY TARGET THEN
  INSERT (inventory_namespace, inventory_name, target_name, source_uid, cluster, resource_namespace, payload, exported_at)
  VALUES (s.inventory_namespace, s.inventory_name, s.target_name, s.source_uid, @cluster, s.resource_namespace, PARSE_JSON(s.payload, wide_number_mode => 'round'), @exported_at)`
}

// stats counts, per inventory of the batch, the rows the table holds, the
// rows the delete will remove and the rows the merge wrote.
func (s statements) stats() string {
	return s.fill(`SELECT inventory_namespace, inventory_name, COUNT(*) AS n, COUNTIF(gone) AS gone, COUNTIF(wrote) AS wrote
FROM (SELECT t.inventory_namespace, t.inventory_name, ` + gone + ` AS gone, IFNULL(t.exported_at = @exported_at, FALSE) AS wrote
  FROM ` + s.table + ` AS t
  WHERE ` + inBatch + `)
GROUP BY inventory_namespace, inventory_name`)
}

// remove deletes the rows stats counted as gone.
func (s statements) remove() string {
	return s.fill(`DELETE FROM ` + s.table + ` AS t
WHERE ` + inBatch + `
  AND ` + gone)
}

// count counts the rows of the inventories @scopes names ("namespace/name"
// each: neither holds a '/'), for a batch that stages nothing.
func (s statements) count() string {
	return `SELECT t.inventory_namespace, t.inventory_name, COUNT(*) AS n
FROM ` + s.table + ` AS t
WHERE t.cluster = @cluster AND CONCAT(t.inventory_namespace, '/', t.inventory_name) IN UNNEST(@scopes)
GROUP BY t.inventory_namespace, t.inventory_name`
}

// params are the parameters of one inventory's writer record.
func params(namespace, name, cluster string) []bigquery.QueryParameter {
	return []bigquery.QueryParameter{{Name: paramNamespace, Value: namespace}, {Name: paramName, Value: name}, {Name: paramCluster, Value: cluster}}
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
