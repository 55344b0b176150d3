package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/plantstore/plantstore/sqlstore"
)

// The commands the binary runs instead of serving, named by its first
// argument.
var commands = map[string]func(ctx context.Context, args []string, stdout, stderr io.Writer) error{
	"backup":  runBackup,
	"restore": runRestore,
}

// errNotSQLite is why backup and restore refuse a -db that is not a
// SQLite file.
var errNotSQLite = errors.New("backup and restore are for the SQLite file; for PostgreSQL use pg_dump or pg_basebackup (see docs/operations.md, Backups)")

// runBackup is "plantstore backup -db PATH -out FILE": a consistent copy
// of the SQLite database at PATH, taken while servers read and write it,
// written to the new file FILE (see sqlstore.BackupSQLiteFile).
func runBackup(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	flags := newCommandFlags("backup", stderr, "Usage: plantstore backup -db PATH -out FILE\n\n"+
		"Writes a consistent copy of the SQLite database at PATH to the new file FILE, while\n"+
		"servers go on using PATH; FILE is flushed and passes PRAGMA integrity_check before\n"+
		"it appears. Bring it back with plantstore restore.\n")
	db := flags.String("db", "plantstore.db", "the SQLite database `path` to copy")
	out := flags.String("out", "", "the new `file` to write the copy to")
	path, err := parseCommand(flags, args, "out", db)
	if err != nil || path == "" {
		return err
	}
	if err := sqlstore.BackupSQLiteFile(ctx, "sqlite", path, *out); err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	fmt.Fprintf(stdout, "backed up %s to %s\n", path, *out)
	return nil
}

// runRestore is "plantstore restore -from FILE -db PATH": FILE, a backup,
// checked, becomes the SQLite database at PATH, which must not exist
// (see sqlstore.RestoreSQLiteFile).
func runRestore(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	flags := newCommandFlags("restore", stderr, "Usage: plantstore restore -from FILE -db PATH\n\n"+
		"Checks that FILE, a backup, is a plantstore database that passes PRAGMA\n"+
		"integrity_check, and copies it to PATH, which must not exist: stop the server and\n"+
		"move the old database (and its -wal and -shm files) away first.\n")
	from := flags.String("from", "", "the backup `file` to restore")
	db := flags.String("db", "plantstore.db", "the SQLite database `path` to create")
	path, err := parseCommand(flags, args, "from", db)
	if err != nil || path == "" {
		return err
	}
	if err := sqlstore.RestoreSQLiteFile(ctx, "sqlite", *from, path); err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	fmt.Fprintf(stdout, "restored %s to %s\n", *from, path)
	return nil
}

// newCommandFlags returns the flag set of a command, which prints its
// usage and errors to stderr.
func newCommandFlags(name string, stderr io.Writer, usage string) *flag.FlagSet {
	flags := flag.NewFlagSet("plantstore "+name, flag.ContinueOnError)
	flags.SetOutput(stderr)
	flags.Usage = func() {
		fmt.Fprint(flags.Output(), usage+"\nFlags:\n")
		flags.PrintDefaults()
	}
	return flags
}

// parseCommand parses a command's args, which must set the flag named
// required and have no arguments left, and returns the SQLite file its
// -db names, or "" and nil after -h.
func parseCommand(flags *flag.FlagSet, args []string, required string, db *string) (string, error) {
	if err := flags.Parse(args); errors.Is(err, flag.ErrHelp) {
		return "", nil
	} else if err != nil {
		return "", fmt.Errorf("%w; %w", err, errBadArgs)
	}
	if flags.NArg() > 0 {
		return "", fmt.Errorf("%s: unexpected arguments: %q; %w", flags.Name(), flags.Args(), errBadArgs)
	}
	if flags.Lookup(required).Value.String() == "" {
		return "", fmt.Errorf("%s: -%s is required; %w", flags.Name(), required, errBadArgs)
	}
	kind, path, err := parseDB(*db)
	if err == nil && kind != "sqlite" {
		err = errNotSQLite
	}
	return path, err
}

// isCommand reports whether args name a command rather than flags.
func isCommand(args []string) bool {
	return len(args) > 0 && !strings.HasPrefix(args[0], "-") && commands[args[0]] != nil
}
