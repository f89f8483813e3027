// Package api holds the record of groupd's public Go API: one file per
// public package (group.txt, memnet.txt, udp.txt, client.txt, schema.txt),
// one line per exported name, in the style of Go's own api/ directory. The
// test fails when a package's API and its file differ, so that a change to
// what users import is made on purpose: run
//
//	go test ./api -update
//
// and commit the files with the change, saying in CHANGES.md what changed.
// The packages not listed are not an API: they are free to change.
package api
