package client

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strconv"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/internal/wire"
)

var (
	// ErrUnauthorized reports that the server refused the client's
	// credentials as missing, malformed or unknown (error 401): check the
	// token given to [WithToken].
	ErrUnauthorized = errors.New("client: credentials refused")

	// ErrForbidden reports that the server knows the client's credentials
	// but does not let them use the resource (error 403).
	ErrForbidden = errors.New("client: credentials forbidden")
)

// An Error is a failure the server answered: its Error body, or, for a
// response without one (a proxy's page, say), its HTTP status.
//
// It unwraps to the error it stands for, the library's or the client's,
// so that errors.Is and errors.As treat it as they treat those:
//
//   - error 409: [plantstore.ErrConflict]
//   - error 404 for one plant's path: [plantstore.ErrNotFound]
//   - error 400 "invalid <field>: <reason>" in the server's Error body, for
//     a field the server validates (id, name, tag, limit, after): a
//     [*plantstore.ValidationError]. The Error shape holds only a code and
//     a message, so the field and the reason are parsed from the message,
//     which the server writes in this one form for every such field; a
//     400 whose message names no field (malformed JSON, a malformed query)
//     unwraps to nothing
//   - error 401: [ErrUnauthorized]; error 403: [ErrForbidden]
//   - error 503 in the server's Error body: [plantstore.ErrUnavailable];
//     nothing of the request was kept. A 503 without one (a proxy's page)
//     to a create or delete: [plantstore.ErrOutcomeUnknown], since a proxy
//     may answer it after forwarding the request; to a read:
//     [plantstore.ErrUnavailable]
//   - error 504, or a gateway's 502, to a create or delete:
//     [plantstore.ErrOutcomeUnknown]; to a read: [plantstore.ErrUnavailable]
//
// The code is read from the Error body, so these hold whether the server
// answers failures with the contract's 400 or with conventional statuses;
// a response without an Error body (a proxy's page) is mapped by its
// status. Any other Error (413, 415, 500, …) unwraps to nothing.
type Error struct {
	// StatusCode is the response's HTTP status. The plantstore server
	// answers each failure with 400 unless it uses conventional statuses.
	StatusCode int
	// Code is the Error body's "error" code, the conventional HTTP status
	// of the failure; the HTTP status when the body was not an Error.
	Code int
	// Message is the Error body's "message"; the status text when the body
	// was not an Error.
	Message string

	err    error       // what it stands for, or nil
	header http.Header // the response's header
}

func (e *Error) Error() string {
	return "client: error " + strconv.Itoa(e.Code) + ": " + e.Message
}

// Unwrap returns the error e stands for, or nil.
func (e *Error) Unwrap() error { return e.err }

// responseError reads a failed response to cl: the code from its Error
// body when it has one, else from its status.
func responseError(cl *call, status int, header http.Header, body []byte) *Error {
	e := &Error{StatusCode: status, Code: status, Message: http.StatusText(status), header: header}
	var answer struct {
		Error   *int32  `json:"error"`
		Message *string `json:"message"`
	}
	fromServer := json.Unmarshal(body, &answer) == nil && answer.Error != nil
	if fromServer {
		e.Code = int(*answer.Error)
		e.Message = ""
		if answer.Message != nil {
			e.Message = *answer.Message
		}
	}
	switch e.Code {
	case http.StatusBadRequest:
		if fromServer {
			if ve := validationError(e.Message); ve != nil {
				e.err = ve
			}
		}
	case http.StatusUnauthorized:
		e.err = ErrUnauthorized
	case http.StatusForbidden:
		e.err = ErrForbidden
	case http.StatusNotFound:
		if fromServer && cl.plant && e.Message != wire.NoSuchResource {
			e.err = plantstore.ErrNotFound
		}
	case http.StatusConflict:
		e.err = plantstore.ErrConflict
	case http.StatusServiceUnavailable:
		// The server's own 503 promises that nothing was kept; a proxy's,
		// without an Error body, may come after it forwarded the request.
		e.err = plantstore.ErrUnavailable
		if !fromServer && cl.write {
			e.err = plantstore.ErrOutcomeUnknown
		}
	case http.StatusBadGateway, http.StatusGatewayTimeout:
		e.err = plantstore.ErrUnavailable
		if cl.write {
			e.err = plantstore.ErrOutcomeUnknown
		}
	}
	return e
}

// failure tells what e means for repeating cl.
func (e *Error) failure(cl *call) failure {
	switch {
	case e.err == plantstore.ErrOutcomeUnknown:
		return unknownOutcome
	case e.Code == http.StatusServiceUnavailable:
		return notKept
	case e.Code == http.StatusBadGateway, e.Code == http.StatusGatewayTimeout:
		return readFailed
	}
	return final
}

