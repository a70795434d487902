// Reads a Parquet file with DuckDB and prints its schema, its row count
// and its first rows as JSON: what an analyst's query sees.
// Usage: node duckdb.mjs <prefix where @duckdb/node-api is installed> <file.parquet>
import { createRequire } from 'node:module';

const [prefix, file] = process.argv.slice(2);
const require = createRequire(prefix + '/package.json');
const { DuckDBInstance } = require('@duckdb/node-api');
const con = await (await DuckDBInstance.create(':memory:')).connect();
const q = async (sql) => (await con.runAndReadAll(sql)).getRowObjectsJson();
// The §11.4 path is Hive-style (cluster=, ns=, name=); DuckDB would turn
// name= into a column that hides the object's name: read the file itself.
const src = `read_parquet('${file.replaceAll("'", "''")}', hive_partitioning = false)`;
console.log(JSON.stringify({
  columns: await q(`SELECT column_name, column_type FROM (DESCRIBE SELECT * FROM ${src})`),
  count: await q(`SELECT count(*) AS n FROM ${src}`),
  rows: await q(`SELECT name, namespace, attr_image, "group", json_extract_string(decode(attributes), '$.note') AS note FROM ${src} ORDER BY name LIMIT 2`),
}));
