package testkit

import (
	"io"
	"log/slog"
)

// NewLogger returns a logger that writes slog's text lines, without their
// time, to w, at level and above, so that tests can compare lines whole.
func NewLogger(w io.Writer, level slog.Level) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{
		Level: level,
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey && len(groups) == 0 {
				return slog.Attr{}
			}
			return a
		},
	}))
}
