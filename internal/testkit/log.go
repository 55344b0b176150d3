package testkit

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Logged counts the records of output, text from slog's TextHandler,
// whose message is exactly msg. A log is what an operator reads, so its
// text is the interface the tests check.
func Logged(output, msg string) int {
	field := "msg=" + msg
	if msg == "" || strings.IndexFunc(msg, func(r rune) bool {
		// What the TextHandler quotes a value for.
		return r == ' ' || r == '=' || r == '"' || r == utf8.RuneError || unicode.IsSpace(r) || !unicode.IsPrint(r)
	}) >= 0 {
		field = "msg=" + strconv.Quote(msg)
	}
	n := 0
	for line := range strings.Lines(output) {
		line = strings.TrimSuffix(line, "\n")
		i := strings.Index(line, field)
		if i < 0 || i > 0 && line[i-1] != ' ' {
			continue
		}
		if rest := line[i+len(field):]; rest == "" || rest[0] == ' ' {
			n++
		}
	}
	return n
}

// WebhookSecret is a webhook signing secret strong enough for the server
// to take: the example secret of the Standard Webhooks specification.
const WebhookSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
