package service

import _ "embed"

// openAPI is the OpenAPI 3 description of the API, served at
// /openapi.json; a test checks it against the registered handlers.
//
//go:embed openapi.json
var openAPI []byte
