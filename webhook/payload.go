package webhook

import (
	"bytes"
	"encoding/json"

	"github.com/plantstore/plantstore"
)

// ContentType is the media type of every delivery's body.
const ContentType = "application/json"

// payload is the NewPlant shape of the API: tag is absent when the plant has
// none, and present, possibly empty, when it has one.
type payload struct {
	ID   int64   `json:"id"`
	Name string  `json:"name"`
	Tag  *string `json:"tag,omitempty"`
}

// Payload returns the body delivered for p: the NewPlant JSON object
// {"id":…,"name":…,"tag":…}, with "tag" only when p.HasTag. Text is kept
// as UTF-8; only what JSON requires is escaped, so "<", ">" and "&" stay as
// they are.
func Payload(p plantstore.Plant) []byte {
	v := payload{ID: p.ID, Name: p.Name}
	if p.HasTag {
		v.Tag = &p.Tag
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		// Encoding an int64 and two strings cannot fail.
		panic("webhook: encode payload: " + err.Error())
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte{'\n'})
}
