package httpapi

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strconv"

	"github.com/plantstore/plantstore"
)

// An apiError is a failure the handler itself detects, already in the
// terms of the wire Error.
type apiError struct {
	code int    // the Error's "error" value
	msg  string // the Error's "message" value
	// challenge, for code 401, is the WWW-Authenticate header value.
	challenge string
}

func (e *apiError) Error() string { return "httpapi: " + e.msg }

const realm = `Bearer realm="plantstore"`

var (
	errMissingToken = &apiError{code: http.StatusUnauthorized,
		msg:       "missing bearer token: send Authorization: Bearer <token>",
		challenge: realm}
	errMalformedAuth = &apiError{code: http.StatusUnauthorized,
		msg:       "malformed Authorization header: want Bearer <token>",
		challenge: realm + `, error="invalid_request", error_description="malformed Authorization header"`}
	errInvalidToken401 = &apiError{code: http.StatusUnauthorized,
		msg:       "invalid bearer token",
		challenge: realm + `, error="invalid_token", error_description="the access token is not valid"`}
	errNoAuthenticator = &apiError{code: http.StatusUnauthorized,
		msg:       "no token is accepted: the server was built without an authenticator",
		challenge: realm + `, error="invalid_token", error_description="no token is accepted"`}
	errContentType = &apiError{code: http.StatusUnsupportedMediaType,
		msg: "Content-Type must be application/json"}
	errContentEncoding = &apiError{code: http.StatusUnsupportedMediaType,
		msg: "Content-Encoding is not supported: send the body uncompressed"}
	errNotFoundPath = &apiError{code: http.StatusNotFound, msg: "no such resource"}
	errMethod       = &apiError{code: http.StatusMethodNotAllowed, msg: "method not allowed for this resource"}
	errInternal     = &apiError{code: http.StatusInternalServerError, msg: "internal error"}
	errUnavailable  = &apiError{code: http.StatusServiceUnavailable, msg: "storage unavailable, try again later"}
	errConflict     = &apiError{code: http.StatusConflict, msg: "a plant with this id already exists"}
	errPlantMissing = &apiError{code: http.StatusNotFound, msg: "no plant has this id"}
	errBadID        = &apiError{code: http.StatusBadRequest, msg: "invalid id: must be a 64-bit signed integer"}
)

func errBodyTooLarge(limit int64) *apiError {
	return &apiError{code: http.StatusRequestEntityTooLarge,
		msg: "request body exceeds the limit of " + strconv.FormatInt(limit, 10) + " bytes"}
}

// wireError turns any error into the wire Error's code and message. It is
// the one place that knows the table; an error it does not recognise is
// logged and answered as a generic internal error.
func (h *handler) wireError(r *http.Request, err error) *apiError {
	var (
		ae *apiError
		ve *plantstore.ValidationError
		se *syntaxError
	)
	switch {
	case errors.As(err, &ae):
		return ae
	case errors.As(err, &se):
		return &apiError{code: http.StatusBadRequest, msg: se.Error()}
	case errors.As(err, &ve):
		return &apiError{code: http.StatusBadRequest, msg: "invalid " + ve.Field + ": " + ve.Reason}
	case errors.Is(err, plantstore.ErrConflict):
		return errConflict
	case errors.Is(err, plantstore.ErrNotFound):
		return errPlantMissing
	case errors.Is(err, plantstore.ErrUnavailable),
		errors.Is(err, context.Canceled),
		errors.Is(err, context.DeadlineExceeded):
		h.logger.LogAttrs(r.Context(), slog.LevelWarn, "httpapi: storage unavailable",
			slog.String("method", r.Method), slog.String("path", r.URL.Path), slog.Any("err", err))
		return errUnavailable
	}
	h.logger.LogAttrs(r.Context(), slog.LevelError, "httpapi: internal error",
		slog.String("method", r.Method), slog.String("path", r.URL.Path), slog.Any("err", err))
	return errInternal
}

// writeError answers r with the wire Error for err.
func (h *handler) writeError(w http.ResponseWriter, r *http.Request, err error) {
	ae := h.wireError(r, err)
	hdr := w.Header()
	if ae.challenge != "" {
		hdr["Www-Authenticate"] = []string{ae.challenge}
	}
	if ae.code == http.StatusRequestEntityTooLarge {
		// The rest of the body is not read; do not leave it on the
		// connection for the next request.
		hdr["Connection"] = closeValue
	}
	status := http.StatusBadRequest
	if h.conventional {
		status = ae.code
	}
	if rec, ok := w.(*accessRecorder); ok {
		rec.code = ae.code
	}
	buf := bufPool.Get().(*buffer)
	b := append(buf.b[:0], `{"error":`...)
	b = strconv.AppendInt(b, int64(ae.code), 10)
	b = append(b, `,"message":`...)
	b = appendString(b, ae.msg)
	b = append(b, '}')
	writeJSON(w, status, b)
	buf.b = b
	putBuffer(buf)
}
