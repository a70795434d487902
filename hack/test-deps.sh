#!/usr/bin/env bash
# test-deps.sh: installs what the sink tests start on loopback and that the
# Go module proxy cannot provide: PostgreSQL's server binaries, from
# Debian's postgresql package. (NATS and Kafka run in-process from Go
# modules.) Skipped when the binaries are already there.
set -euo pipefail

have_postgres() {
	for d in /usr/lib/postgresql/*/bin; do
		[ -x "$d/initdb" ] && [ -x "$d/postgres" ] && return 0
	done
	command -v initdb >/dev/null 2>&1 && command -v postgres >/dev/null 2>&1
}

if have_postgres; then
	exit 0
fi
echo "test-deps: installing PostgreSQL (Debian package postgresql)" >&2
sudo=""
if [ "$(id -u)" -ne 0 ]; then
	command -v sudo >/dev/null 2>&1 || { echo "test-deps: need root or sudo to install postgresql" >&2; exit 1; }
	sudo="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
# The package's own cluster is neither needed nor started: the tests run
# initdb and postgres in temporary directories.
$sudo apt-get install -y -qq --no-install-recommends postgresql >/dev/null
have_postgres || { echo "test-deps: postgresql installed but initdb/postgres not found" >&2; exit 1; }