// validationError returns the field and reason of error 400's message
// about one of the fields the server validates, or nil. The Error shape
// holds only a code and a message, so the field is read from the message,
// by the package that writes it on the server (wire.Invalid); a field
// outside wire.Fields is not taken for one, so that another server's
// "invalid <something>: …" does not pass for a field of the API.
func validationError(msg string) *plantstore.ValidationError {
	field, reason, ok := wire.ParseInvalid(msg)
	if !ok || !slices.Contains(wire.Fields(), field) {
		return nil
	}
	return &plantstore.ValidationError{Field: field, Reason: reason}
}

// A ProtocolError is an answer outside the API contract: a success status
// other than the call's own (the contract answers a create 200 with the
// Plant, a read of a plant 200 with it, a list 200 with an array of
// plants, a delete 204, a ping 200), a body that is not the one its status
// promises, or a redirect, which the API never answers and the client
// never follows (see [New]). The call did not succeed. A create or delete
// may still have been acted on by whatever answered, so for those the
// error also wraps [plantstore.ErrOutcomeUnknown]. It is not repeated: it
// usually means that the base URL leads somewhere other than a plantstore
// server, which another attempt would not change.
type ProtocolError struct {
	// StatusCode is the response's HTTP status.
	StatusCode int

	msg   string // the request, and what is wrong with its answer
	err   error  // why the body is not the call's, or nil
	write bool   // the call was a create or delete
}

func (e *ProtocolError) Error() string {
	s := "client: " + e.msg
	if e.err != nil {
		s += ": " + e.err.Error()
	}
	if e.write {
		s += " (whether it took effect is unknown)"
	}
	return s
}

// Unwrap returns [plantstore.ErrOutcomeUnknown] for a create or delete,
// and the error that kept the body from being read as the call's answer,
// if any.
func (e *ProtocolError) Unwrap() []error {
	var errs []error
	if e.write {
		errs = append(errs, plantstore.ErrOutcomeUnknown)
	}
	if e.err != nil {
		errs = append(errs, e.err)
	}
	return errs
}

// protocolError reports that the answer to cl, of status status, is
// outside the contract: what is wrong with it, and err, the cause if any.
func (cl *call) protocolError(status int, what string, err error) *ProtocolError {
	return &ProtocolError{
		StatusCode: status,
		msg:        cl.method + " " + cl.url + " was answered " + statusText(status) + " " + what,
		err:        err,
		write:      cl.write,
	}
}

// statusError reports res, an answer to cl that is neither the contract's
// success for it nor an error.
func statusError(cl *call, res *http.Response) *ProtocolError {
	what := "instead of " + statusText(cl.ok)
	if res.StatusCode >= 300 && res.StatusCode <= 399 {
		if loc, err := res.Location(); err == nil {
			what = "to " + loc.Redacted() + ": the client follows no redirect; give it the server's URL"
		}
	}
	return cl.protocolError(res.StatusCode, what, nil)
}

// statusText returns an HTTP status as a response line shows it, in the
// client's words rather than the server's.
func statusText(code int) string {
	if t := http.StatusText(code); t != "" {
		return strconv.Itoa(code) + " " + t
	}
	return strconv.Itoa(code)
}

// A transportError is a request that got no response, with what that
// means for the plant: [plantstore.ErrUnavailable] when nothing was sent,
// [plantstore.ErrOutcomeUnknown] when a create or delete was sent.
type transportError struct {
	sentinel error
	err      error
}

func (e *transportError) Error() string {
	if e.sentinel == plantstore.ErrUnavailable {
		return "client: server unreachable, nothing was sent: " + e.err.Error()
	}
	return "client: outcome unknown, no answer to a request that may have reached the server: " + e.err.Error()
}

func (e *transportError) Unwrap() []error { return []error{e.sentinel, e.err} }

// An outcomeError is a create or delete that was repeated after an attempt
// whose outcome is unknown, and whose later attempts did not settle it.
// It unwraps to that attempt's error, which wraps
// [plantstore.ErrOutcomeUnknown], and to the context's error if that ended
// the attempts; what the last attempt got is in its message.
type outcomeError struct {
	unknown  error
	last     error
	attempts int
}

func (e *outcomeError) Error() string {
	return e.unknown.Error() + " (" + strconv.Itoa(e.attempts) + " attempts, the last: " + e.last.Error() + ")"
}

func (e *outcomeError) Unwrap() []error {
	if isContextError(e.last) {
		return []error{e.unknown, e.last}
	}
	return []error{e.unknown}
}

func isContextError(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}
