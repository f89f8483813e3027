package store

import (
	"testing"

	"github.com/groupd/groupd/wire"
)

// BenchmarkSave measures Save as the daemon calls it before announcing a
// new group number: a full write, fsync, rename and directory fsync, on the
// file system of the default temporary directory.
func BenchmarkSave(b *testing.B) {
	s := openT(b, b.TempDir())
	boot, err := s.LoadOrInit(InitOptions{ID: 1})
	if err != nil {
		b.Fatal(err)
	}
	st := boot.State
	for b.Loop() {
		st.Counter++
		st.LastGroup = wire.GroupNumber{Seq: st.Counter, ID: st.NodeID}
		if err := s.Save(st); err != nil {
			b.Fatal(err)
		}
	}
}
