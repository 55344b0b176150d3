package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"net/url"
	"strconv"

	"github.com/plantstore/plantstore"
)

// wirePlant is a Plant or NewPlant as JSON. A nil Tag is an absent tag.
type wirePlant struct {
	ID   *int64  `json:"id,omitempty"`
	Name *string `json:"name"`
	Tag  *string `json:"tag,omitempty"`
}

// plant returns the Plant w holds, or false when w has no name.
func (w wirePlant) plant() (plantstore.Plant, bool) {
	if w.Name == nil {
		return plantstore.Plant{}, false
	}
	p := plantstore.Plant{Name: *w.Name}
	if w.ID != nil {
		p.ID = *w.ID
	}
	if w.Tag != nil {
		p.Tag, p.HasTag = *w.Tag, true
	}
	return p, true
}

// Create stores np on the server (POST /plants) and returns the stored
// plant: the server's answer has no id, so it carries np.ID.
//
// np is checked with [plantstore.NewPlant.Validate] before anything is
// sent, so that a name or tag the server could not store exactly is never
// sent altered.
//
// Errors: a [*plantstore.ValidationError]; an [*Error] wrapping
// [plantstore.ErrConflict] when the id is taken, [plantstore.ErrUnavailable]
// when nothing was kept, or [plantstore.ErrOutcomeUnknown] when the server
// could not learn whether the plant was stored; an error wrapping
// [plantstore.ErrUnavailable] when the server could not be reached (nothing
// was sent), or [plantstore.ErrOutcomeUnknown] when the connection failed
// or ctx ended after the request was sent; a [*ProtocolError], wrapping
// [plantstore.ErrOutcomeUnknown], when the answer is not the contract's
// (anything but 200 with a Plant, or an error); the context's error when
// ctx ended before; any other [*Error] the server answered. On an error
// wrapping ErrOutcomeUnknown the plant may or may not be stored: read it
// with [Client.Plant]. On any other error nothing was stored.
func (c *Client) Create(ctx context.Context, np plantstore.NewPlant) (plantstore.Plant, error) {
	if err := np.Validate(); err != nil {
		return plantstore.Plant{}, err
	}
	w := wirePlant{ID: &np.ID, Name: &np.Name}
	if np.HasTag {
		w.Tag = &np.Tag
	}
	body, err := json.Marshal(w)
	if err != nil {
		return plantstore.Plant{}, fmt.Errorf("client: %w", err)
	}
	cl := &call{method: http.MethodPost, url: c.plantsURL, body: body, write: true, ok: http.StatusOK}
	resp, err := c.do(ctx, cl)
	if err != nil {
		if oe, ok := errors.AsType[*outcomeError](err); ok && errors.Is(oe.last, plantstore.ErrConflict) {
			return c.confirmCreated(ctx, np, oe)
		}
		return plantstore.Plant{}, err
	}
	if resp.bodyErr != nil {
		// The status said the plant was stored; only its echo was lost.
		return plantstore.Plant(np), nil
	}
	var got wirePlant
	if err := json.Unmarshal(resp.body, &got); err != nil {
		return plantstore.Plant{}, cl.protocolError(resp.status, "with a body that is not a Plant", err)
	}
	p, ok := got.plant()
	if !ok {
		return plantstore.Plant{}, cl.protocolError(resp.status, "with a Plant without a name", nil)
	}
	p.ID = np.ID
	return p, nil
}

// confirmCreated settles a create repeated after an attempt whose outcome
// is unknown and answered error 409: the plant stored under np.ID is
// np's own when it is exactly np.
func (c *Client) confirmCreated(ctx context.Context, np plantstore.NewPlant, oe *outcomeError) (plantstore.Plant, error) {
	p, err := c.Plant(ctx, np.ID)
	switch {
	case err != nil:
		return plantstore.Plant{}, oe
	case p == plantstore.Plant(np):
		return p, nil
	}
	return plantstore.Plant{}, oe.last
}

// Plant returns the plant stored under id (GET /plants/{id}).
//
// Errors: an [*Error] wrapping [plantstore.ErrNotFound] when no plant has
// that id, or [plantstore.ErrUnavailable] when the server's storage is
// unavailable; an error wrapping [plantstore.ErrUnavailable] when the
// server could not be reached; a [*ProtocolError] when the answer is not
// the contract's (anything but 200 with the plant asked for, or an
// error); the context's error, wrapped; any other [*Error] or transport
// failure.
func (c *Client) Plant(ctx context.Context, id int64) (plantstore.Plant, error) {
	cl := &call{method: http.MethodGet, url: c.plantURL(id), plant: true, ok: http.StatusOK}
	resp, err := c.do(ctx, cl)
	if err != nil {
		return plantstore.Plant{}, err
	}
	var got wirePlant
	if err := json.Unmarshal(resp.body, &got); err != nil {
		return plantstore.Plant{}, cl.protocolError(resp.status, "with a body that is not a plant", err)
	}
	p, ok := got.plant()
	switch {
	case !ok:
		return plantstore.Plant{}, cl.protocolError(resp.status, "with a plant without a name", nil)
	case got.ID == nil || p.ID != id:
		return plantstore.Plant{}, cl.protocolError(resp.status, "with another plant", nil)
	}
	return p, nil
}

