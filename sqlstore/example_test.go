package sqlstore_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"

	_ "modernc.org/sqlite"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/sqlstore"
)

func ExampleOpen() {
	dir, err := os.MkdirTemp("", "plantstore")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	ctx := context.Background()
	path := filepath.Join(dir, "plants.db")
	if err := sqlstore.PrepareSQLiteFile(ctx, "sqlite", path); err != nil {
		log.Fatal(err)
	}
	db, err := sql.Open("sqlite", sqlstore.SQLiteDSN(path))
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	s, err := sqlstore.Open(ctx, db, sqlstore.SQLite)
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()

	ps := plantstore.New(s)
	if _, err := ps.Create(ctx, plantstore.NewPlant{ID: 1, Name: "Monstera"}); err != nil {
		log.Fatal(err)
	}
	p, err := ps.Plant(ctx, 1)
	fmt.Println(p.Name, p.HasTag, err)
	// Output: Monstera false <nil>
}

func ExamplePrepareSQLiteFile() {
	dir, err := os.MkdirTemp("", "plantstore")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	path := filepath.Join(dir, "notes.db")
	if err := os.WriteFile(path, []byte("not a database\n"), 0o644); err != nil {
		log.Fatal(err)
	}
	err = sqlstore.PrepareSQLiteFile(context.Background(), "sqlite", path)
	fmt.Println(errors.Is(err, sqlstore.ErrNotPlantstore))
	b, _ := os.ReadFile(path)
	fmt.Printf("%q\n", b)
	// Output:
	// true
	// "not a database\n"
}

func ExampleSQLiteDSN() {
	fmt.Println(sqlstore.SQLiteDSN("/var/lib/plantstore/plants.db"))
	// Output: file:/var/lib/plantstore/plants.db?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_txlock=immediate
}
