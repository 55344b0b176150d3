package httpapi_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/plantstore/plantstore/httpapi"
)

func TestCheckToken(t *testing.T) {
	tests := []struct {
		name    string
		token   string
		wantErr error
		reason  string
	}{
		{name: "letters and digits", token: "abc123"},
		{name: "every allowed symbol", token: "a-b.c_d~e+f/g"},
		{name: "trailing padding", token: "YWJj=="},
		{name: "generated", token: "kR3_x-9Qz2V0m7WqLp4sYb1Nc8TgHf6Ue5Aj0Di2Ko4"},
		{name: "empty", token: "", wantErr: httpapi.ErrTokenSyntax},
		{name: "padding only", token: "==", wantErr: httpapi.ErrTokenSyntax, reason: "b64token needs one character before the padding"},
		{name: "inner equals sign", token: "abc=def", wantErr: httpapi.ErrTokenSyntax, reason: `"=" may only end the token`},
		{name: "space", token: "tok en1", wantErr: httpapi.ErrTokenSyntax},
		{name: "tab", token: "tok\ten1", wantErr: httpapi.ErrTokenSyntax},
		{name: "non-ASCII", token: "pässword", wantErr: httpapi.ErrTokenSyntax},
		{name: "comma", token: "tok,en1", wantErr: httpapi.ErrTokenSyntax},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := httpapi.CheckToken(tt.token)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("CheckToken(%q) = %v, want %v (%s)", tt.token, err, tt.wantErr, tt.reason)
			}
			if err != nil && tt.token != "" && strings.Contains(err.Error(), tt.token) {
				t.Errorf("CheckToken(%q) = %v: the error shows the token", tt.token, err)
			}
		})
	}
}

// TestTokensPanicsOnATokenNoRequestCanSend checks that Tokens refuses, as
// regexp.MustCompile does, a token that could never match, without showing
// it, and still ignores empty tokens.
func TestTokensPanicsOnATokenNoRequestCanSend(t *testing.T) {
	const secret = "never=shown"
	func() {
		defer func() {
			r := recover()
			if r == nil {
				t.Fatal("Tokens(good, inner '=') did not panic")
			}
			msg := fmt.Sprint(r)
			if strings.Contains(msg, secret) {
				t.Errorf("panic %q shows the token", msg)
			}
			if !strings.Contains(msg, "token 2 of 2") {
				t.Errorf("panic %q does not say which token", msg)
			}
		}()
		httpapi.Tokens("good", secret)
	}()
	if a := httpapi.Tokens("", "good", ""); a == nil {
		t.Error("Tokens with empty tokens = nil")
	}
}
