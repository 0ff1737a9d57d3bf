// Package docs checks that the documentation says what the code does, where a
// machine can tell: every input field in the README's input table and the
// package's readme, every example's input valid for its mode, every relative
// link and anchor in the Markdown resolving. Its tests run with the unit tests
// (go test ./...), so a field added to the input, a value removed from it or a
// document moved fails make test until the docs follow.
package docs
