#!/usr/bin/env bash
# update-apidocs.sh fetches the built files of Swagger UI that apidocs
# embeds, from the npm package swagger-ui-dist at a pinned version, into
# apidocs/swagger-ui/, and records the version, the package's checksums and
# each file's sha256 in apidocs/swagger-ui/VERSION. apidocs' tests check the
# files against that record.
#
#   scripts/update-apidocs.sh            # the pinned version, again
#   scripts/update-apidocs.sh 5.36.0     # another version: pin it below too
#
# It needs npm (only to download the package) and sha256sum. Read the
# release notes before pinning a new version, then run
# go test ./apidocs (its browser test renders the page in Chromium).
set -euo pipefail
cd "$(dirname "$0")/.."

package=swagger-ui-dist
version="${1:-5.35.0}"
dest=apidocs/swagger-ui
# The standalone bundle and its stylesheet, and the licences: Swagger UI's
# (Apache-2.0, with its NOTICE) and those of what the bundle includes.
files="swagger-ui-bundle.js swagger-ui.css LICENSE NOTICE swagger-ui-bundle.js.LICENSE.txt"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --json "$package@$version" >pack.json)
tarball="$tmp/$package-$version.tgz"
integrity=$(node -e 'console.log(require(process.argv[1])[0].integrity)' "$tmp/pack.json")
tar -xzf "$tarball" -C "$tmp"

rm -rf "$dest"
mkdir -p "$dest"
for f in $files; do
	cp "$tmp/package/$f" "$dest/$f"
done
{
	echo "# Written by scripts/update-apidocs.sh: Swagger UI's files as npm pack fetched them."
	echo "package $package"
	echo "version $version"
	echo "integrity $integrity"
	echo "tarball-sha256 $(sha256sum "$tarball" | cut -d' ' -f1)"
	(cd "$dest" && sha256sum $files)
} >"$dest/VERSION"
cat "$dest/VERSION"
