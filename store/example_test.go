package store_test

import (
	"fmt"
	"os"

	"github.com/groupd/groupd/store"
	"github.com/groupd/groupd/wire"
)

// The daemon boots once with LoadOrInit, then saves the counter before it
// announces each new group number.
func Example() {
	dir, err := os.MkdirTemp("", "groupd-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)

	s, err := store.Open(dir)
	if err != nil {
		fmt.Println(err) // e.g. in use by another groupd
		return
	}
	defer s.Close()
	boot, err := s.LoadOrInit(store.InitOptions{ID: 3})
	if err != nil {
		fmt.Println(err) // e.g. a *store.CorruptError: the operator must act
		return
	}
	fmt.Println("fresh:", boot.Fresh, boot.State)

	// A new group number: above the counter and above every Seq seen.
	st := boot.State
	seen := uint64(16)
	st.Counter = max(st.Counter, seen) + 1
	g := wire.GroupNumber{Seq: st.Counter, ID: st.NodeID}
	st.LastGroup = g
	if err := s.Save(st); err != nil {
		fmt.Println(err) // g must not be used
		return
	}
	fmt.Println("new group", g)
	// Output:
	// fresh: true id=3 counter=0 incarnation=1 last=0.0
	// new group 17.3
}
