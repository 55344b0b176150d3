// Package apidocs serves a human reference of the Plant Store API: a page
// that renders the API's OpenAPI document (httpapi's GET /openapi.json)
// with Swagger UI, from files embedded in the binary. It needs no CDN and
// no network beyond the server itself, and it runs under a strict
// Content-Security-Policy, [ContentSecurityPolicy]: scripts, styles and
// fetches from the page's own origin only, no inline script or style, no
// eval, no framing.
//
// It is a package of its own so that only a host that opts in carries
// Swagger UI's 1.9 MB: [github.com/plantstore/plantstore/httpapi] embeds
// none of it. A host passes [Handler] to httpapi.WithDocs, which routes
// GET and HEAD /docs and /docs/NAME to it, without a token, as it routes
// /openapi.json:
//
//	httpapi.New(plants, httpapi.WithTokens(token), httpapi.WithDocs(apidocs.Handler()))
//
// # Why Swagger UI
//
// Of the four usual renderers, Swagger UI (the npm package
// swagger-ui-dist) is the one that works under the policy above, and the
// smallest of them:
//
//   - Redoc 3.0.1 (redoc.standalone.js, 2.3 MB) does not render without
//     style-src 'unsafe-inline' or a per-response nonce: its
//     styled-components writes rules into <style> elements that the policy
//     blocks, and then stops with an error.
//   - Scalar 1.72.1 (standalone.js, 4.4 MB) and Stoplight Elements 9.0.25
//     (web-components.min.js and styles.min.css, 2.4 MB) render, but apply
//     inline styles the policy blocks, with a violation in the console for
//     each; they would need 'unsafe-inline'. Elements' latest release,
//     9.0.25 of September 2026, is also the oldest of the four.
//   - Swagger UI 5.35.0 (swagger-ui-bundle.js and swagger-ui.css, 1.9 MB)
//     renders the OpenAPI 3.1 document with no violation: no
//     'unsafe-eval', no 'unsafe-inline'. It is maintained by SmartBear,
//     with a release every week or two (5.33.3 to 5.35.0 from October 15
//     to November 13, 2026), and asks nothing of the network once its
//     validator badge is off (validatorUrl: null, in init.js).
//
// Each was loaded in headless Chromium under the policy, with the
// document served beside it; apidocs' browser test keeps checking Swagger
// UI so, and that the page fetches nothing from another origin.
//
// The files come from swagger-ui-dist at the version that
// swagger-ui/VERSION records with their sha256, as
// scripts/update-apidocs.sh fetched them with npm pack; the tests check
// the files against it. Swagger UI is under the Apache License 2.0
// (swagger-ui/LICENSE and NOTICE); the licences of what its bundle
// includes are in swagger-ui/swagger-ui-bundle.js.LICENSE.txt. The
// handler serves all three under /docs/ too.
package apidocs
