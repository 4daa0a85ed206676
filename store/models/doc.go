// Package models knows the context windows of the models pi 0.58.3 runs:
// its built-in models (a generated table, builtin.go) and the custom models
// and overrides of a models file in pi's own models.json format, merged as
// pi merges them. The store needs a window to turn the tokens pi reports
// at the end of a run into a reading of how full the context is.
//
// The package is named after what pi calls the same thing (its models.json
// and ModelRegistry), so that an operator who knows pi recognises it.
//
// Caveat: pi can also change models at run time (an OAuth provider may
// rewrite its models' fields, an extension may register a provider); only
// what a models file and the built-in table say is known here.
package models

//go:generate go run ./internal/gen -modules=$PI_NODE_MODULES -o builtin.go
