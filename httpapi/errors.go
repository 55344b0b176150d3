package httpapi

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/internal/wire"
)

// An apiError is a failure the handler itself detects, already in the
// terms of the wire Error.
type apiError struct {
	code int    // the Error's "error" value
	msg  string // the Error's "message" value
	// challenge, for code 401, is the WWW-Authenticate header's value,
	// shared by every response that sends it.
	challenge []string
}

func (e *apiError) Error() string { return "httpapi: " + e.msg }

const realm = `Bearer realm="plantstore"`

// The answers the handler gives, one per failure it detects. They are not
// the verdicts an [Authenticator] returns ([ErrForbidden], errNoToken,
// errUnknownToken), which rejection turns into errCallerForbidden,
// errMissingToken and errInvalidToken.
var (
	errMissingToken = &apiError{code: wire.CodeUnauthorized,
		msg:       "missing bearer token: send Authorization: Bearer <token>",
		challenge: []string{realm}}
	// errOtherScheme answers credentials of a scheme other than Bearer
	// (Basic, Negotiate): as a request without any, the challenge has no
	// error code (RFC 6750, section 3.1).
	errOtherScheme = &apiError{code: wire.CodeUnauthorized,
		msg:       "unsupported authorization scheme: send Authorization: Bearer <token>",
		challenge: []string{realm}}
	errMalformedAuth = &apiError{code: wire.CodeUnauthorized,
		msg:       "malformed Authorization header: want Bearer <token>",
		challenge: []string{realm + `, error="invalid_request", error_description="malformed Authorization header"`}}
	errInvalidToken = &apiError{code: wire.CodeUnauthorized,
		msg:       "invalid bearer token",
		challenge: []string{realm + `, error="invalid_token", error_description="the access token is not valid"`}}
	errNoAuthenticator = &apiError{code: wire.CodeUnauthorized,
		msg:       "no token is accepted: the server was built without an authenticator",
		challenge: []string{realm + `, error="invalid_token", error_description="no token is accepted"`}}
	errCallerForbidden = &apiError{code: wire.CodeForbidden,
		msg: "forbidden: these credentials may not use this resource"}
	errAuthUnavailable = &apiError{code: wire.CodeUnavailable,
		msg: "authentication unavailable, try again later"}
	errContentType = &apiError{code: wire.CodeUnsupportedMedia,
		msg: "Content-Type must be application/json"}
	errContentEncoding = &apiError{code: wire.CodeUnsupportedMedia,
		msg: "Content-Encoding is not supported: send the body uncompressed"}
	errNotFoundPath   = &apiError{code: wire.CodeNotFound, msg: wire.NoSuchResource}
	errMethod         = &apiError{code: wire.CodeMethodNotAllowed, msg: "method not allowed for this resource"}
	errInternal       = &apiError{code: wire.CodeInternal, msg: "internal error"}
	errUnavailable    = &apiError{code: wire.CodeUnavailable, msg: "storage unavailable, try again later"}
	errOutcome        = &apiError{code: wire.CodeOutcomeUnknown, msg: "the storage did not confirm the outcome: the change may or may not have been kept; read the plant before retrying (a retried create may answer 409)"}
	errConflict       = &apiError{code: wire.CodeConflict, msg: "a plant with this id already exists"}
	errPlantMissing   = &apiError{code: wire.CodeNotFound, msg: wire.PlantMissing}
	errBadID          = &apiError{code: wire.CodeInvalid, msg: wire.Invalid("id", "must be a 64-bit signed integer in canonical decimal form")}
	errMalformedQuery = &apiError{code: wire.CodeInvalid, msg: "malformed query string: want name=value pairs joined by & with valid %-escapes"}
	errReadBody       = &apiError{code: wire.CodeInvalid, msg: "could not read the request body"}
)

func errBodyTooLarge(limit int64) *apiError {
	return &apiError{code: wire.CodeTooLarge,
		msg: "request body exceeds the limit of " + strconv.FormatInt(limit, 10) + " bytes"}
}

// rejection turns an [Authenticator]'s error into the Error the request is
// answered with, and logs it: a backend that cannot be reached at level
// Warn, a refused caller at level Debug. noToken reports whether the
// request had no Authorization header.
func (h *handler) rejection(r *http.Request, err error, noToken bool) *apiError {
	ae := errInvalidToken
	level, msg := slog.LevelDebug, "httpapi: token rejected"
	switch {
	case errors.Is(err, plantstore.ErrUnavailable):
		ae = errAuthUnavailable
		level, msg = slog.LevelWarn, "httpapi: authentication unavailable"
	case errors.Is(err, ErrForbidden):
		ae = errCallerForbidden
	case noToken:
		ae = errMissingToken
	}
	lg := h.logger
	if ae == errAuthUnavailable {
		lg = h.storageLog
	}
	lg.LogAttrs(r.Context(), level, msg,
		slog.String("method", logSafe(r.Method)), slog.String("path", logSafe(r.URL.Path)),
		slog.Int("error", ae.code), slog.Any("err", err))
	return ae
}

