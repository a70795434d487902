#!/usr/bin/env bash
# duckdb.sh: installs DuckDB's Node API (it ships its own DuckDB binary)
# from npm under the user cache, once per version, and points the link
# duckdb-current at it. The tests read Parquet exports back with it and
# make demo queries one. Prints the install prefix.
set -euo pipefail
version=1.5.6-r.1
cache="${KOLLECT_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/kollect}"
dir="$cache/duckdb-$version"
if [ ! -d "$dir/node_modules/@duckdb/node-api" ]; then
	command -v npm >/dev/null 2>&1 || { echo "duckdb.sh: npm is missing; install Node.js (Debian: nodejs npm)" >&2; exit 1; }
	echo "duckdb.sh: installing DuckDB's Node API $version (npm)" >&2
	mkdir -p "$dir"
	npm install --prefix "$dir" --no-audit --no-fund --silent "@duckdb/node-api@$version" >&2
fi
ln -sfn "$dir" "$cache/duckdb-current"
echo "$cache/duckdb-current"
