// Package buildinfo tells which build of plantstore a binary holds, for
// cmd/plantstore's -version and promstats' plantstore_build_info, so that
// the two never disagree: the binary's own when plantstore is its main
// module, or the module a host's binary requires.
package buildinfo

import (
	"fmt"
	"runtime/debug"
	"strings"
)

// Module is plantstore's module path.
const Module = "github.com/plantstore/plantstore"

// An Identity is a build of plantstore.
type Identity struct {
	// Path is the main module's path: plantstore's, or the host's that
	// requires it.
	Path string
	// Version is plantstore's module version: "(devel)" for a build from
	// a work tree, "unknown" when nothing says.
	Version string
	// Revision is the commit plantstore was built from, or "" when
	// nothing names it: a tagged version names none.
	Revision string
	// Modified reports a build from a work tree with changes not
	// committed.
	Modified bool
	// GoVersion is the Go toolchain that built the binary.
	GoVersion string
}

// Read returns the Identity of the running binary: see [Of].
func Read(versionAtLink, commitAtLink string) Identity {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		bi = &debug.BuildInfo{}
	}
	return Of(bi, versionAtLink, commitAtLink)
}

// Of returns the Identity of plantstore in bi. When plantstore is the
// main module, its version is bi's, and its commit the linker's
// commitAtLink, or the one version control stamped, or, for go install
// github.com/plantstore/plantstore/cmd/plantstore@version, the commit a
// pseudo-version ends with. When a host's module requires plantstore, the
// version is that requirement's (its replacement's, when replaced), and
// the commit the one its pseudo-version ends with: the vcs settings are
// the host's own. versionAtLink and commitAtLink, when not "", are what
// the linker was given (-ldflags -X), for a build the go command stamps
// nothing in (-buildvcs=false, a source archive without .git); they win.
func Of(bi *debug.BuildInfo, versionAtLink, commitAtLink string) Identity {
	id := Identity{Path: bi.Main.Path, Version: bi.Main.Version, Revision: commitAtLink, GoVersion: bi.GoVersion}
	if id.Path == "" {
		id.Path = Module
	}
	main := id.Path == Module
	if !main {
		id.Version = ""
		for _, m := range bi.Deps {
			if m.Path != Module {
				continue
			}
			id.Version = m.Version
			if m.Replace != nil {
				id.Version = m.Replace.Version
				if id.Version == "" {
					id.Version = "(devel)" // replaced by a directory
				}
			}
		}
	}
	if versionAtLink != "" {
		id.Version = versionAtLink
	}
	if id.Version == "" {
		id.Version = "unknown"
	}
	for _, s := range bi.Settings {
		switch {
		case !main: // the host's commit, not plantstore's
		case s.Key == "vcs.revision" && id.Revision == "":
			id.Revision = s.Value
		case s.Key == "vcs.modified" && s.Value == "true":
			id.Modified = true
		}
	}
	if id.Revision == "" {
		id.Revision = pseudoVersionCommit(id.Version)
	}
	return id
}

// String says which plantstore id is, as -version prints it: the module,
// the version, the revision (or why none is known) and the toolchain.
func (id Identity) String() string {
	rev := id.Revision
	switch {
	case rev == "" && id.Version != "(devel)" && id.Version != "unknown":
		rev = "of tag " + id.Version
	case rev == "":
		rev = "unknown (built without version control information; see -ldflags in docs/operations.md)"
	}
	if id.Modified {
		rev += " (modified)"
	}
	return fmt.Sprintf("plantstore %s %s, revision %s, %s", id.Path, id.Version, rev, id.GoVersion)
}

// pseudoVersionCommit returns the 12-digit commit prefix a Go
// pseudo-version (v0.0.0-20261125054009-d1be8db0a1b2) ends with, or "".
func pseudoVersionCommit(v string) string {
	v, _, _ = strings.Cut(v, "+") // +incompatible, +dirty
	i := strings.LastIndexByte(v, '-')
	if i < 0 || len(v)-i-1 != 12 || strings.Count(v, "-") < 2 {
		return ""
	}
	rev := v[i+1:]
	for _, c := range rev {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return ""
		}
	}
	return rev
}
