package main

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"time"
)

// report prints the run's figures, one "key: value" line each, so that the
// output is both readable and easy to grep.
func report(w io.Writer, c *config, r *result, elapsed time.Duration) {
	var transportErrs int64
	for _, v := range r.transport {
		transportErrs += v
	}
	n := int64(len(r.latencies)) + transportErrs
	line(w, "target", "%s", c.target)
	line(w, "connections", "%d", c.conns)
	line(w, "first id", "%d", c.startID)
	line(w, "requests", "%d", n)
	line(w, "duration", "%s", elapsed.Round(time.Millisecond))
	line(w, "req/s", "%.1f", float64(n)/elapsed.Seconds())

	slices.Sort(r.latencies)
	line(w, "latency p50", "%s", fmtDur(percentile(r.latencies, 50)))
	line(w, "latency p90", "%s", fmtDur(percentile(r.latencies, 90)))
	line(w, "latency p99", "%s", fmtDur(percentile(r.latencies, 99)))
	line(w, "latency max", "%s", fmtDur(percentile(r.latencies, 100)))

	for _, s := range slices.Sorted(maps.Keys(r.statuses)) {
		line(w, "status "+strconv.Itoa(s), "%d", r.statuses[s])
	}
	for _, code := range slices.SortedFunc(maps.Keys(r.codes), codeOrder) {
		line(w, "error code "+code, "%d", r.codes[code])
	}
	line(w, "transport errors", "%d", transportErrs)
	for _, cause := range slices.Sorted(maps.Keys(r.transport)) {
		line(w, "transport error", "%d × %s", r.transport[cause], cause)
	}
}

// reportWebhooks prints what the webhook receiver saw: the creates and
// deliveries per second of the load, the backlog the load left and how
// long it took to drain.
func reportWebhooks(w io.Writer, r *result, elapsed time.Duration, f webhookFigures) {
	created := r.statuses[200]
	line(w, "creates/s", "%.1f", float64(created)/elapsed.Seconds())
	line(w, "webhooks in load", "%d", f.duringLoad)
	line(w, "webhooks/s in load", "%.1f", float64(f.duringLoad)/elapsed.Seconds())
	line(w, "webhook backlog", "%d", f.backlog)
	if f.left > 0 {
		line(w, "webhook drain", "not drained: %d left after %s", f.left, f.drain.Round(time.Millisecond))
	} else {
		line(w, "webhook drain", "%s", f.drain.Round(time.Millisecond))
	}
	delivered := int64(f.duringLoad + f.backlog - f.left)
	line(w, "webhooks/s overall", "%.1f", float64(delivered)/(elapsed+f.drain).Seconds())
	line(w, "webhook duplicates", "%d", f.dups)
	if f.refused > 0 {
		line(w, "webhooks refused", "%d", f.refused)
	}
	if f.unsigned > 0 {
		line(w, "webhook bad signature", "%d", f.unsigned)
	}
	if f.foreign > 0 {
		line(w, "webhook other plants", "%d", f.foreign)
	}
}

// line prints one "key: value" line with the values aligned.
func line(w io.Writer, key, format string, args ...any) {
	fmt.Fprintf(w, "%-20s "+format+"\n", append([]any{key + ":"}, args...)...)
}

// percentile returns the nearest-rank p-th percentile of sorted, or 0 when
// it is empty.
func percentile[T any](sorted []T, p int) T {
	if len(sorted) == 0 {
		var zero T
		return zero
	}
	rank := (len(sorted)*p + 99) / 100 // ceil(len·p/100)
	return sorted[max(rank, 1)-1]
}

func fmtDur(d time.Duration) string {
	return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 3, 64) + "ms"
}

// codeOrder sorts numeric codes numerically, before anything else.
func codeOrder(a, b string) int {
	ai, aerr := strconv.Atoi(a)
	bi, berr := strconv.Atoi(b)
	switch {
	case aerr == nil && berr == nil:
		return cmp.Compare(ai, bi)
	case aerr == nil:
		return -1
	case berr == nil:
		return 1
	}
	return cmp.Compare(a, b)
}
