package httpapi

import (
	"net/http"
)

// options answers OPTIONS on a known path with 204 and no body. The
// router has already set Allow to the path's methods; a CORS preflight
// from an allowed origin also gets the Access-Control headers that let
// the browser send the actual request. OPTIONS needs no credentials: a
// browser's preflight never carries them, and the answer tells nothing
// that the API's document does not.
func (h *handler) options(w http.ResponseWriter, r *http.Request) {
	if h.cors != nil && isPreflight(r) {
		h.cors.preflight(w.Header(), r)
	}
	w.WriteHeader(http.StatusNoContent)
}