// wireError turns any error into the wire Error's code and message, and
// the WWW-Authenticate challenge to send with it, if any. It is the one
// place that knows the table; an error it does not recognise is logged and
// answered as a generic internal error.
func (h *handler) wireError(r *http.Request, err error) (code int, msg string, challenge []string) {
	if ae, ok := errors.AsType[*apiError](err); ok {
		return ae.code, ae.msg, ae.challenge
	}
	if se, ok := errors.AsType[*syntaxError](err); ok {
		return wire.CodeInvalid, se.Error(), nil
	}
	if ve, ok := errors.AsType[*plantstore.ValidationError](err); ok {
		return wire.CodeInvalid, wire.Invalid(ve.Field, ve.Reason), nil
	}
	ae := errInternal
	switch {
	case errors.Is(err, plantstore.ErrConflict):
		ae = errConflict
	case errors.Is(err, plantstore.ErrNotFound):
		ae = errPlantMissing
	case errors.Is(err, plantstore.ErrOutcomeUnknown):
		h.storageLog.LogAttrs(r.Context(), slog.LevelWarn, "httpapi: outcome unknown",
			slog.String("method", logSafe(r.Method)), slog.String("path", logSafe(r.URL.Path)), slog.Any("err", err))
		ae = errOutcome
	case errors.Is(err, context.Canceled) && r.Context().Err() != nil:
		// The client went away: nothing is wrong with the storage, and
		// nobody reads the answer.
		h.logger.LogAttrs(r.Context(), slog.LevelDebug, "httpapi: request canceled",
			slog.String("method", logSafe(r.Method)), slog.String("path", logSafe(r.URL.Path)), slog.Any("err", err))
		ae = errUnavailable
	case errors.Is(err, plantstore.ErrUnavailable),
		errors.Is(err, context.Canceled),
		errors.Is(err, context.DeadlineExceeded):
		h.storageLog.LogAttrs(r.Context(), slog.LevelWarn, "httpapi: storage unavailable",
			slog.String("method", logSafe(r.Method)), slog.String("path", logSafe(r.URL.Path)), slog.Any("err", err))
		ae = errUnavailable
	default:
		h.logger.LogAttrs(r.Context(), slog.LevelError, "httpapi: internal error",
			slog.String("method", logSafe(r.Method)), slog.String("path", logSafe(r.URL.Path)), slog.Any("err", err))
	}
	return ae.code, ae.msg, nil
}

// maxRetryAfter bounds the Retry-After of an error 503, in seconds.
const maxRetryAfter = 30

// retryAfterValues holds the Retry-After header's values, 1 to
// maxRetryAfter seconds, made once.
var retryAfterValues = func() (v [maxRetryAfter + 1][]string) {
	for i := range v {
		v[i] = []string{strconv.Itoa(i)}
	}
	return v
}()

// retryAfter returns the Retry-After of an error 503; see
// retryAfterSeconds.
func (h *handler) retryAfter() []string {
	var failing time.Duration
	if since := h.ps.WritesFailingSince(); !since.IsZero() {
		failing = time.Since(since)
	}
	return retryAfterValues[retryAfterSeconds(failing)]
}

// retryAfterSeconds returns the Retry-After of an error 503 after the
// storage's writes have been failing for failing (0 when they are not: the
// 503 came from a read, or from authentication): half that time, rounded
// up, from 1 to maxRetryAfter seconds. A storage down for a moment is
// tried again soon; one that has been down a while (a failover, a restart)
// is likely to stay down a while more, and clients that all came back at
// once would only add to its load when it does.
func retryAfterSeconds(failing time.Duration) int {
	return min(max(int((failing+2*time.Second-1)/(2*time.Second)), 1), maxRetryAfter)
}

// ErrorCodes returns every code an Error the handler answers with may
// hold, ascending: the conventional HTTP status of each failure. A [Hooks]
// Served reports one of them, or 0.
func ErrorCodes() []int { return wire.Codes() }

// writeError answers r with the wire Error for err. An error 503 carries
// Retry-After (see retryAfter).
func (h *handler) writeError(w http.ResponseWriter, r *http.Request, err error) {
	code, msg, challenge := h.wireError(r, err)
	hdr := w.Header()
	if challenge != nil {
		hdr["Www-Authenticate"] = challenge
	}
	if code == wire.CodeUnavailable {
		hdr["Retry-After"] = h.retryAfter()
	}
	if code == wire.CodeTooLarge {
		// The rest of the body is not read; do not leave it on the
		// connection for the next request.
		hdr["Connection"] = closeValue
	}
	status := http.StatusBadRequest
	if h.conventional {
		status = code
	}
	if rec, ok := w.(*accessRecorder); ok {
		rec.code = code
	}
	buf := bufPool.Get().(*buffer)
	b := append(buf.b[:0], `{"error":`...)
	b = strconv.AppendInt(b, int64(code), 10)
	b = append(b, `,"message":`...)
	b = appendString(b, msg)
	b = append(b, '}')
	writeJSON(w, status, b)
	buf.b = b
	putBuffer(buf)
}
