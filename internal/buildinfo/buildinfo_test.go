package buildinfo

import (
	"runtime/debug"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestString checks that -version names the module version and the
// commit of each way plantstore is built: from a clone (the go command
// stamps vcs.revision), with -buildvcs=false and the commit given at link
// time, by go install of a pseudo-version or of a tag, and with nothing at
// all, where it says why no commit is known.
func TestString(t *testing.T) {
	t.Parallel()
	main := debug.Module{Path: Module, Version: "(devel)"}
	for _, c := range []struct {
		reason                  string
		bi                      debug.BuildInfo
		linkVersion, linkCommit string
		want                    []string
	}{
		{"a build in a clone", debug.BuildInfo{Main: main, Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "d1be8db0a1b2c3d4"}, {Key: "vcs.modified", Value: "true"}}},
			"", "", []string{"(devel)", "revision d1be8db0a1b2c3d4 (modified)"}},
		{"-buildvcs=false with -ldflags -X", debug.BuildInfo{Main: main}, "v1.4.0", "0123456789ab",
			[]string{"v1.4.0", "revision 0123456789ab"}},
		{"go install …@commit", debug.BuildInfo{Main: debug.Module{Path: Module, Version: "v0.0.0-20261125054009-d1be8db0a1b2"}},
			"", "", []string{"v0.0.0-20261125054009-d1be8db0a1b2", "revision d1be8db0a1b2"}},
		{"go install …@tag", debug.BuildInfo{Main: debug.Module{Path: Module, Version: "v1.2.0"}},
			"", "", []string{"v1.2.0", "revision of tag v1.2.0"}},
		{"a pre-release pseudo-version", debug.BuildInfo{Main: debug.Module{Path: Module, Version: "v1.2.1-0.20261125054009-abcdef012345+dirty"}},
			"", "", []string{"revision abcdef012345"}},
		{"nothing stamped", debug.BuildInfo{Main: main}, "", "",
			[]string{"(devel)", "revision unknown (built without version control information"}},
	} {
		got := Of(&c.bi, c.linkVersion, c.linkCommit).String()
		for _, w := range c.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: %q, want it to contain %q", c.reason, got, w)
			}
		}
		if !strings.HasPrefix(got, "plantstore "+Module+" ") {
			t.Errorf("%s: %q, want it to name the module", c.reason, got)
		}
	}
}

// TestOfAHost checks that a host's binary, whose main module requires
// plantstore, is said to hold the plantstore it requires, not its own
// version or commit.
func TestOfAHost(t *testing.T) {
	t.Parallel()
	host := debug.Module{Path: "example.com/host", Version: "(devel)"}
	hostVCS := []debug.BuildSetting{{Key: "vcs.revision", Value: "feedfacefeedface"}, {Key: "vcs.modified", Value: "true"}}
	tests := []struct {
		name string
		deps []*debug.Module
		want Identity
	}{
		{"a tag", []*debug.Module{{Path: "example.com/other", Version: "v9.9.9"}, {Path: Module, Version: "v1.2.0"}},
			Identity{Path: "example.com/host", Version: "v1.2.0", GoVersion: "go1.26.8"}},
		{"a pseudo-version", []*debug.Module{{Path: Module, Version: "v0.0.0-20261125054009-d1be8db0a1b2"}},
			Identity{Path: "example.com/host", Version: "v0.0.0-20261125054009-d1be8db0a1b2", Revision: "d1be8db0a1b2", GoVersion: "go1.26.8"}},
		{"replaced by a directory", []*debug.Module{{Path: Module, Version: "v1.2.0", Replace: &debug.Module{Path: "../plantstore"}}},
			Identity{Path: "example.com/host", Version: "(devel)", GoVersion: "go1.26.8"}},
		{"not required", nil,
			Identity{Path: "example.com/host", Version: "unknown", GoVersion: "go1.26.8"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Of(&debug.BuildInfo{GoVersion: "go1.26.8", Main: host, Deps: tt.deps, Settings: hostVCS}, "", "")
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Of (-want +got):\n%s", diff)
			}
		})
	}
}
