package httpapi_test

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/plantstore/plantstore/httpapi"
	"github.com/plantstore/plantstore/internal/secretfile"
	"github.com/plantstore/plantstore/internal/testkit"
)

var quiet = httpapi.WithTokenFileLogger(slog.New(slog.DiscardHandler))

// openTokenFile writes content to a new token file and opens it, quiet
// unless opts give another logger.
func openTokenFile(t *testing.T, content string, opts ...httpapi.TokenFileOption) (*httpapi.TokenFile, string) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "tokens")
	testkit.WriteFile(t, file, content)
	tf, err := httpapi.OpenTokenFile(file, append([]httpapi.TokenFileOption{quiet}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return tf, file
}

// accepted returns which of tokens a accepts, by Authenticate.
func accepted(a httpapi.Authenticator, tokens ...string) map[string]bool {
	got := map[string]bool{}
	for _, tok := range tokens {
		got[tok] = a.Authenticate(httptest.NewRequest("GET", "/plants", nil), tok) == nil
	}
	return got
}

// TestTokenListsRefuseTokensNoClientCanSend checks that a list's tokens
// (SplitTokens) come back trimmed, without the empty items, and that a
// token no bearer header can carry, in a list or in a token file, is an
// error naming the rule and its item, or the file and line, and never the
// token itself: the message is what the operator reads.
func TestTokenListsRefuseTokensNoClientCanSend(t *testing.T) {
	t.Parallel()
	got, err := httpapi.SplitTokens(" good-1, ,good-2,")
	if err != nil || !slices.Equal(got, []string{"good-1", "good-2"}) {
		t.Errorf("SplitTokens = %q, %v, want [good-1 good-2]", got, err)
	}
	tests := []struct {
		name    string
		file    bool   // a token file's content; else a list for SplitTokens
		tokens  string // the list, or the file
		secret  string // the bad token, which the error must not show
		wantPos int    // the bad token's item in the list, or its line
	}{
		{name: "list, inner equals sign", tokens: "good-1, abc=def", secret: "abc=def", wantPos: 2},
		{name: "list, non-ASCII", tokens: "good-1,,pässwört", secret: "pässwört", wantPos: 3},
		{name: "file, inner equals sign", file: true, tokens: "# ops\ngood-1\nabc=def\n", secret: "abc=def", wantPos: 3},
		{name: "file, space", file: true, tokens: "good-1\n\n  tok en1  \n", secret: "tok en1", wantPos: 3},
		{name: "file, non-ASCII", file: true, tokens: "pässwört\n", secret: "pässwört", wantPos: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var err error
			if tt.file {
				file := filepath.Join(t.TempDir(), "tokens")
				testkit.WriteFile(t, file, tt.tokens)
				var tf *httpapi.TokenFile
				tf, err = httpapi.OpenTokenFile(file, quiet)
				if fe, ok := errors.AsType[*httpapi.TokenFileError](err); !ok || tf != nil || fe.File != file || fe.Line != tt.wantPos {
					t.Errorf("OpenTokenFile = %v, %v, want no TokenFile and a *TokenFileError at line %d of %q", tf, err, tt.wantPos, file)
				}
			} else {
				_, err = httpapi.SplitTokens(tt.tokens)
				if le, ok := errors.AsType[*httpapi.TokenListError](err); !ok || le.Item != tt.wantPos {
					t.Errorf("SplitTokens = %v, want a *TokenListError at item %d", err, tt.wantPos)
				}
			}
			if !errors.Is(err, httpapi.ErrTokenSyntax) {
				t.Errorf("error %v, want ErrTokenSyntax", err)
			}
			if err != nil && strings.Contains(err.Error(), tt.secret) {
				t.Errorf("the error %q shows the token", err)
			}
		})
	}
}

func TestTokenFileBoundsTheFile(t *testing.T) {
	t.Parallel()
	big := filepath.Join(t.TempDir(), "big")
	testkit.WriteFile(t, big, strings.Repeat("tok\n", secretfile.MaxSize/4)+"x")
	for _, file := range []string{"/dev/zero", big} {
		if _, err := os.Stat(file); err != nil {
			t.Logf("skipping %s: %v", file, err)
			continue
		}
		_, err := httpapi.OpenTokenFile(file, quiet)
		if se, ok := errors.AsType[*secretfile.Error](err); !ok || se.Path != file || !errors.Is(err, secretfile.ErrTooLarge) {
			t.Errorf("OpenTokenFile(%s) = %v, want secretfile.ErrTooLarge in a *secretfile.Error for the file", file, err)
		}
	}
}

// TestTokenFileFromAPipe checks that a token file need not be regular, so
// that /dev/stdin and a shell's process substitution work.
func TestTokenFileFromAPipe(t *testing.T) {
	t.Parallel()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	path := fmt.Sprintf("/dev/fd/%d", r.Fd())
	if _, err := os.Stat(path); err != nil {
		t.Skipf("no %s on this system: %v", path, err)
	}
	go func() {
		io.WriteString(w, "piped-1\n# comment\npiped-2\n")
		w.Close()
	}()
	tf, err := httpapi.OpenTokenFile(path, quiet)
	if err != nil {
		t.Fatalf("OpenTokenFile(%s) = %v", path, err)
	}
	want := map[string]bool{"piped-1": true, "piped-2": true, "comment": false}
	if diff := cmp.Diff(want, accepted(tf, "piped-1", "piped-2", "comment")); diff != "" {
		t.Errorf("tokens from a pipe accepted (-want +got):\n%s", diff)
	}
	if tf.Len() != 2 {
		t.Errorf("Len() = %d, want 2", tf.Len())
	}
}

