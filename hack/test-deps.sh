#!/usr/bin/env bash
# test-deps.sh: installs what the tests start on loopback and that the Go
# module proxy cannot provide: from Debian's packages, PostgreSQL's server
# (the Postgres sink tests) and Prometheus with promtool (the metrics
# scrape and alert-rule tests); from npm, Azurite (the Azure Blob sink
# tests) and DuckDB's Node API (reading back Parquet), cached per user
# with the links azurite-current and duckdb-current the tests follow.
# Debian's openssh-client gives ssh-keygen, which signs release checksums.
# NATS, Kafka, S3, GCS and GitLab run in-process from Go modules. Skipped
# when everything is already there.
set -euo pipefail

azurite_version=3.35.0
cache="${KOLLECT_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/kollect}"
azurite_dir="$cache/azurite-$azurite_version"
have_azurite() { [ -x "$azurite_dir/node_modules/.bin/azurite-blob" ] && command -v node >/dev/null 2>&1; }
install_azurite() {
	if ! command -v npm >/dev/null 2>&1; then
		echo "test-deps: npm is missing; install Node.js (Debian: nodejs npm)" >&2
		return 1
	fi
	echo "test-deps: installing Azurite $azurite_version (npm)" >&2
	mkdir -p "$azurite_dir"
	npm install --prefix "$azurite_dir" --no-audit --no-fund --silent "azurite@$azurite_version" >&2
	have_azurite
}
have_azurite || install_azurite
ln -sfn "$azurite_dir" "$cache/azurite-current"

# DuckDB's Node API reads back the Parquet the object-store sinks write.
bash "$(dirname "${BASH_SOURCE[0]}")/duckdb.sh" >/dev/null

have_postgres() {
	for d in /usr/lib/postgresql/*/bin; do
		[ -x "$d/initdb" ] && [ -x "$d/postgres" ] && return 0
	done
	command -v initdb >/dev/null 2>&1 && command -v postgres >/dev/null 2>&1
}

have_prometheus() { command -v prometheus >/dev/null 2>&1 && command -v promtool >/dev/null 2>&1; }

pkgs=()
have_postgres || pkgs+=(postgresql)
have_prometheus || pkgs+=(prometheus)
# ssh-keygen signs and verifies release checksums (make release, its test).
command -v ssh-keygen >/dev/null 2>&1 || pkgs+=(openssh-client)
if [ ${#pkgs[@]} -eq 0 ]; then
	exit 0
fi
echo "test-deps: installing ${pkgs[*]} (Debian packages)" >&2
sudo=""
if [ "$(id -u)" -ne 0 ]; then
	command -v sudo >/dev/null 2>&1 || { echo "test-deps: need root or sudo to install postgresql" >&2; exit 1; }
	sudo="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
# The packages' own services are neither needed nor started: the tests run
# initdb/postgres and prometheus in temporary directories.
$sudo apt-get install -y -qq --no-install-recommends "${pkgs[@]}" >/dev/null
have_postgres || { echo "test-deps: postgresql installed but initdb/postgres not found" >&2; exit 1; }
have_prometheus || { echo "test-deps: prometheus installed but prometheus/promtool not found" >&2; exit 1; }
command -v ssh-keygen >/dev/null 2>&1 || { echo "test-deps: openssh-client installed but ssh-keygen not found" >&2; exit 1; }
