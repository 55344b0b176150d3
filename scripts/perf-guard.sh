#!/usr/bin/env bash
# perf-guard.sh BASE: is the work tree's request path slower than BASE's?
#
# Builds cmd/plantstore from BASE (a commit, branch or tag) and from the work
# tree, and runs them interleaved with scripts/loopback-bench.sh: ROUNDS
# rounds (default 5) on memory storage, then on SQLite (a new file each
# round). For each it prints the work tree's req/s over BASE's, the median of
# the rounds' ratios with their spread (lowest..highest), and fails when the
# work tree is more than 5 % slower beyond the spread: when the median ratio
# plus half the spread is below 0.95.
#
# Run it before any change to httpapi, sqlstore, webhook or the root package,
# on a machine doing nothing else, and quote its lines in the commit message:
#
#	scripts/perf-guard.sh main
#
# Not in CI: shared CI machines are too noisy for a 5 % bound. Every variable
# of loopback-bench.sh (DURATION, CONNS, EXTRA_ARGS, ...) applies.
set -euo pipefail

base=${1:?usage: scripts/perf-guard.sh BASE (a commit, branch or tag)}
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

rev=$(git -C "$repo" rev-parse --short "$base^{commit}")
echo "perf-guard: building $base ($rev) and the work tree ($(git -C "$repo" describe --always --dirty))" >&2
mkdir "$tmp/base"
git -C "$repo" archive "$rev" | tar -x -C "$tmp/base"
(cd "$tmp/base" && go build -o "$tmp/plantstore-base" ./cmd/plantstore)
(cd "$repo" && go build -o "$tmp/plantstore-new" ./cmd/plantstore)

status=0
for storage in memory sqlite; do
	args="-db memory"
	[[ $storage == sqlite ]] && args="-db {tmp}/plants.db"
	echo "perf-guard: $storage, ${ROUNDS:-5} rounds" >&2
	out=$(SERVERS="base new" ROUNDS=${ROUNDS:-5} BENCH_BIN="$tmp/plantstore-new" \
		BIN_base="$tmp/plantstore-base" BIN_new="$tmp/plantstore-new" \
		ARGS_base="$args" ARGS_new="$args" "$repo/scripts/loopback-bench.sh")
	echo "$out" >&2
	rounds=$(sed -n 's/^ratio new\/base:.*(rounds: \(.*\))$/\1/p' <<<"$out")
	[[ -n $rounds ]] || { echo "perf-guard: no ratios in loopback-bench's output" >&2; exit 1; }
	# shellcheck disable=SC2086 # rounds is a list of numbers.
	line=$(printf '%s\n' $rounds | sort -g | awk -v s="$storage" -v b="$rev" '
		{ v[NR] = $1 }
		END {
			m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
			printf "perf-guard %s: work tree / %s req/s = %.3f (rounds %.3f..%.3f)", s, b, m, v[1], v[NR]
			if (m + (v[NR] - v[1]) / 2 < 0.95) { print ", SLOWER by more than 5 % beyond the spread"; exit 1 }
			print ""
		}') || status=1
	echo "$line"
done
exit $status
