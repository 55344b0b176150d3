// Renders the OpenAPI document served beside this page, openapi.json (the
// page is served at …/docs, the document at …/openapi.json), with Swagger
// UI. It is a file of its own, not an inline script, so that the page's
// Content-Security-Policy can say script-src 'self'.
"use strict";
window.ui = SwaggerUIBundle({
  url: new URL("openapi.json", document.baseURI).href,
  dom_id: "#swagger-ui",
  // The validator badge would send the document to validator.swagger.io.
  validatorUrl: null,
  deepLinking: true,
  defaultModelsExpandDepth: 1,
});