// Delete removes the plant stored under id (DELETE /plants/{id}). Its id
// may then be created again.
//
// Errors: an [*Error] wrapping [plantstore.ErrNotFound] when no plant has
// that id, [plantstore.ErrUnavailable] when nothing was changed, or
// [plantstore.ErrOutcomeUnknown] when the server could not learn whether
// the plant was deleted; an error wrapping [plantstore.ErrUnavailable]
// when the server could not be reached, or [plantstore.ErrOutcomeUnknown]
// when the connection failed or ctx ended after the request was sent; a
// [*ProtocolError], wrapping [plantstore.ErrOutcomeUnknown], when the
// answer is not the contract's (anything but 204, or an error); any other
// [*Error].
func (c *Client) Delete(ctx context.Context, id int64) error {
	_, err := c.do(ctx, &call{method: http.MethodDelete, url: c.plantURL(id), write: true, plant: true, ok: http.StatusNoContent})
	if oe, ok := errors.AsType[*outcomeError](err); ok && errors.Is(oe.last, plantstore.ErrNotFound) {
		return nil // an earlier attempt, or someone else, deleted it
	}
	return err
}

func (c *Client) plantURL(id int64) string {
	return c.plantsURL + "/" + strconv.FormatInt(id, 10)
}

// List returns a page of plants in ascending id order (GET
// /plants?limit=&after=), as [plantstore.PlantStore.List] does: opts.Limit
// zero means the server's default.
//
// Errors: an [*Error] wrapping a [*plantstore.ValidationError] for field
// "limit" when the server refuses opts.Limit, or
// [plantstore.ErrUnavailable]; an error wrapping
// [plantstore.ErrUnavailable] when the server could not be reached; a
// [*ProtocolError] when the answer is not the contract's (anything but 200
// with an array of plants, or an error); the context's error, wrapped; any
// other [*Error] or transport failure.
func (c *Client) List(ctx context.Context, opts plantstore.ListOptions) ([]plantstore.Plant, error) {
	q := url.Values{}
	if opts.Limit != 0 {
		q.Set("limit", strconv.Itoa(opts.Limit))
	}
	if opts.HasAfter {
		q.Set("after", strconv.FormatInt(opts.After, 10))
	}
	u := c.plantsURL
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	plants, _, err := c.page(ctx, u)
	return plants, err
}

// All returns every stored plant in ascending id order, a page at a time:
// it follows each page's Link rel="next" until a page has none. It stops at
// the first error, which it yields with a zero Plant. Plants created or
// deleted while it runs may or may not be seen.
//
// Errors: those of [Client.List]; an error when a next link leads to
// another server than the client's (the token is not sent there) or when
// a page does not continue the previous one in ascending order.
func (c *Client) All(ctx context.Context) iter.Seq2[plantstore.Plant, error] {
	return func(yield func(plantstore.Plant, error) bool) {
		next, started := c.plantsURL, false
		var last int64
		for next != "" {
			plants, resp, err := c.page(ctx, next)
			if err != nil {
				yield(plantstore.Plant{}, err)
				return
			}
			for _, p := range plants {
				if started && p.ID <= last {
					yield(plantstore.Plant{}, fmt.Errorf("client: %s: plant %d does not follow plant %d", next, p.ID, last))
					return
				}
				started, last = true, p.ID
				if !yield(p, nil) {
					return
				}
			}
			if next, err = c.nextPage(resp); err != nil {
				yield(plantstore.Plant{}, err)
				return
			}
			if next != "" && len(plants) == 0 {
				yield(plantstore.Plant{}, fmt.Errorf("client: %s: an empty page links to a next page", resp.url))
				return
			}
		}
	}
}

// page reads the list at u: its plants, and the response they came in.
func (c *Client) page(ctx context.Context, u string) ([]plantstore.Plant, *response, error) {
	cl := &call{method: http.MethodGet, url: u, ok: http.StatusOK}
	resp, err := c.do(ctx, cl)
	if err != nil {
		return nil, nil, err
	}
	var wire []wirePlant
	if err := json.Unmarshal(resp.body, &wire); err != nil {
		return nil, nil, cl.protocolError(resp.status, "with a body that is not an array of plants", err)
	}
	plants := make([]plantstore.Plant, len(wire))
	for i, w := range wire {
		var ok bool
		plants[i], ok = w.plant()
		switch {
		case w.ID == nil:
			return nil, nil, cl.protocolError(resp.status, "with a plant without an id", nil)
		case !ok:
			return nil, nil, cl.protocolError(resp.status, "with a plant without a name", nil)
		}
	}
	return plants, resp, nil
}

// nextPage returns the absolute URL of the page after resp, or "" when
// there is none. A next page on another server is refused: the client's
// token is for its own server only.
func (c *Client) nextPage(resp *response) (string, error) {
	ref, ok := nextLink(resp.header.Values("Link"))
	if !ok {
		return "", nil
	}
	next, err := resp.url.Parse(ref)
	if err != nil {
		return "", fmt.Errorf("client: %s: invalid next link %q: %w", resp.url, ref, err)
	}
	if next.Scheme != c.base.Scheme || next.Host != c.base.Host {
		return "", fmt.Errorf("client: %s: the next link %q leads to another server", resp.url, ref)
	}
	return next.String(), nil
}

// Ping reports whether the server is ready to serve requests (GET
// /readyz): reachable, and its storage reachable. It makes one attempt, so
// that it tells how the server is now.
//
// Errors: an [*Error] wrapping [plantstore.ErrUnavailable] when the
// server's storage is unavailable; an error wrapping
// [plantstore.ErrUnavailable] when the server could not be reached; a
// [*ProtocolError] when the answer is neither 200 nor an error; the
// context's error, wrapped; any other [*Error] or transport failure.
func (c *Client) Ping(ctx context.Context) error {
	_, err := c.do(ctx, &call{method: http.MethodGet, url: c.readyzURL, once: true, ok: http.StatusOK})
	return err
}
