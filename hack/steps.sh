# steps.sh — sourced by the build scripts: one line per build step, with
# what it builds and roughly how long it takes here; the tools' own output
# (module downloads, compiler lines) goes to a log named when a step fails.
#
#   STEPS_LOG=bin/x.log; source hack/steps.sh
#   step "etcd and kube-apiserver" "first time: about 6 min on 2 cores" cmd args...

: "${STEPS_LOG:?set STEPS_LOG before sourcing steps.sh}"
mkdir -p "$(dirname "$STEPS_LOG")"
steps_start=$(date +%s)

steps_elapsed() {
	local s=$(($(date +%s) - steps_start))
	printf '%dm%02ds' $((s / 60)) $((s % 60))
}

# step WHAT ESTIMATE COMMAND...: one line before, one after, output in the log.
step() {
	local what="$1" estimate="$2"
	shift 2
	printf '==> %s (%s)\n' "$what" "$estimate"
	local t0
	t0=$(date +%s)
	if ! "$@" >>"$STEPS_LOG" 2>&1; then
		echo "building $what failed; the build output is in $STEPS_LOG:" >&2
		tail -n 20 "$STEPS_LOG" >&2
		exit 1
	fi
	printf '    done in %ss (%s since the start)\n' $(($(date +%s) - t0)) "$(steps_elapsed)"
}
