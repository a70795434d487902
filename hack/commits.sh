#!/usr/bin/env bash
# commits.sh [BASE] — check the subjects and bodies of the commits after
# BASE (default: the commit in hack/commit-base) up to HEAD, as
# CONTRIBUTING.md asks:
#   - a subject of at most 72 characters in the form "area: what";
#   - a body (a blank line, then at least one line) saying why.
# Merge commits are skipped. A clone too shallow to hold BASE checks HEAD
# alone and says so.
set -euo pipefail
cd "$(dirname "$0")/.."
base="${1:-$(tr -d '[:space:]' < hack/commit-base)}"
if git cat-file -e "${base}^{commit}" 2>/dev/null; then
	range="${base}..HEAD"
else
	echo "commits: ${base} is not in this clone; checking HEAD only" >&2
	range="HEAD~1..HEAD"
	git cat-file -e HEAD~1 2>/dev/null || range="HEAD"
fi
bad=0
while read -r sha; do
	subject="$(git log -1 --format=%s "$sha")"
	body="$(git log -1 --format=%b "$sha" | sed '/^[[:space:]]*$/d')"
	problems=()
	if (( ${#subject} > 72 )); then
		problems+=("subject is ${#subject} characters, the limit is 72")
	fi
	if ! [[ "$subject" =~ ^[A-Za-z0-9][A-Za-z0-9/._,-]*(\ [A-Za-z0-9/._-]+)?:\ [^[:space:]] ]]; then
		problems+=("subject is not \"area: what\" (an area, a colon, a space, then what)")
	fi
	if [[ -z "$body" ]]; then
		problems+=("no body: say why in the lines after a blank one")
	fi
	if (( ${#problems[@]} > 0 )); then
		bad=1
		echo "${sha:0:10} ${subject}"
		for p in "${problems[@]}"; do echo "    ${p}"; done
	fi
done < <(git rev-list --no-merges "$range")
if (( bad )); then
	echo "commits: fix the messages above (git rebase -i, reword); CONTRIBUTING.md says how they read" >&2
	exit 1
fi
echo "commits: $(git rev-list --no-merges --count "$range") checked since ${base:0:10}"
