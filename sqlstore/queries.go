package sqlstore

import (
	"strconv"
	"strings"
)

// queries holds the statements a Store runs, in its dialect.
type queries struct {
	dialect       Dialect
	plant         string
	list          string
	delete        string
	pendingEvents string
	deleteEvent   string
}

func newQueries(d Dialect) queries {
	q := queries{dialect: d}
	p := q.param
	q.plant = `SELECT name, tag FROM plants WHERE id = ` + p(1)
	q.list = `SELECT id, name, tag FROM plants WHERE id >= ` + p(1) + ` ORDER BY id LIMIT ` + p(2)
	q.delete = `DELETE FROM plants WHERE id = ` + p(1)
	q.pendingEvents = `SELECT seq, plant_id, name, tag, created_us FROM events WHERE seq > ` + p(1) + ` ORDER BY seq LIMIT ` + p(2)
	q.deleteEvent = `DELETE FROM events WHERE seq = ` + p(1)
	return q
}

// param returns the placeholder of the nth argument, counting from 1.
func (q queries) param(n int) string {
	if q.dialect == Postgres {
		return "$" + strconv.Itoa(n)
	}
	return "?" + strconv.Itoa(n)
}

// values appends rows tuples of cols placeholders each, comma-separated.
func (q queries) values(b *strings.Builder, rows, cols int) {
	n := 1
	for r := range rows {
		if r > 0 {
			b.WriteString(", ")
		}
		b.WriteByte('(')
		for c := range cols {
			if c > 0 {
				b.WriteString(", ")
			}
			b.WriteString(q.param(n))
			n++
		}
		b.WriteByte(')')
	}
}

// insertPlants returns the statement that inserts rows plants, skipping
// those whose id is taken, and returns the ids it inserted.
func (q queries) insertPlants(rows int) string {
	var b strings.Builder
	b.WriteString(`INSERT INTO plants (id, name, tag) VALUES `)
	q.values(&b, rows, 3)
	b.WriteString(` ON CONFLICT (id) DO NOTHING RETURNING id`)
	return b.String()
}

// insertEvents returns the statement that inserts rows events.
func (q queries) insertEvents(rows int) string {
	var b strings.Builder
	b.WriteString(`INSERT INTO events (plant_id, name, tag, created_us) VALUES `)
	q.values(&b, rows, 4)
	return b.String()
}
