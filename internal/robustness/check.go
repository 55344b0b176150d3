package robustness

import (
	"fmt"
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
	}
	r.Took = time.Since(start)
	return r, nil
}
