#!/usr/bin/env bash
# The full tier's record (model/verified): what a passing `make model`
# checked, keyed by everything Spin's exhaustive result depends on — the
# models (model/*.pml), check.sh with its check lines, and the versions of
# spin and gcc. CI trusts a record whose key equals the inputs' key now,
# and runs the full tier again otherwise (model/README.md, "The record").
#
# Usage: bash model/record.sh inputs          the inputs, one line each
#        bash model/record.sh verify          exit 0: the record is current
#                                             (printed); 1: an input differs
#                                             (named); 2: no record
#        bash model/record.sh write KEY LOG   (check.sh only) writes the
#                                             record of a passing full run
#                                             that started with inputs KEY
#        bash model/record.sh drop            (check.sh only) removes it
#                                             after a failed full run
# Environment: MODEL_RECORD, the record's path (default model/verified).
set -euo pipefail
export LC_ALL=C # one order of the models' names, whatever the locale
here=$(cd "$(dirname "$0")" && pwd)
record=${MODEL_RECORD:-$here/verified}

# inputs: one line per input, "input NAME VALUE", in a fixed order.
inputs() {
	local files=("$here"/*.pml)
	[ -e "${files[0]}" ] || files=()
	sha256sum "${files[@]}" "$here/check.sh" | sed 's|^\([0-9a-f]*\) .*/\([^/]*\)$|input model/\2 sha256:\1|'
	echo "input spin $(version spin -V) binary sha256:$(binary spin)"
	echo "input gcc $(version gcc --version)"
}

# version TOOL FLAG: the first line TOOL prints of its version, or "none".
version() {
	if command -v "$1" >/dev/null; then "$1" "$2" 2>&1 | head -1 | tr -s ' \t' ' '; else echo none; fi
}

# binary TOOL: the digest of TOOL's executable, or "none" (a rebuilt
# package can keep its version string).
binary() {
	local path
	if path=$(command -v "$1"); then sha256sum "$path" | cut -d' ' -f1; else echo none; fi
}

# key: the digest of the input lines on stdin.
key() { sha256sum | cut -d' ' -f1; }

verify() {
	if [ ! -s "$record" ] || ! grep -q '^key ' "$record"; then
		echo "model-verify: no record ($record): the full tier must run"
		return 2
	fi
	local now want have
	now=$(inputs)
	want=$(sed -n 's/^key //p' "$record" | head -1)
	have=$(key <<<"$now")
	if [ "$want" = "$have" ] && [ "$(grep '^input ' "$record")" = "$now" ]; then
		echo "model-verify: the record is current (key $have): the full tier passed on these inputs"
		cat "$record"
		return 0
	fi
	echo "model-verify: run: the inputs differ from the record's ($record):"
	diff <(grep '^input ' "$record") <(echo "$now") | sed -n 's/^< input /  record: /p; s/^> input /  now:    /p' || true
	return 1
}

# write KEY LOG: the record of a full run that passed, begun on inputs KEY;
# refused if the inputs changed while it ran.
write() {
	local began=$1 log=$2 now
	now=$(inputs)
	if [ "$(key <<<"$now")" != "$began" ]; then
		echo "model: the inputs changed while the full tier ran: no record written" >&2
		return 1
	fi
	{
		echo "# The full model tier's record, written by a passing \`make model\`"
		echo "# (model/record.sh). Do not edit: refresh it with \`make model\`."
		echo "key $began"
		echo "$now"
		echo "date $(date -u +%Y-%m-%dT%H:%M:%SZ)"
		echo "host $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GB", $2 / 1048576}' /proc/meminfo)"
		grep '^model: ' "$log"
	} >"$record.tmp"
	mv "$record.tmp" "$record"
	echo "model: record written: $record"
}

# drop: removes the record (a full run on these inputs failed).
drop() {
	if [ -e "$record" ]; then
		rm -f "$record"
		echo "model: the full tier failed: record removed ($record)"
	fi
}

case ${1:-} in
inputs) inputs ;;
drop) drop ;;
key) inputs | key ;;
verify) verify ;;
write) [ $# -eq 3 ] || { echo "usage: bash model/record.sh write KEY LOG" >&2; exit 2; }; write "$2" "$3" ;;
*) echo "usage: bash model/record.sh inputs|key|verify|write KEY LOG|drop" >&2; exit 2 ;;
esac
