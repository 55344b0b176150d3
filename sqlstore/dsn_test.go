package sqlstore

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestRedactDSN checks that RedactDSN hides a database string's secrets
// and keeps the rest; and that one in a form that does not parse never
// comes back with its password: its shape is named instead, or, in libpq's
// keyword/value form, the password's value hidden.
func TestRedactDSN(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		db, want string
	}{
		{"memory", "memory"},
		{"plants.db", "plants.db"},
		{"sqlite:/var/lib/plants.db", "sqlite:/var/lib/plants.db"},
		{"postgres://u@h:5432/db?sslmode=disable", "postgres://u@h:5432/db?sslmode=disable"},
		{"postgres://u:s3cret@h/db", "postgres://u:xxxxx@h/db"},
		{"postgresql://u@h/db?password=s3cret&sslmode=disable", "postgresql://u@h/db?password=xxxxx&sslmode=disable"},
		{"postgres://u:s3cret@h/db%zz", "(a database URL that does not parse)"},
		{"postgres://u:s3cret@h/db?sslpassword=key", "postgres://u:xxxxx@h/db?sslpassword=xxxxx"},
		{
			"postgres://u:s3cret@127.0.0.1:5432,127.0.0.1:5433/db?target_session_attrs=read-write",
			"postgres://u:xxxxx@127.0.0.1:5432,127.0.0.1:5433/db?target_session_attrs=read-write",
		},
		{"postgresql://u:p%40ss@a,b:5433,[::1]:5434/db", "postgresql://u:xxxxx@a,b:5433,[::1]:5434/db"},
		{"postgres://a,b?password=s3cret", "postgres://a,b?password=xxxxx"},
		{"postgres://a,,b/db", "(a database URL that does not parse)"},
		{"postgres://u:s3cret@a:1,b:x/db", "(a database URL that does not parse)"},
		{"postgres://u:s3cret@a,b/db%zz", "(a database URL that does not parse)"},
		// Every parameter whose name holds pass, secret, token or key, in
		// any case, is hidden; the others keep their order and spelling.
		{"postgres://h/db?sslmode=verify-full&sslpassword=k1&passfile=/home/u/.pgpass&connect_timeout=5",
			"postgres://h/db?sslmode=verify-full&sslpassword=xxxxx&passfile=xxxxx&connect_timeout=5"},
		{"postgres://h/db?api_key=k2&auth_token=t3&client_secret=c4&application_name=plantstore",
			"postgres://h/db?api_key=xxxxx&auth_token=xxxxx&client_secret=xxxxx&application_name=plantstore"},
		{"postgres://h/db?sslkey=/etc/ssl/client.key&sslcert=/etc/ssl/client.crt",
			"postgres://h/db?sslkey=xxxxx&sslcert=/etc/ssl/client.crt"},
		{"postgres://h/db?PassWord=s3cret&Password=again", "postgres://h/db?PassWord=xxxxx&Password=xxxxx"},
		{"postgres://h/db?pass%77ord=s3cret", "postgres://h/db?pass%77ord=xxxxx"},
		{"postgres://h/db?password=a&password=b", "postgres://h/db?password=xxxxx&password=xxxxx"},
		{"postgres://h/db?password=s%26cret&x=1", "postgres://h/db?password=xxxxx&x=1"},
		{"postgres://h/db?password", "postgres://h/db?password"},
		{"postgres://h/db?keepalives=1&target_session_attrs=any", "postgres://h/db?keepalives=1&target_session_attrs=any"},
		{"host=127.0.0.1 password=S3CRETPW", "host=127.0.0.1 password=xxxxx"},
		{"host=127.0.0.1 password = 'S3 CRETPW' dbname=plants", "host=127.0.0.1 password = xxxxx dbname=plants"},
		{`host=h password='S3CRETPW\' x' sslmode=disable`, "host=h password=xxxxx sslmode=disable"},
		{"host=127.0.0.1 password='S3CRETPW", "(a keyword=value connection string that does not parse)"},
		{"host=h password", "(a keyword=value connection string that does not parse)"},
		{"postgres:/u:S3CRETPW@h/db", "(a postgres: value without // after the scheme)"},
		{"postgres//u:S3CRETPW@h/db", "(a value with user:password@ but no scheme: not a database URL)"},
		{"postgres:u:S3CRETPW@h/db", "(a postgres: value without // after the scheme)"},
		{"postgres:://u:S3CRETPW@h/db", "(a postgres: value without // after the scheme)"},
		{"postgresql:S3CRETPW", "(a postgresql: value without // after the scheme)"},
		{"postgres:/u:S3CRETPW@h:x/db", "(a postgres: value without // after the scheme)"},
		{"sqlite:plants.db", "sqlite:plants.db"},
		{"file:plants.db?_pragma_key=S3CRETPW&mode=rw", "file:plants.db?_pragma_key=xxxxx&mode=rw"},
		{"/var/lib/plantstore/plants.db", "/var/lib/plantstore/plants.db"},
		{"C:/plants.db", "C:/plants.db"},
	} {
		got := RedactDSN(tt.db)
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("RedactDSN(%q) mismatch (-want +got):\n%s", tt.db, diff)
		}
		if strings.Contains(got, "CRETPW") {
			t.Errorf("RedactDSN(%q) = %q holds the password", tt.db, got)
		}
	}
}

// TestDSNSecrets checks that an error quoting the URL is scrubbed of every
// secret RedactDSN hides, as written and unescaped.
func TestDSNSecrets(t *testing.T) {
	t.Parallel()
	for dsn, want := range map[string][]string{
		"postgres://u:p%40ss@h/db?sslpassword=k%26y&sslmode=disable&api_key=k2": {"p@ss", "p%40ss", "k%26y", "k&y", "k2", "k2"},
		"host=h password='S3 CRETPW' user=u":                                    {"'S3 CRETPW'", "S3 CRETPW"},
	} {
		if diff := cmp.Diff(want, dsnSecrets(dsn)); diff != "" {
			t.Errorf("dsnSecrets(%q) (-want +got):\n%s", dsn, diff)
		}
	}
}

// TestQueryParams checks how OpenPostgres adds its settings to a URL and
// takes them out again: the URL's own parameters keep their order and
// spelling.
func TestQueryParams(t *testing.T) {
	t.Parallel()
	add := []string{"a=1", "b=2"}
	for _, tt := range []struct{ dsn, with, without string }{
		{"postgres://h/db", "postgres://h/db?a=1&b=2", "postgres://h/db"},
		{"postgres://h/db?", "postgres://h/db?a=1&b=2", "postgres://h/db"},
		{"postgres://h/db?x=%41&lock_timeout=5", "postgres://h/db?x=%41&lock_timeout=5&a=1&b=2", "postgres://h/db?x=%41"},
		{"postgres://h,i/db?lock%5Ftimeout=5&y=1&idle_in_transaction_session_timeout=9", "postgres://h,i/db?lock%5Ftimeout=5&y=1&idle_in_transaction_session_timeout=9&a=1&b=2", "postgres://h,i/db?y=1"},
	} {
		if got := withQueryParams(tt.dsn, add); got != tt.with {
			t.Errorf("withQueryParams(%q) = %q, want %q", tt.dsn, got, tt.with)
		}
		if got := withoutQueryParams(tt.dsn, lockTimeoutParam, idleInTxParam); got != tt.without {
			t.Errorf("withoutQueryParams(%q) = %q, want %q", tt.dsn, got, tt.without)
		}
	}
}
