package sqlstore_test

import (
	"context"
	"database/sql"
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

	db, err := sql.Open("sqlite", sqlstore.SQLiteDSN(filepath.Join(dir, "plants.db")))
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
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

func ExampleSQLiteDSN() {
	fmt.Println(sqlstore.SQLiteDSN("/var/lib/plantstore/plants.db"))
	// Output: file:/var/lib/plantstore/plants.db?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_txlock=immediate
}
