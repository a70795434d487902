// make demo's query: the Parquet export read with DuckDB, as an analyst
// would. Usage: node query.mjs <prefix with @duckdb/node-api> <file.parquet>
import { createRequire } from 'node:module';

const [prefix, file] = process.argv.slice(2);
const { DuckDBInstance } = createRequire(prefix + '/package.json')('@duckdb/node-api');
const con = await (await DuckDBInstance.create(':memory:')).connect();
// hive_partitioning off: the file's own name column, not the path's name=.
const reader = await con.runAndReadAll(`SELECT name, attr_image AS image, attr_replicas AS replicas, attr_ready AS ready
  FROM read_parquet('${file.replaceAll("'", "''")}', hive_partitioning = false) ORDER BY name`);
const rows = reader.getRowObjectsJson();
const cols = ['name', 'image', 'replicas', 'ready'];
const width = cols.map((c) => Math.max(c.length, ...rows.map((r) => String(r[c] ?? '').length)));
const line = (vals) => vals.map((v, i) => String(v ?? '').padEnd(width[i])).join('  ').trimEnd();
console.log(line(cols));
for (const r of rows) console.log(line(cols.map((c) => r[c])));
