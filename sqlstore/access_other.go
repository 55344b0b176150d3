//go:build !unix

package sqlstore

// dirWritable returns nil: on this system the check is left to SQLite and
// to the write probe in [Open].
func dirWritable(string) error { return nil }
