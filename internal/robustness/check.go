package robustness

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
)

// A Report is the outcome of [Check].
type Report struct {
	// Result is porcupine.Ok when the history is linearizable,
	// porcupine.Illegal when it is not, porcupine.Unknown when the
	// checker ran out of time.
	Result porcupine.CheckResult
	// Took is how long the check took, the visualization included.
	Took time.Duration
	// Visualization is the HTML file written when Result is not Ok, or "".
	Visualization string
	// Explanation, when Result is Illegal, names the first id whose
	// history is not linearizable, and the operations where every
	// linearization the checker found stops.
	Explanation string
}

// Check checks that history is linearizable under [Model], giving up
// after timeout. When it is not, or the check could not decide in time, it
// checks again collecting the longest partial linearizations, and writes
// porcupine's HTML visualization of them to vizPath.
func Check(history []porcupine.Operation, timeout time.Duration, vizPath string) (Report, error) {
	start := time.Now()
	r := Report{Result: porcupine.CheckOperationsTimeout(Model, history, timeout)}
	if r.Result != porcupine.Ok {
		_, info := porcupine.CheckOperationsVerbose(Model, history, timeout)
		if err := porcupine.VisualizePath(Model, info, vizPath); err != nil {
			r.Took = time.Since(start)
			return r, fmt.Errorf("robustness: writing the visualization: %w", err)
		}
		r.Visualization = vizPath
		if r.Result == porcupine.Illegal {
			r.Explanation = explain(history, timeout)
		}
	}
	r.Took = time.Since(start)
	return r, nil
}

// explain describes the first id whose history is not linearizable: the
// state after the longest linearizable prefix found, the last operations
// of that prefix, and the operations that could come next, of which none
// can.
func explain(history []porcupine.Operation, timeout time.Duration) string {
	for _, part := range partitionByID(history) {
		res, info := porcupine.CheckOperationsVerbose(Model, part, timeout)
		if res != porcupine.Illegal {
			continue
		}
		var longest []porcupine.Operation
		for _, l := range info.PartialLinearizationsOperations()[0] {
			if len(l) > len(longest) {
				longest = l
			}
		}
		state := Model.Init()
		for _, op := range longest {
			_, state = Model.Step(state, op.Input, op.Output)
		}
		linearized := map[porcupine.Operation]bool{}
		for _, op := range longest {
			linearized[op] = true
		}
		var rest []porcupine.Operation
		for _, op := range part {
			if !linearized[op] {
				rest = append(rest, op)
			}
		}
		slices.SortFunc(rest, func(a, b porcupine.Operation) int { return int(a.Call - b.Call) })
		// The next operation must be one called before the first of the
		// rest returned.
		firstReturn := rest[0].Return
		for _, op := range rest {
			firstReturn = min(firstReturn, op.Return)
		}
		var b strings.Builder
		fmt.Fprintf(&b, "id %d: %d of its %d operations linearize, ending in state %s", part[0].Input.(Input).ID,
			len(longest), len(part), Model.DescribeState(state))
		b.WriteString("; the last of them:")
		for _, op := range longest[max(0, len(longest)-3):] {
			b.WriteString("\n\t" + describeTimed(op))
		}
		b.WriteString("\nnone of these can come next:")
		for _, op := range rest {
			if op.Call > firstReturn {
				break
			}
			b.WriteString("\n\t" + describeTimed(op))
		}
		return b.String()
	}
	return "no single id's history is illegal on its own"
}

// describeTimed describes op with its client and its call and return
// times in milliseconds since the history began.
func describeTimed(op porcupine.Operation) string {
	return fmt.Sprintf("client %d [%.3f ms, %.3f ms] %s", op.ClientId, float64(op.Call)/1e6, float64(op.Return)/1e6,
		Model.DescribeOperation(op.Input, op.Output))
}
