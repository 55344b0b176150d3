// validate.cjs checks each OpenAPI document named by its arguments with
// @apidevtools/swagger-parser (the structure against the OpenAPI schema,
// and every $ref), and prints one JSON line per document, in order:
// {"valid": true} or {"valid": false, "message": "why"}.
const SwaggerParser = require("@apidevtools/swagger-parser");

(async () => {
  for (const path of process.argv.slice(2)) {
    try {
      await SwaggerParser.validate(path);
      console.log(JSON.stringify({ valid: true }));
    } catch (err) {
      console.log(JSON.stringify({ valid: false, message: err.message }));
    }
  }
})();
