package sqlstore

import (
	"strconv"
	"strings"
)

// queries holds the statements a Store runs, in its dialect.
type queries struct {
	dialect Dialect
	plant   string
	list    string
	delete  string
	depth   string
	// seqRange reads the least and greatest seq of the events; dropEvents
	// and dropDeliveries delete the events, and the deliveries, whose seq
	// is at most $1.
	seqRange       string
	dropEvents     string
	dropDeliveries string
	// setTimeouts sets a PostgreSQL transaction's lock and idle timeouts,
	// or is "" (see Store.begin).
	setTimeouts string
	// lockOldEvents locks, in seq order, the events whose seq is at most
	// $1 (PostgreSQL).
	lockOldEvents string
}

func newQueries(d Dialect) queries {
	q := queries{dialect: d}
	p := q.param
	q.plant = `SELECT name, tag FROM plants WHERE id = ` + p(1)
	q.list = `SELECT id, name, tag FROM plants WHERE id >= ` + p(1) + ` ORDER BY id LIMIT ` + p(2)
	q.delete = `DELETE FROM plants WHERE id = ` + p(1)
	q.depth = `SELECT count(*) FROM events`
	q.seqRange = `SELECT (SELECT min(seq) FROM events), (SELECT max(seq) FROM events)`
	q.dropEvents = `DELETE FROM events WHERE seq <= ` + p(1)
	q.dropDeliveries = `DELETE FROM webhook_deliveries WHERE seq <= ` + p(1)
	q.lockOldEvents = `SELECT seq FROM events WHERE seq <= ` + p(1) + ` ORDER BY seq FOR UPDATE`
	return q
}

// param returns the placeholder of the nth argument, counting from 1.
func (q queries) param(n int) string {
	if q.dialect == Postgres {
		return "$" + strconv.Itoa(n)
	}
	return "?" + strconv.Itoa(n)
}

// values appends rows tuples of cols placeholders each, comma-separated,
// for the arguments from the first. On SQLite they are anonymous (?), not
// numbered (?NNN): the driver asks SQLite for each parameter's name when
// it binds, and SQLite finds a number's name by a scan of all the
// statement's names: binding a batch's arguments cost time that grew with
// the square of its size. A prepared batch of 64 plants took 0.25 ms
// with anonymous placeholders where it took 0.38 ms with numbered ones
// (BenchmarkInsertBatch, -cpu 1, six alternating runs of each build).
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
			if q.dialect == SQLite {
				b.WriteByte('?')
			} else {
				b.WriteString(q.param(n))
			}
			n++
		}
		b.WriteByte(')')
	}
}

// insertPlants returns the statement that inserts rows plants and returns
// the ids it inserted: skipping those whose id is taken, or, unless
// skipTaken, failing as a whole on a taken id.
func (q queries) insertPlants(rows int, skipTaken bool) string {
	var b strings.Builder
	b.WriteString(`INSERT INTO plants (id, name, tag) VALUES `)
	q.values(&b, rows, 3)
	if skipTaken {
		b.WriteString(` ON CONFLICT (id) DO NOTHING`)
	}
	b.WriteString(` RETURNING id`)
	return b.String()
}

// insert returns the statement that inserts what k names: k.n plants,
// skipping taken ids, or k.n events.
func (q queries) insert(k insertKey) string {
	if k.events {
		return q.insertEvents(k.n)
	}
	return q.insertPlants(k.n, true)
}

// insertPlantsAndEvents returns, on PostgreSQL, the statement that
// inserts rows plants as insertPlants does, and an event for each plant
// it inserted, created at $(3·rows+1), in the order of their ids.
func (q queries) insertPlantsAndEvents(rows int, skipTaken bool) string {
	var b strings.Builder
	b.WriteString(`WITH p AS (INSERT INTO plants (id, name, tag) VALUES `)
	q.values(&b, rows, 3)
	if skipTaken {
		b.WriteString(` ON CONFLICT (id) DO NOTHING`)
	}
	b.WriteString(` RETURNING id, name, tag), e AS (INSERT INTO events (plant_id, name, tag, created_us) SELECT id, name, tag, `)
	b.WriteString(q.param(3*rows + 1))
	b.WriteString(`::bigint FROM p ORDER BY id) SELECT id FROM p`)
	return b.String()
}

