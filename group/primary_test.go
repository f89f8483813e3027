package group

import (
	"testing"

	"github.com/groupd/groupd/wire"
)

func TestQuorumPrimary(t *testing.T) {
	normal := func(ids ...wire.NodeID) Status { return Status{State: wire.StateNormal, Members: ids} }
	cases := []struct {
		name string
		q    Quorum
		st   Status
		want bool
	}{
		{"mode off: any Normal group", Quorum{}, normal(1), true},
		{"mode off: not while electing", Quorum{}, Status{State: wire.StateElection, Members: []wire.NodeID{1, 2, 3}}, false},
		{"3 of 5", Quorum{Expect: 5}, normal(3, 4, 5), true},
		{"2 of 5", Quorum{Expect: 5}, normal(1, 2), false},
		{"5 of 5", Quorum{Expect: 5}, normal(1, 2, 3, 4, 5), true},
		{"half without tie-breaker", Quorum{Expect: 4}, normal(1, 2), false},
		{"half holding the tie-breaker", Quorum{Expect: 4, TieBreaker: 2}, normal(1, 2), true},
		{"half without the tie-breaker", Quorum{Expect: 4, TieBreaker: 2}, normal(3, 4), false},
		{"more nodes than expected", Quorum{Expect: 2}, normal(1, 2, 3), true},
		{"reorganizing majority is not primary yet", Quorum{Expect: 3}, Status{State: wire.StateReorganization}, false},
	}
	for _, tc := range cases {
		if got := tc.q.Primary(tc.st); got != tc.want {
			t.Errorf("%s: Primary = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestQuorumValidate(t *testing.T) {
	for _, q := range []Quorum{{Expect: -1}, {TieBreaker: 3}} {
		if err := q.validate(); err == nil {
			t.Errorf("%+v accepted", q)
		}
	}
	if err := (Quorum{Expect: 4, TieBreaker: 3}).validate(); err != nil {
		t.Error(err)
	}
}
