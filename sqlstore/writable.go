package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
)

// checkWritable returns an error wrapping [ErrReadOnly] when conn cannot
// write to the database. SQLite opens a file it may not write read-only
// without an error, and answers BEGIN IMMEDIATE on it with a read
// transaction, so only a statement that writes tells: the probe creates a
// table and rolls the transaction back, which leaves nothing in the file.
// On PostgreSQL a standby or default_transaction_read_only shows in
// transaction_read_only.
func checkWritable(ctx context.Context, conn *sql.Conn, d Dialect) error {
	if d == Postgres {
		var ro string
		if err := conn.QueryRowContext(ctx, "SHOW transaction_read_only").Scan(&ro); err != nil {
			return failure(ctx, "check writable", err)
		}
		if strings.EqualFold(ro, "on") {
			return fmt.Errorf("sqlstore: transaction_read_only is on: %w", ErrReadOnly)
		}
		return nil
	}
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		return failure(ctx, "check writable: begin", err)
	}
	_, err := conn.ExecContext(ctx, "CREATE TABLE main.plantstore_write_probe (x INTEGER)")
	if _, rbErr := conn.ExecContext(context.Background(), "ROLLBACK"); rbErr != nil {
		abandon(conn)
	}
	if code, ok := sqliteCode(err); ok && code == sqliteReadOnly {
		return fmt.Errorf("sqlstore: check writable: %w: %w", err, ErrReadOnly)
	}
	if err != nil {
		return failure(ctx, "check writable", err)
	}
	return nil
}

// sqliteReadOnly is SQLite's SQLITE_READONLY result code.
const sqliteReadOnly = 8