// insertEvents returns the statement that inserts rows events.
func (q queries) insertEvents(rows int) string {
	var b strings.Builder
	b.WriteString(`INSERT INTO events (plant_id, name, tag, created_us) VALUES `)
	q.values(&b, rows, 4)
	return b.String()
}

// placeholders appends n placeholders, comma-separated, numbered from first.
func (q queries) placeholders(b *strings.Builder, first, n int) {
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(q.param(first + i))
	}
}

// fanOut returns the statement that creates a delivery to each of subs
// subscribers ($2…) for each of the oldest $1 events not fanned out yet.
// On PostgreSQL it returns the number of those events.
//
// On PostgreSQL, concurrent transactions draw seqs and commit in either
// order, so a reader that went past a seq could later see a lower one
// appear. So the fan-out keeps no place in seq order: it marks each event
// it fans out (fanned), and takes the events not marked, by the partial
// index of them. An event that commits late is simply not marked yet when
// it appears. Concurrent fan-outs take different events (SKIP LOCKED),
// and nothing makes writers wait for one another or for the fan-out.
//
// SQLite runs one writer at a time, so seqs commit in order there, and
// the events past the greatest seq that has a delivery are exactly those
// not fanned out yet: an event loses its deliveries only in the
// transaction that deletes it. The WHERE true lets SQLite parse ON
// CONFLICT after a SELECT.
func (q queries) fanOut(subs int) string {
	var b strings.Builder
	if q.dialect == Postgres {
		b.WriteString(`WITH e AS (SELECT seq FROM events WHERE NOT fanned ORDER BY seq LIMIT $1 FOR UPDATE SKIP LOCKED),` +
			` m AS (UPDATE events SET fanned = true FROM e WHERE events.seq = e.seq),` +
			` d AS (INSERT INTO webhook_deliveries (subscriber, seq) SELECT s.subscriber, e.seq FROM e CROSS JOIN (`)
		q.subscribers(&b, subs)
		b.WriteString(`) s ON CONFLICT DO NOTHING) SELECT count(*) FROM e`)
		return b.String()
	}
	b.WriteString(`INSERT INTO webhook_deliveries (subscriber, seq) SELECT s.subscriber, e.seq FROM (SELECT seq FROM events WHERE seq > (SELECT coalesce(max(seq), 0) FROM webhook_deliveries) ORDER BY seq LIMIT ` + q.param(1) + `) e CROSS JOIN (`)
	q.subscribers(&b, subs)
	b.WriteString(`) s WHERE true ON CONFLICT DO NOTHING`)
	return b.String()
}

// subscribers appends a query of the subs subscribers $2… as one column,
// subscriber.
func (q queries) subscribers(b *strings.Builder, subs int) {
	for i := range subs {
		if i > 0 {
			b.WriteString(` UNION ALL `)
		}
		b.WriteString(`SELECT CAST(` + q.param(2+i) + ` AS TEXT) AS subscriber`)
	}
}