// TestTokenFileReload changes the file and reloads: the new tokens, and
// the extra ones, are accepted and the old refused; a reload that finds
// the same tokens, in any order, changes nothing; and a file that cannot
// be used (gone, a token no client can send, no token) is an error that
// keeps the old tokens.
func TestTokenFileReload(t *testing.T) {
	t.Parallel()
	tf, file := openTokenFile(t, "# team a\nalpha\nbravo\n", httpapi.WithExtraTokens("extra-1", ""))
	all := []string{"alpha", "bravo", "charlie", "extra-1"}
	type state struct {
		Accepted map[string]bool
		Len      int
	}
	check := func(step string, want state) {
		t.Helper()
		if diff := cmp.Diff(want, state{accepted(tf, all...), tf.Len()}); diff != "" {
			t.Errorf("%s (-want +got):\n%s", step, diff)
		}
	}
	check("opened", state{map[string]bool{"alpha": true, "bravo": true, "charlie": false, "extra-1": true}, 3})

	testkit.WriteFile(t, file, "bravo\ncharlie\n")
	if changed, err := tf.Reload(); !changed || err != nil {
		t.Errorf("Reload of new tokens = %v, %v, want true, nil", changed, err)
	}
	after := state{map[string]bool{"alpha": false, "bravo": true, "charlie": true, "extra-1": true}, 3}
	check("reloaded", after)

	testkit.WriteFile(t, file, "  charlie  \n\n# reordered\nbravo\n")
	if changed, err := tf.Reload(); changed || err != nil {
		t.Errorf("Reload of the same tokens = %v, %v, want false, nil", changed, err)
	}
	for _, spoil := range []struct {
		name    string
		spoil   func()
		wantErr func(error) bool
	}{
		{"gone", func() { os.Remove(file) }, func(err error) bool { return errors.Is(err, os.ErrNotExist) }},
		{"unusable token", func() { testkit.WriteFile(t, file, "bravo\nnot a token\n") }, func(err error) bool {
			fe, ok := errors.AsType[*httpapi.TokenFileError](err)
			return ok && fe.Line == 2 && errors.Is(err, httpapi.ErrTokenSyntax)
		}},
		{"no token", func() { testkit.WriteFile(t, file, "# emptied\n") }, func(err error) bool {
			return err != nil && strings.Contains(err.Error(), file+" holds no token")
		}},
	} {
		spoil.spoil()
		changed, err := tf.Reload()
		if changed || !spoil.wantErr(err) {
			t.Errorf("Reload of a file %s = %v, %v, want false and its error", spoil.name, changed, err)
		}
		check("after a reload of a file "+spoil.name, after)
	}
}

// TestTokenFileReloadUnderRequests reloads between two sets of tokens
// while requests are checked: a token in both sets is accepted every time,
// as each request sees one whole set; then the handler answers by the
// tokens of the latest load.
func TestTokenFileReloadUnderRequests(t *testing.T) {
	t.Parallel()
	tf, file := openTokenFile(t, "kept\nfirst\n")
	h := newHandler(nil, httpapi.WithAuthenticator(tf))
	var wg sync.WaitGroup
	done := make(chan struct{})
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
				}
				if rec := serve(h, newRequest("GET", "/plants", hdr{"Authorization": "Bearer kept"}, nil)); rec.Code != 200 {
					t.Errorf("a token in every set was answered %d %s mid-reload", rec.Code, rec.Body)
					return
				}
			}
		})
	}
	for i := range 200 {
		next := filepath.Join(filepath.Dir(file), "next")
		testkit.WriteFile(t, next, fmt.Sprintf("kept\nround-%d\n", i))
		if err := os.Rename(next, file); err != nil {
			t.Fatal(err)
		}
		if changed, err := tf.Reload(); !changed || err != nil {
			t.Fatalf("Reload %d = %v, %v, want true, nil", i, changed, err)
		}
	}
	close(done)
	wg.Wait()
	recorded(serve(h, newRequest("GET", "/plants", hdr{"Authorization": "Bearer first"}, nil))).wantError(t, 400, 401)
	recorded(serve(h, newRequest("GET", "/plants", hdr{"Authorization": "Bearer round-199"}, nil))).wantOK(t, "the last token loaded")
}

// TestTokenFileWarnsOfASharedFile checks that a token file its group or
// others may read is warned of, with the chmod that fixes it, at open and
// at each reload, and that one of mode 600 is not.
func TestTokenFileWarnsOfASharedFile(t *testing.T) {
	t.Parallel()
	var out testkit.Buffer
	tf, file := openTokenFile(t, "tok-1\n", httpapi.WithTokenFileLogger(testkit.NewLogger(&out, slog.LevelDebug)))
	if err := os.Chmod(file, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := tf.Reload(); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	want := fmt.Sprintf("level=WARN msg=%q file=%s mode=-rw-r--r-- fix=%q\n",
		"token file is readable by group or others; chmod 600 it", file, "chmod 600 "+file)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
}
