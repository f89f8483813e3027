// Package gate checks, from outside, how the end-to-end suite (package e2e)
// is switched on: turned off (GROUPD_E2E=0, or not root) `go test ./...` must say that it
// did not run, in output that survives redirection, and must not cache
// that answer for a later run that runs it; required (GROUPD_E2E=1), a lab that cannot run
// (a bad setting, no root) must fail the run, not skip it. It has no code
// besides its test.
package gate