// claim returns the statement that leases to owner $2 until $1 at most $5
// deliveries to subscriber $3 that are due and unleased at $4. On
// PostgreSQL the candidates are picked in a CTE, which runs once (an IN
// subquery may be rescanned per row, each time picking more), and SKIP
// LOCKED lets concurrent claimers take different rows instead of queueing
// on the same ones; the outer lease test makes a claimer that did wait on
// a row skip it once another has leased it. SQLite runs one writer at a
// time.
func (q queries) claim() string {
	p := q.param
	if q.dialect == Postgres {
		return `WITH c AS (SELECT seq FROM webhook_deliveries WHERE subscriber = $3 AND due_us <= $4 AND lease_us <= $4` +
			` ORDER BY seq LIMIT $5 FOR UPDATE SKIP LOCKED)` +
			` UPDATE webhook_deliveries d SET lease_us = $1, owner = $2 FROM c` +
			` WHERE d.subscriber = $3 AND d.seq = c.seq AND d.lease_us <= $4 RETURNING d.seq, d.attempts`
	}
	return `UPDATE webhook_deliveries SET lease_us = ` + p(1) + `, owner = ` + p(2) +
		` WHERE subscriber = ` + p(3) + ` AND lease_us <= ` + p(4) + ` AND seq IN (SELECT seq FROM webhook_deliveries WHERE subscriber = ` + p(3) +
		` AND due_us <= ` + p(4) + ` AND lease_us <= ` + p(4) + ` ORDER BY seq LIMIT ` + p(5) + `) RETURNING seq, attempts`
}

// events returns the query that reads the n events whose seqs are $1….
func (q queries) events(n int) string {
	var b strings.Builder
	b.WriteString(`SELECT seq, plant_id, name, tag, created_us FROM events WHERE seq IN (`)
	q.placeholders(&b, 1, n)
	b.WriteString(`)`)
	return b.String()
}

// lockEvents returns the statement that locks, in seq order, those of the
// n events $1… that exist (PostgreSQL).
func (q queries) lockEvents(n int) string {
	var b strings.Builder
	b.WriteString(`SELECT seq FROM events WHERE seq IN (`)
	q.placeholders(&b, 1, n)
	b.WriteString(`) ORDER BY seq FOR UPDATE`)
	return b.String()
}

// extend returns the statement that moves to $1 the lease of owner $3 on
// the n deliveries to subscriber $2 whose seqs are $4….
func (q queries) extend(n int) string {
	var b strings.Builder
	b.WriteString(`UPDATE webhook_deliveries SET lease_us = ` + q.param(1) + ` WHERE subscriber = ` + q.param(2) + ` AND owner = ` + q.param(3) + ` AND seq IN (`)
	q.placeholders(&b, 4, n)
	b.WriteString(`) RETURNING seq`)
	return b.String()
}

// retry returns the statement that records n retries of deliveries to
// subscriber $1 held by owner $2: for each, from $3 on, its seq, its
// attempts and its due time.
func (q queries) retry(n int) string {
	var b strings.Builder
	b.WriteString(`UPDATE webhook_deliveries SET lease_us = 0, attempts = CASE seq`)
	for i := range n {
		b.WriteString(` WHEN ` + q.param(3+3*i) + ` THEN CAST(` + q.param(4+3*i) + ` AS INTEGER)`)
	}
	b.WriteString(` ELSE attempts END, due_us = CASE seq`)
	for i := range n {
		b.WriteString(` WHEN ` + q.param(3+3*i) + ` THEN CAST(` + q.param(5+3*i) + ` AS BIGINT)`)
	}
	b.WriteString(` ELSE due_us END WHERE subscriber = ` + q.param(1) + ` AND owner = ` + q.param(2) + ` AND seq IN (`)
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(q.param(3 + 3*i))
	}
	b.WriteString(`)`)
	return b.String()
}

// endDeliveries returns the statement that deletes the n deliveries to
// subscriber $1 whose seqs are $2….
func (q queries) endDeliveries(n int) string {
	var b strings.Builder
	b.WriteString(`DELETE FROM webhook_deliveries WHERE subscriber = ` + q.param(1) + ` AND seq IN (`)
	q.placeholders(&b, 2, n)
	b.WriteString(`)`)
	return b.String()
}

// purgeEvents returns the statement that deletes those of the n events
// $1… that have no delivery left.
func (q queries) purgeEvents(n int) string {
	var b strings.Builder
	b.WriteString(`DELETE FROM events WHERE seq IN (`)
	q.placeholders(&b, 1, n)
	b.WriteString(`) AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.seq = events.seq)`)
	return b.String()
}
